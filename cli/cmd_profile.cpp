// autotune profile (--kernel K [--variant V] | --kernel-source FILE.cc [--timeout S]) [--target T] [--shape
// A=1,B=2] [--dtype D]
//                  [--param name=value]... [--trace out.json] [--json] [--no-verify] [--seed S]
//
// Simulates one kernel variant once through the evaluation pipeline
// (kernels/evaluate.hpp): the profile summary, the five hottest source lines,
// the roofline bound and the verification figures. Exit status: 0 when the
// candidate is ok; 1 when it is invalid, computes a wrong answer or is
// implausible (the report says which); 2 on misuse.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/kernel_flags.hpp"
#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/external/evaluation_report.hpp"
#include "kernels/external/kernel_source.hpp"
#include "search/expression.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

namespace autotune::cli {
namespace {

struct ProfileOptions {
  std::string kernel, variant, target = "trn1", shape, dtype, trace, kernel_source;
  std::optional<double> timeout_s;  // only with --kernel-source; 120 s when not given
  std::vector<std::string> params;
  bool json = false, no_verify = false;
  std::uint64_t seed = 0;
};

// The line saying that no --shape was given, so the kernel runs at its default shape.
std::string default_shape_note(const std::string& kernel, const std::vector<std::string>& shape_args,
                               const kernels::Shape& default_shape) {
  std::vector<std::string> items;
  for (const auto& arg : shape_args)
    if (const auto it = default_shape.find(arg); it != default_shape.end())
      items.push_back(arg + "=" + std::to_string(it->second));
  return "no --shape given: " + kernel + " runs at its default shape " + join(items, ",") +
         " (give --shape " + join(shape_args, "=...,") + "=... to change it)\n";
}

// Says on stderr that --trace wrote nothing for an invalid candidate, and why:
// the simulator refused its program, so there is no timeline to trace.
void say_no_trace(const std::string& trace, const std::string& rule, const std::string& error) {
  std::fprintf(stderr,
               "autotune: warning: no trace written to %s: the candidate is invalid (%s%s%s), so it has no "
               "timeline\n",
               trace.c_str(), rule.c_str(), rule.empty() || error.empty() ? "" : ": ", error.c_str());
}

// --kernel-source names a readable file: the library would take any other
// text for the source itself, compile it and leave it in the kernel cache.
void check_kernel_source_path(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  const std::string flag = "--kernel-source " + path;
  if (!std::filesystem::exists(status))
    throw UserError(flag + ": no such file; give a C++ kernel source file");
  if (std::filesystem::is_directory(status))
    throw UserError(flag + ": is a folder; give a C++ kernel source file in it");
  if (!std::filesystem::is_regular_file(status))
    throw UserError(flag + ": not a regular file; give a C++ kernel source file");
  if (!std::ifstream(path)) throw UserError(flag + ": cannot be read");
}

// The --param, --dtype and --target flags against what the compiled kernel
// declares, refused as the same flags of a built-in kernel are (one line,
// exit 2): its parameters and their domains, its dtypes, its constraints.
void check_source_configuration(const ProfileOptions& o, const kernels::external::KernelDescriptor& kernel,
                                const kernels::Shape& shape) {
  kernels::VariantSpec declared;
  declared.name = kernel.name;
  declared.params = kernel.params;
  declared.constraints = kernel.constraints;
  const kernels::ParamValues params = kernels::resolve_params(declared, parse_param_flags(o.params));
  kernels::FamilySpec signature;
  signature.name = kernel.name;
  for (const auto& name : kernel.dtypes)
    if (const auto dtype = sim::parse_dtype(name)) signature.dtypes.push_back(*dtype);
  if (signature.dtypes.empty()) return;  // the worker says what is wrong with the kernel's own declaration
  const sim::Dtype dtype = resolve_dtype(signature, o.dtype);
  check_constraints(declared, params, sim::load_target(o.target),
                    shape.empty() ? kernel.default_shape : shape, dtype);
}

// --kernel-source: compiled into a shared object, traced, simulated and
// verified in an isolated worker process (kernels/external/kernel_source.hpp).
int run_source_profile(const ProfileOptions& o) {
  if (!o.kernel.empty() || !o.variant.empty())
    throw UserError("--kernel-source replaces --kernel and --variant; give one or the other");
  kernels::external::WorkerOptions worker;
  worker.timeout_s = o.timeout_s.value_or(120);  // loading the kernel runs its code too
  const auto kernel = kernels::external::compile_and_describe(o.kernel_source, {}, worker);
  if (!kernel.ok) {
    if (!kernel.compiled && !kernel.compiler_output.empty())
      std::fputs(kernel.compiler_output.c_str(), stderr);
    throw UserError(o.kernel_source + ": " + kernel.error);
  }
  kernels::external::WorkerRequest request;
  request.so_path = kernel.so_path;
  for (const auto& [name, text] : parse_param_flags(o.params)) {
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size())
      throw UserError("value '" + text + "' of parameter '" + name + "' is not an integer");
    request.params[name] = value;
  }
  if (!o.shape.empty()) {
    // Read against the kernel's declared arguments, as for a family: every one, each once.
    kernels::FamilySpec declared;
    declared.name = kernel.descriptor.name;
    declared.shape_args = kernel.descriptor.shape_args;
    declared.default_shape = kernel.descriptor.default_shape;
    request.shape = kernels::parse_shape(declared, o.shape);
    // The kernel's shape check (its family's, or its own) runs in a worker:
    // a shape it refuses is misuse, as for a built-in --kernel.
    const auto described = kernels::external::describe_in_worker(kernel.so_path, worker, request.shape);
    if (described.ok && !described.shape_error.empty())
      throw UserError("shape " + kernels::shape_text(request.shape, declared) + " of kernel '" +
                      declared.name + "' rejected: " + described.shape_error);
  }
  check_source_configuration(o, kernel.descriptor, request.shape);
  request.dtype = o.dtype;
  request.target = o.target;
  request.seed = o.seed;
  request.verify = !o.no_verify;
  request.report_text = !o.json;
  if (!o.trace.empty()) request.trace_path = std::filesystem::absolute(o.trace);
  const std::string defaulted = o.shape.empty()
                                    ? default_shape_note(kernel.descriptor.name, kernel.descriptor.shape_args,
                                                         kernel.descriptor.default_shape)
                                    : "";
  nlohmann::json result;
  const auto outcome = kernels::external::evaluate_in_worker(request, worker);
  if (!outcome.result.contains("kernel")) {  // no evaluation: a crash, a timeout, or a rejected request
    if (o.json) {
      std::cout << nlohmann::json({{"kernel_source", o.kernel_source},
                                   {"status", to_string(outcome.status)},
                                   {"error", outcome.error}})
                       .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    } else {
      std::printf("kernel source %s: %s: %s\n", o.kernel_source.c_str(),
                  std::string(to_string(outcome.status)).c_str(), outcome.error.c_str());
    }
    return 1;
  }
  result = outcome.result;
  result["kernel_source"] = o.kernel_source;
  result["shared_object"] = kernel.so_path.string();
  result["compiled"] = kernel.cached ? "cached" : "compiled";
  result["shape_source"] = o.shape.empty() ? "default" : "given";
  if (o.json) {
    std::cout << result.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::printf("kernel source %s (%s %s)\n%s\n", o.kernel_source.c_str(),
                kernel.cached ? "cached build" : "compiled to", kernel.so_path.c_str(), defaulted.c_str());
    std::fputs(result.value("report_text", "").c_str(), stdout);
    if (!o.trace.empty() && result.contains("trace"))
      std::printf("trace           %s (open in ui.perfetto.dev)\n", o.trace.c_str());
  }
  if (!o.trace.empty() && !result.value("valid", false))
    say_no_trace(o.trace, result.value("rule", ""), result.value("error", ""));
  return outcome.ok() ? 0 : 1;
}

int run_profile(const ProfileOptions& o) {
  if (!o.trace.empty()) {
    // Checked before the simulation, which a path that cannot be written would waste.
    const std::filesystem::path trace = std::filesystem::absolute(o.trace);
    if (std::filesystem::is_directory(trace))
      throw UserError("--trace " + o.trace + ": is a directory; give a file name, e.g. " +
                      (trace / "trace.json").string());
    if (!std::filesystem::is_directory(trace.parent_path()))
      throw UserError("--trace " + o.trace + ": the folder " + trace.parent_path().string() +
                      " does not exist");
  }
  if (o.timeout_s) {
    if (o.kernel_source.empty())
      throw UserError("--timeout is for --kernel-source (a built-in kernel runs in this process)");
    if (!(*o.timeout_s > 0 && *o.timeout_s <= kMaxSeconds))
      throw UserError("--timeout " + number_text(*o.timeout_s) + ": expected " + seconds_range_text());
  }
  if (!o.kernel_source.empty()) {
    check_kernel_source_path(o.kernel_source);
    return run_source_profile(o);
  }
  if (o.kernel.empty())
    throw UserError("give --kernel K (see `autotune kernels`) or --kernel-source FILE.cc");
  const auto& family = kernels::family_registry().get(o.kernel);
  const std::string variant_name = o.variant.empty() ? family.baseline_variant : o.variant;
  const kernels::VariantSpec& variant = family.variant(variant_name);
  const sim::TargetSpec target = sim::load_target(o.target);
  const kernels::Shape shape = kernels::parse_shape(family, o.shape);
  const sim::Dtype dtype = resolve_dtype(family, o.dtype);
  const kernels::ParamValues params = kernels::resolve_params(variant, parse_param_flags(o.params));
  check_constraints(variant, params, target, shape, dtype);

  kernels::EvaluateOptions options;
  options.verify = !o.no_verify;
  options.seed = o.seed;
  options.record_timeline = !o.trace.empty();
  const kernels::Evaluation e =
      kernels::evaluate(family, variant_name, shape, dtype, params, target, options);

  if (!o.trace.empty() && e.sim.valid) sim::write_perfetto_trace(e.sim, *e.program, o.trace);
  if (o.json) {
    nlohmann::json j = kernels::external::evaluation_json(e, family, target);
    j["shape_source"] = o.shape.empty() ? "default" : "given";
    if (!o.trace.empty() && e.sim.valid) j["trace"] = o.trace;
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    if (o.shape.empty())
      std::fputs(default_shape_note(family.name, family.shape_args, family.default_shape).c_str(), stdout);
    std::fputs(kernels::external::evaluation_text(e, family, target).c_str(), stdout);
    if (!o.trace.empty() && e.sim.valid)
      std::printf("trace           %s (open in ui.perfetto.dev)\n", o.trace.c_str());
  }
  if (!o.trace.empty() && !e.sim.valid) say_no_trace(o.trace, e.rule, e.error);
  return e.ok() ? 0 : 1;
}

const CommandRegistration registration{
    "profile", "Simulate one kernel variant once: profile summary, hottest source lines, trace",
    [](CLI::App& app) -> CommandAction {
      auto o = std::make_shared<ProfileOptions>();
      app.add_option("--kernel", o->kernel, "Kernel family (see `autotune kernels`)");
      app.add_option("--kernel-source", o->kernel_source,
                     "A C++ kernel source (AUTOTUNE_USER_KERNEL): compiled, then run in an isolated worker");
      app.add_option(
          "--timeout", o->timeout_s,
          "With --kernel-source: seconds before a worker (loading or measuring the kernel) is killed (120)");
      app.add_option("--variant", o->variant, "Variant of the family (default: the family's baseline)")
          ->check(check_not_empty);
      app.add_option("--target", o->target, "Target name or YAML path (default: trn1)");
      app.add_option("--shape", o->shape,
                     "Shape arguments, e.g. M=4096,N=8192,K=8192 (default: the family's)");
      app.add_option("--dtype", o->dtype, "Data type (default: the family's first)")->check(check_not_empty);
      app.add_option("--param", o->params, "Parameter NAME=VALUE; repeatable (others take their defaults)");
      app.add_option("--trace", o->trace, "Write a Chrome/Perfetto trace JSON here");
      app.add_flag("--json", o->json, "Print one JSON object on stdout");
      app.add_flag("--no-verify", o->no_verify, "Skip the output check on the verification shape");
      app.add_option("--seed", o->seed, "Seed of the verification inputs (default 0)")->check(check_uint64);
      return [o] { return run_profile(*o); };
    }};

}  // namespace
}  // namespace autotune::cli
