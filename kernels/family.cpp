#include "kernels/family.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace autotune::kernels {

namespace {
constexpr ParamRole kAllRoles[] = {ParamRole::tile, ParamRole::unroll, ParamRole::block,
                                   ParamRole::pipeline_depth, ParamRole::placement};
}  // namespace

std::optional<ParamRole> parse_role(const std::string& name) {
  if (name.empty() || name == "none") return ParamRole::none;
  for (const ParamRole role : kAllRoles)
    if (name == role_name(role)) return role;
  return std::nullopt;
}

std::string accepted_roles() {
  return join(kAllRoles, ", ", [](ParamRole role) { return std::string(role_name(role)); }) + ", none";
}

const ParamSpec* VariantSpec::find_param(const std::string& param_name) const {
  for (const auto& p : params)
    if (p.name == param_name) return &p;
  return nullptr;
}

const VariantSpec& FamilySpec::variant(const std::string& variant_name) const {
  for (const auto& v : variants)
    if (v.name == variant_name) return v;
  throw UserError("unknown variant '" + variant_name + "' of kernel '" + name +
                  "' (accepted: " + join(variants, ", ", [](const VariantSpec& v) { return v.name; }) + ")");
}

bool FamilySpec::accepts(Dtype dtype) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

std::string instantiation_source(const FamilySpec& family, const VariantSpec& variant, const Shape& shape,
                                 Dtype dtype, const ParamValues& params) {
  std::string out = variant.template_name + "<autotune::sim::Dtype::" + std::string(sim::dtype_name(dtype)) +
                    ">(kernel, " + family.shape_struct + "{";
  out += join(family.shape_args, ", ",
              [&](const std::string& arg) { return "." + arg + " = " + std::to_string(shape.at(arg)); });
  out += "}, " + variant.params_struct + "{";
  out += join(variant.params, ", ",
              [&](const ParamSpec& p) { return "." + p.name + " = " + std::to_string(params.at(p.name)); });
  out += "});";
  return out;
}

Registry<FamilySpec>& family_registry() {
  static Registry<FamilySpec> registry("kernel");
  return registry;
}

}  // namespace autotune::kernels
