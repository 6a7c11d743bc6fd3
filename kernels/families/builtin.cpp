#include "kernels/family.hpp"

namespace autotune::kernels {

void register_builtin_families(Registry<FamilySpec>& registry) {}

}  // namespace autotune::kernels
