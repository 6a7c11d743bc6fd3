#include "kernels/family.hpp"

namespace autotune::kernels {

// Defined in kernels/families/<family>.cpp.
FamilySpec exp_family();
FamilySpec gemm_family();
FamilySpec rmsnorm_family();
FamilySpec attention_family();
FamilySpec add_family();
FamilySpec silu_mul_family();
FamilySpec rope_family();
FamilySpec transpose_family();

void register_builtin_families(Registry<FamilySpec>& registry) {
  for (FamilySpec (*make)() : {exp_family, gemm_family, rmsnorm_family, attention_family, add_family,
                               silu_mul_family, rope_family, transpose_family}) {
    FamilySpec family = make();
    std::string name = family.name;
    registry.add(name, std::move(family));
  }
}

}  // namespace autotune::kernels
