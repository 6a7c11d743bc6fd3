#include "report/stored_kernel.hpp"

#include <yaml-cpp/yaml.h>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/family.hpp"

namespace autotune::report {

StoredKernel resolve_stored_kernel(const store::Run& run, const store::Trial& trial) {
  const std::string where = "run " + std::to_string(run.id);
  // Bounded like every YAML reader: a recursive alias or a billion laughs is one line.
  const YAML::Node goal = load_yaml_text(run.goal_yaml, where + "'s stored goal");
  // A command target's trials are its program's parameters, whatever name its goal gives the kernel:
  // rebuilding one as a family variant would be a kernel nobody measured.
  if (const auto target = goal["target"];
      target && target.IsMap() && target["kind"] && target["kind"].Scalar() == "command")
    throw UserError(where +
                    " measured a command target's program, not a kernel autotune can rebuild (the device "
                    "harness names each trial's exported kernel in its metric 'kernel', its folder in the "
                    "harness's cache: docs/trainium.md)");
  const auto& registry = kernels::family_registry();
  if (!registry.contains(run.kernel))
    throw UserError(where + " tuned '" + run.kernel +
                    "', which is not a built-in kernel family; only simulated kernels can be rebuilt");
  StoredKernel out;
  out.family = &registry.get(run.kernel);
  for (const auto& v : out.family->variants)
    if (v.name == trial.variant) out.variant = &v;
  if (out.variant == nullptr)
    throw UserError("trial " + std::to_string(trial.id) + " measured '" + trial.variant +
                    "', not a built-in variant of '" + run.kernel +
                    "' (a kernel source: use its source file)");

  out.shape = out.family->default_shape;
  std::string dtype_text;
  if (const auto kernel = goal["kernel"]; kernel && kernel.IsMap()) {
    if (kernel["shape"] && kernel["shape"].IsMap())
      for (const auto& entry : kernel["shape"]) try {
          out.shape[entry.first.Scalar()] = entry.second.as<std::int64_t>();
        } catch (const YAML::Exception&) {
          throw UserError(where + ": its stored goal's shape argument " + entry.first.Scalar() +
                          " is not an integer");
        }
    if (kernel["dtype"]) dtype_text = kernel["dtype"].Scalar();
  }
  const auto dtype =
      dtype_text.empty() ? std::optional(out.family->dtypes.front()) : sim::parse_dtype(dtype_text);
  if (!dtype) throw UserError(where + ": unknown dtype '" + dtype_text + "' in its goal");
  out.dtype = *dtype;

  // A stored value of another type than integer (a string where a number
  // belongs) or outside the variant's domain leaves the trial unbuildable,
  // said as such; a parameter not stored takes its default.
  kernels::ParamValues given;
  if (trial.params.is_object())
    for (const auto& [name, value] : trial.params.items()) {
      if (out.variant->find_param(name) == nullptr) continue;
      if (!value.is_number_integer())
        throw UserError("trial " + std::to_string(trial.id) + " stores " + name + "=" +
                        value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                        ", not an integer");
      given[name] = value.get<std::int64_t>();
    }
  out.params = kernels::resolve_params(*out.variant, given);

  out.target_name = "trn1";
  if (const auto target = goal["target"]; target && target.IsScalar())
    out.target_name = target.Scalar();
  else if (target && target.IsMap() && target["name"] && target["name"].IsScalar())
    out.target_name = target["name"].Scalar();
  return out;
}

}  // namespace autotune::report
