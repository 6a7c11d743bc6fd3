// autotune profile --kernel K [--variant V] [--target T] [--shape A=1,B=2] [--dtype D]
//                  [--param name=value]... [--trace out.json] [--json] [--no-verify] [--seed S]
//
// Simulates one kernel variant once through the evaluation pipeline
// (kernels/evaluate.hpp): the profile summary, the five hottest source lines,
// the roofline bound and the verification figures. Exit status: 0 when the
// candidate is ok; 1 when it is invalid, computes a wrong answer or is
// implausible (the report says which); 2 on misuse.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "core/error.hpp"
#include "kernels/evaluate.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

namespace autotune::cli {
namespace {

struct ProfileOptions {
  std::string kernel, variant, target = "trn1", shape, dtype, trace;
  std::vector<std::string> params;
  bool json = false, no_verify = false;
  std::uint64_t seed = 0;
};

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
  std::string accepted;
  for (auto d : family.dtypes) accepted += (accepted.empty() ? "" : ", ") + std::string(sim::dtype_name(d));
  if (text.empty()) return family.dtypes.front();
  const auto dtype = sim::parse_dtype(text);
  if (!dtype || !family.accepts(*dtype))
    throw UserError("unknown dtype '" + text + "' for kernel '" + family.name + "' (accepted: " + accepted +
                    ")");
  return *dtype;
}

nlohmann::json verification_json(const kernels::Verification& v, const kernels::FamilySpec& family) {
  nlohmann::json j = {{"ran", v.ran}};
  if (!v.ran) return j;
  j["passed"] = v.passed;
  j["max_rel_error"] =
      std::isfinite(v.max_rel_error) ? nlohmann::json(v.max_rel_error) : nlohmann::json(nullptr);
  j["mse"] = v.mse;
  j["cosine_similarity"] = v.cosine_similarity;
  j["tolerance"] = v.tolerance;
  j["shape"] = v.shape;
  j["shape_text"] = kernels::shape_text(v.shape, family);
  j["checked_elements"] = v.checked_elements;
  if (!v.error.empty()) j["error"] = v.error;
  return j;
}

nlohmann::json evaluation_json(const kernels::Evaluation& e, const kernels::FamilySpec& family,
                               const sim::TargetSpec& target) {
  nlohmann::json j = {
      {"kernel", e.family},
      {"variant", e.variant},
      {"target", target.name},
      {"shape", e.shape},
      {"dtype", std::string(sim::dtype_name(e.dtype))},
      {"params", e.params},
      {"status", e.status},
      {"valid", e.sim.valid},
      {"latency_s", e.latency_s},
      {"roofline_bound_s", e.roofline_bound_s},
      {"simulator_version", std::string(sim::kSimulatorVersion)},
      {"summary", e.sim.summary.is_null() ? nlohmann::json::object() : e.sim.summary},
      {"verification", verification_json(e.verification, family)},
  };
  if (!e.error.empty()) j["error"] = e.error;
  if (!e.rule.empty()) j["rule"] = e.rule;
  if (e.sim.valid && e.latency_s > 0) j["roofline_fraction"] = e.roofline_bound_s / e.latency_s;
  nlohmann::json hot = nlohmann::json::array();
  for (std::size_t i = 0; i < e.sim.hot_lines.size() && i < 5; ++i) {
    const auto& h = e.sim.hot_lines[i];
    hot.push_back({{"file", h.file},
                   {"line", h.line},
                   {"function", h.function},
                   {"busy_s", h.busy_s},
                   {"instructions", h.instructions},
                   {"percent_of_total", h.percent_of_total}});
  }
  j["hot_lines"] = hot;
  return j;
}

std::string params_text(const kernels::ParamValues& params) {
  std::string out;
  for (const auto& [name, value] : params)
    out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  return out.empty() ? "(none)" : out;
}

void print_text(const kernels::Evaluation& e, const kernels::FamilySpec& family,
                const sim::TargetSpec& target) {
  std::printf("kernel %s / %s on %s, shape %s, %s\nparams %s\n\n", e.family.c_str(), e.variant.c_str(),
              target.name.c_str(), kernels::shape_text(e.shape, family).c_str(),
              std::string(sim::dtype_name(e.dtype)).c_str(), params_text(e.params).c_str());
  if (!e.sim.valid) {
    std::printf("INVALID (%s): %s\n", e.rule.c_str(), e.error.c_str());
    return;
  }
  std::fputs(sim::format_profile_text(e.sim, 5).c_str(), stdout);
  std::printf("\nroofline bound  %.4f ms (simulated time is %.1fx the bound)\n", e.roofline_bound_s * 1e3,
              e.roofline_bound_s > 0 ? e.latency_s / e.roofline_bound_s : 0.0);
  const auto& v = e.verification;
  if (v.ran) {
    std::printf("verification    %s at %s: max rel error %.3g (tolerance %.3g), MSE %.3g, cosine %.6f\n",
                v.passed ? "passed" : "FAILED", kernels::shape_text(v.shape, family).c_str(), v.max_rel_error,
                v.tolerance, v.mse, v.cosine_similarity);
  } else {
    std::printf("verification    not run\n");
  }
  if (!e.ok())
    std::printf("\n%s: %s\n", e.status == "wrong_answer" ? "WRONG ANSWER" : "IMPLAUSIBLE", e.error.c_str());
}

int run_profile(const ProfileOptions& o) {
  const auto& family = kernels::family_registry().get(o.kernel);
  const std::string variant_name = o.variant.empty() ? family.baseline_variant : o.variant;
  const kernels::VariantSpec& variant = family.variant(variant_name);
  const sim::TargetSpec target = sim::load_target(o.target);
  const kernels::Shape shape = kernels::parse_shape(family, o.shape);
  const sim::Dtype dtype = resolve_dtype(family, o.dtype);
  const kernels::ParamValues params = kernels::resolve_params(variant, parse_param_flags(o.params));

  kernels::EvaluateOptions options;
  options.verify = !o.no_verify;
  options.seed = o.seed;
  options.record_timeline = !o.trace.empty();
  const kernels::Evaluation e =
      kernels::evaluate(family, variant_name, shape, dtype, params, target, options);

  if (!o.trace.empty() && e.sim.valid) sim::write_perfetto_trace(e.sim, *e.program, o.trace);
  if (o.json) {
    nlohmann::json j = evaluation_json(e, family, target);
    if (!o.trace.empty() && e.sim.valid) j["trace"] = o.trace;
    std::cout << j.dump(2) << "\n";
  } else {
    print_text(e, family, target);
    if (!o.trace.empty() && e.sim.valid)
      std::printf("trace           %s (open in ui.perfetto.dev)\n", o.trace.c_str());
  }
  return e.ok() ? 0 : 1;
}

const CommandRegistration registration{
    "profile", "Simulate one kernel variant once: profile summary, hottest source lines, trace",
    [](CLI::App& app) -> CommandAction {
      auto o = std::make_shared<ProfileOptions>();
      app.add_option("--kernel", o->kernel, "Kernel family (see `autotune kernels`)")->required();
      app.add_option("--variant", o->variant, "Variant of the family (default: the family's baseline)");
      app.add_option("--target", o->target, "Target name or YAML path (default: trn1)");
      app.add_option("--shape", o->shape,
                     "Shape arguments, e.g. M=4096,N=8192,K=8192 (default: the family's)");
      app.add_option("--dtype", o->dtype, "Data type (default: the family's first)");
      app.add_option("--param", o->params, "Parameter NAME=VALUE; repeatable (others take their defaults)");
      app.add_option("--trace", o->trace, "Write a Chrome/Perfetto trace JSON here");
      app.add_flag("--json", o->json, "Print one JSON object on stdout");
      app.add_flag("--no-verify", o->no_verify, "Skip the output check on the verification shape");
      app.add_option("--seed", o->seed, "Seed of the verification inputs (default 0)");
      return [o] { return run_profile(*o); };
    }};

}  // namespace
}  // namespace autotune::cli
