#include "kernels/family.hpp"

namespace autotune::kernels {

const VariantSpec& FamilySpec::variant(const std::string& variant_name) const {
  std::string accepted;
  for (const auto& v : variants) {
    if (v.name == variant_name) return v;
    accepted += (accepted.empty() ? "" : ", ") + v.name;
  }
  throw UserError("unknown variant '" + variant_name + "' of kernel '" + name + "' (accepted: " + accepted + ")");
}

Registry<FamilySpec>& family_registry() {
  static Registry<FamilySpec>& registry = *[] {
    auto* built = new Registry<FamilySpec>("kernel");
    register_builtin_families(*built);
    return built;
  }();
  return registry;
}

}  // namespace autotune::kernels
