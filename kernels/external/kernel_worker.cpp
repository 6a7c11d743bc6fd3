#include "kernels/external/kernel_worker.hpp"

#include <dlfcn.h>

#include "core/error.hpp"
#include "core/text.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/external/evaluation_report.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

namespace autotune::kernels::external {
namespace {

std::string dtype_list(const std::vector<Dtype>& dtypes) {
  return join(dtypes, ", ", [](Dtype d) { return std::string(sim::dtype_name(d)); });
}

KernelDescriptor describe(const UserKernel& user, const FamilySpec& family, const VariantSpec& variant) {
  KernelDescriptor d;
  d.name = user.name;
  d.description = user.description;
  d.family = user.family;
  d.params = user.params;
  d.constraints = user.constraints;
  d.own_reference = static_cast<bool>(user.reference);
  d.shape_args = family.shape_args;
  d.default_shape = family.default_shape;
  for (auto dtype : family.dtypes) d.dtypes.emplace_back(sim::dtype_name(dtype));
  d.verification = user.verification_shape                 ? "function"
                   : !user.verification_as_variant.empty() ? "variant " + user.verification_as_variant
                                                           : "full shape";
  (void)variant;
  return d;
}

// A request's shape: every argument of the kernel, or none for its default shape.
Shape request_shape(const FamilySpec& family, const nlohmann::json& arguments) {
  const std::string& kernel = family.variants.front().name;
  if (arguments.empty()) return family.default_shape;
  Shape shape;
  for (const auto& [arg, value] : arguments.items()) {
    if (std::find(family.shape_args.begin(), family.shape_args.end(), arg) == family.shape_args.end())
      throw UserError("unknown shape argument '" + arg + "' of kernel '" + kernel +
                      "' (accepted: " + join(family.shape_args, ", ") + ")");
    if (!value.is_number_integer())
      throw UserError("shape argument '" + arg + "' of kernel '" + kernel + "' is not an integer");
    shape[arg] = value.get<std::int64_t>();
  }
  if (const std::string reason =
          incomplete_shape_reason(kernel, family.shape_args, family.default_shape, shape);
      !reason.empty())
    throw UserError("shape " + shape_text(shape, family) + " is " + reason);
  return shape;
}

}  // namespace

LoadedKernel load_user_kernel(const std::filesystem::path& so_path) {
  void* handle = ::dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = ::dlerror();
    throw UserError("cannot load kernel " + so_path.string() + ": " + (reason ? reason : "dlopen failed"));
  }
  auto entry = reinterpret_cast<UserKernelEntry>(::dlsym(handle, kUserKernelEntrySymbol));
  if (entry == nullptr)
    throw UserError("kernel " + so_path.string() + " exports no " + kUserKernelEntrySymbol +
                    " (declare the kernel with AUTOTUNE_USER_KERNEL, kernels/external/user_kernel.hpp)");
  const UserKernel* user = entry();
  if (user == nullptr) throw UserError("kernel " + so_path.string() + ": its descriptor is null");
  if (user->abi_version != kUserKernelAbiVersion || user->descriptor_size != sizeof(UserKernel))
    throw UserError("kernel " + so_path.string() + " was built for descriptor ABI " +
                    std::to_string(user->abi_version) + " (this autotune reads ABI " +
                    std::to_string(kUserKernelAbiVersion) + "); recompile it against these headers");
  const std::string who = "kernel '" + user->name + "'";
  if (!user->trace) throw UserError(who + " has no trace function (set kernel.trace)");

  LoadedKernel loaded;
  loaded.user = user;
  FamilySpec& family = loaded.family;
  const VariantSpec* rule_variant = nullptr;
  if (!user->family.empty()) {
    const auto& registry = family_registry();
    if (!registry.contains(user->family))
      throw UserError(who + " names unknown family '" + user->family +
                      "' (accepted: " + registry.joined_names() + ")");
    family = registry.get(user->family);
    if (user->reference) family.reference = user->reference;
    if (!user->verification_as_variant.empty())
      rule_variant = &registry.get(user->family).variant(user->verification_as_variant);
  } else {
    if (!user->reference)
      throw UserError(who +
                      " is unverifiable: it names no family and gives no reference (set kernel.family to a "
                      "built-in family, or kernel.reference and kernel.own)");
    if (!user->verification_as_variant.empty())
      throw UserError(who + " sets verification_as_variant without a family");
    family = user->own;
    family.name = user->name;
    family.reference = user->reference;
    if (family.shape_args.empty() || family.dtypes.empty() || family.outputs.empty())
      throw UserError(who +
                      " has its own reference but its description (kernel.own) lacks shape_args, dtypes or "
                      "outputs");
    for (const auto& arg : family.shape_args)
      if (family.default_shape.count(arg) == 0)
        throw UserError(who + ": kernel.own.default_shape has no value for '" + arg + "'");
    if (!family.flops) family.flops = [](const Shape&) { return 0.0; };
    if (!family.hbm_bytes) family.hbm_bytes = [](const Shape&, Dtype) { return 0.0; };
    family.shape_struct.clear();
  }
  for (const auto& p : user->params)
    if (std::find(p.values.begin(), p.values.end(), p.default_value) == p.values.end())
      throw UserError(who + ": the default " + std::to_string(p.default_value) + " of parameter '" + p.name +
                      "' is not in its domain");

