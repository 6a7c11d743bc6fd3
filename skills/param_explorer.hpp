#pragma once
// ParamExplorer: the built-in explorer. Searches a region of a variant's space
// with a search strategy, in batches sized for the runner's workers.
//
// Plan: a region that fits in the budget is enumerated (grid: exhaustive is
// cheaper than any model and cannot miss); otherwise the goal's strategy runs
// for the budget. Earlier measurements of the variant are told to the
// strategy first (warm start), so nothing is proposed twice.
//
// A region settles (Exploration::settled) when it is exhausted or when
// region_patience() evaluations in a row brought no better value; a search
// cut short by its budget is not settled and may be continued later.
#include "skills/skill.hpp"

namespace autotune::skills {

// Evaluations in a row without improvement after which a region is settled:
// at least three batches and 12 evaluations, and a tenth of the region.
int region_patience(const search::SearchSpace& region, int batch_size);

class ParamExplorer : public ExplorerSkill {
 public:
  std::string name() const override { return kParamExplorer; }
  SkillResult<ExplorationPlan> plan(const ExplorationRequest& request) override;
  Exploration explore(const ExplorationRequest& request, const ExplorationPlan& plan,
                      const MeasureBatch& measure, const std::function<bool()>& should_stop) override;
};

}  // namespace autotune::skills
