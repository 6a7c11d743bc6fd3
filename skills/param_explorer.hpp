#pragma once
// ParamExplorer: the built-in explorer. Searches a region of a variant's space
// with a search strategy, in batches sized for the runner's workers.
//
// Plan: a region that fits in the budget is enumerated (grid: exhaustive is
// cheaper than any model and cannot miss); otherwise the goal's strategy runs
// for the budget. Earlier measurements of the variant are told to the
// strategy first (warm start), so nothing is proposed twice.
#include "skills/skill.hpp"

namespace autotune::skills {

class ParamExplorer : public ExplorerSkill {
 public:
  std::string name() const override { return kParamExplorer; }
  SkillResult<ExplorationPlan> plan(const ExplorationRequest& request) override;
  Exploration explore(const ExplorationRequest& request, const ExplorationPlan& plan, const MeasureBatch& measure,
                      const std::function<bool()>& should_stop) override;
};

}  // namespace autotune::skills
