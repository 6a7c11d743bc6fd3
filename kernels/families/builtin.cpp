#include "kernels/family.hpp"

namespace autotune::kernels {

// Defined in kernels/families/<family>.cpp.
FamilySpec exp_family();
FamilySpec gemm_family();
FamilySpec rmsnorm_family();
FamilySpec attention_family();

void register_builtin_families(Registry<FamilySpec>& registry) {
  for (FamilySpec (*make)() : {exp_family, gemm_family, rmsnorm_family, attention_family}) {
    FamilySpec family = make();
    std::string name = family.name;
    registry.add(name, std::move(family));
  }
}

}  // namespace autotune::kernels