  VariantSpec variant;
  variant.name = user->name;
  variant.description = user->description;
  variant.params = user->params;
  variant.constraints = user->constraints;
  variant.trace = user->trace;
  if (user->verification_shape) {
    variant.verification_shape = user->verification_shape;
  } else if (rule_variant != nullptr) {
    variant.verification_shape = rule_variant->verification_shape;
    variant.verification_limits = rule_variant->verification_limits;
  }
  family.variants = {variant};
  family.baseline_variant = variant.name;
  loaded.descriptor = describe(*user, family, variant);
  return loaded;
}

nlohmann::json serve_worker_request(const nlohmann::json& request) {
  const std::string op = request.value("op", "");
  try {
    if (!request.contains("so") || !request["so"].is_string())
      throw UserError("the request names no shared object (\"so\")");
    if (op == "describe") {
      const LoadedKernel loaded = load_user_kernel(request["so"].get<std::string>());
      nlohmann::json reply = {{"ok", true}, {"descriptor", loaded.descriptor.to_json()}};
      if (request.contains("shape") && request["shape"].is_object()) {
        const FamilySpec& family = loaded.family;
        std::string shape_error;
        try {
          const Shape shape = request_shape(family, request["shape"]);
          if (family.check_shape) shape_error = family.check_shape(shape);
        } catch (const UserError& e) {
          shape_error = e.what();
        }
        if (!shape_error.empty()) reply["shape_error"] = shape_error;
      }
      return reply;
    }
    if (op != "evaluate") throw UserError("unknown request '" + op + "' (accepted: describe, evaluate)");
    LoadedKernel loaded = load_user_kernel(request["so"].get<std::string>());
    FamilySpec& family = loaded.family;
    const VariantSpec& variant = family.variants.front();

    const Shape shape = request_shape(family, request.value("shape", nlohmann::json::object()));
    const std::string dtype_text = request.value("dtype", "");
    Dtype dtype = family.dtypes.front();
    if (!dtype_text.empty()) {
      const auto parsed = sim::parse_dtype(dtype_text);
      if (!parsed || !family.accepts(*parsed))
        throw UserError("kernel '" + variant.name + "' does not take dtype '" + dtype_text + "' (" +
                        (sim::unmodelled_dtype_reason(dtype_text).empty()
                             ? ""
                             : sim::unmodelled_dtype_reason(dtype_text) + "; ") +
                        "accepted: " + dtype_list(family.dtypes) + ")");
      dtype = *parsed;
    }
    if (request.contains("tolerance") && request["tolerance"].is_number())
      family.tolerance[dtype] = request["tolerance"].get<double>();
    const sim::TargetSpec target = sim::load_target(request.value("target", "trn1"));
    ParamValues given;
    const nlohmann::json params_json = request.value("params", nlohmann::json::object());
    for (const auto& [name, value] : params_json.items()) {
      if (!value.is_number_integer()) throw UserError("parameter '" + name + "' is not an integer");
      given[name] = value.get<std::int64_t>();
    }
    const ParamValues params = resolve_params(variant, given);

    EvaluateOptions options;
    options.verify = request.value("verify", true);
    options.seed = request.value("seed", std::uint64_t{0});
    const std::string trace_path = request.value("trace", "");
    options.record_timeline = !trace_path.empty();
    const Evaluation evaluation = evaluate(family, variant.name, shape, dtype, params, target, options);
    nlohmann::json reply = evaluation_json(evaluation, family, target);
    if (family.flops) reply["flops"] = family.flops(shape);
    if (family.hbm_bytes) reply["compulsory_bytes"] = family.hbm_bytes(shape, dtype);
    if (!trace_path.empty() && evaluation.sim.valid) {
      sim::write_perfetto_trace(evaluation.sim, *evaluation.program, trace_path);
      reply["trace"] = trace_path;
    }
    if (request.value("text", false)) reply["report_text"] = evaluation_text(evaluation, family, target);
    return reply;
  } catch (const std::exception& e) {
    if (op == "describe") return {{"ok", false}, {"error", e.what()}};
    return {{"status", "failed"}, {"error", e.what()}};
  }
}

}  // namespace autotune::kernels::external
