#pragma once
// KernelGenerator: the built-in generator. Turns findings into ideas: which
// variant of the catalog, and which region of its space, to search next.
//
//  - a "raise" finding (roles R) -> the current best's variant, the parameters
//    playing a role in R over their current and higher values, every other
//    parameter fixed at the best's value;
//  - a "structural" finding -> every variant not measured yet, each probed
//    once with the best's settings carried over (same name, else same role,
//    else the variant's default); then every variant whose measurements all
//    failed, one for on-chip memory, probed again below its overflow
//    (skills/capacity.hpp, fitting_ladder);
//  - when no finding proposes anything new: the handover, the goal's strategy
//    over the variants worth keeping as one flat space (skills/flat_space.hpp)
//    with the rest of the budget; then, as alternatives, the best's
//    neighbourhood along its roled parameters, the best variant's whole
//    space, the other variants' spaces, best measured first.
// Ideas already tried in the run are skipped (their ids are stable).
#include "skills/skill.hpp"

namespace autotune::skills {

class KernelGenerator : public GeneratorSkill {
 public:
  std::string name() const override { return kKernelGenerator; }
  SkillResult<Generation> generate(const GenerationRequest& request) override;
};

// The best's settings carried over to `variant` (see above).
Candidate carry_over(const Candidate& best, const VariantSpace& from, const VariantSpace& to);

}  // namespace autotune::skills
