#include "cli/kernel_flags.hpp"

#include "core/error.hpp"
#include "core/text.hpp"
#include "search/expression.hpp"

namespace autotune::cli {

std::map<std::string, std::string> parse_param_flags(const std::vector<std::string>& flags) {
  std::map<std::string, std::string> out;
  for (const auto& flag : flags) {
    const auto eq = flag.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError("--param '" + flag +
                      "' is malformed (expected NAME=VALUE, e.g. --param unroll_factor=2)");
    const std::string name = flag.substr(0, eq);
    if (out.count(name) != 0) throw UserError("--param " + name + " given twice");
    out[name] = flag.substr(eq + 1);
  }
  return out;
}

sim::Dtype resolve_dtype(const kernels::FamilySpec& family, const std::string& text) {
  const std::string accepted =
      join(family.dtypes, ", ", [](sim::Dtype d) { return std::string(sim::dtype_name(d)); });
  if (text.empty()) return family.dtypes.front();
  const auto dtype = sim::parse_dtype(text);
  if (!dtype || !family.accepts(*dtype)) {
    const std::string unmodelled = sim::unmodelled_dtype_reason(text);
    throw UserError((dtype || !unmodelled.empty() ? "dtype '" + text + "' is not taken by kernel '"
                                                  : "unknown dtype '" + text + "' for kernel '") +
                    family.name + "' (" + (unmodelled.empty() ? "" : unmodelled + "; ") +
                    "accepted: " + accepted + ")");
  }
  return *dtype;
}

void check_constraints(const kernels::VariantSpec& variant, const kernels::ParamValues& params,
                       const sim::TargetSpec& target, const kernels::Shape& shape, sim::Dtype dtype) {
  std::map<std::string, double> constants = target.constants();
  for (const auto& [arg, value] : shape) constants[arg] = double(value);
  constants["dtype_bytes"] = sim::dtype_bytes(dtype);
  std::vector<std::string> names;
  std::vector<double> values;
  for (const auto& [name, value] : params) {
    names.push_back(name);
    values.push_back(double(value));
  }
  const search::SymbolResolver resolve = [&](std::string_view name) -> std::optional<search::Symbol> {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return search::Symbol{i};
    if (const auto it = constants.find(std::string(name)); it != constants.end())
      return search::Symbol{std::nullopt, it->second};
    return std::nullopt;
  };
  for (const auto& text : variant.constraints) {
    if (search::Expression::parse(text, resolve).holds(values)) continue;
    std::string given;
    for (std::size_t i = 0; i < names.size(); ++i)
      given += (i ? ", " : "") + names[i] + "=" + std::to_string(std::int64_t(values[i]));
    throw UserError("parameters " + given + " violate constraint '" + text + "' of variant '" + variant.name +
                    "' (see `autotune kernels`)");
  }
}

}  // namespace autotune::cli
