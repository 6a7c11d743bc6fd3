#include "kernels/external/evaluation_report.hpp"

#include <cmath>
#include <cstdio>

#include "core/text.hpp"
#include "sim/simulator.hpp"

namespace autotune::kernels::external {
namespace {

nlohmann::json verification_json(const Verification& v, const FamilySpec& family) {
  nlohmann::json j = {{"ran", v.ran}};
  if (!v.ran) return j;
  j["passed"] = v.passed;
  j["max_rel_error"] =
      std::isfinite(v.max_rel_error) ? nlohmann::json(v.max_rel_error) : nlohmann::json(nullptr);
  j["mse"] = std::isfinite(v.mse) ? nlohmann::json(v.mse) : nlohmann::json(nullptr);
  j["cosine_similarity"] =
      std::isfinite(v.cosine_similarity) ? nlohmann::json(v.cosine_similarity) : nlohmann::json(nullptr);
  j["tolerance"] = v.tolerance;
  j["shape"] = v.shape;
  j["shape_text"] = shape_text(v.shape, family);
  j["checked_elements"] = v.checked_elements;
  if (!v.error.empty()) j["error"] = v.error;
  return j;
}

std::string params_text(const ParamValues& params) {
  const std::string out =
      join(params, ", ", [](const auto& param) { return param.first + "=" + std::to_string(param.second); });
  return out.empty() ? "(none)" : out;
}

std::string format(const char* pattern, auto... args) {
  char buffer[1024];
  std::snprintf(buffer, sizeof buffer, pattern, args...);
  return buffer;
}

}  // namespace

nlohmann::json evaluation_json(const Evaluation& e, const FamilySpec& family, const sim::TargetSpec& target) {
  nlohmann::json j = {
      {"kernel", e.family},
      {"variant", e.variant},
      {"target", target.name},
      {"shape", e.shape},
      {"dtype", std::string(sim::dtype_name(e.dtype))},
      {"params", e.params},
      {"status", to_string(e.status)},
      {"valid", e.sim.valid},
      // An invalid candidate was never simulated: it has no latency, not one of 0.
      {"latency_s", e.sim.valid ? nlohmann::json(e.latency_s) : nlohmann::json(nullptr)},
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

std::string evaluation_text(const Evaluation& e, const FamilySpec& family, const sim::TargetSpec& target) {
  std::string out = format("kernel %s / %s on %s, shape %s, %s\nparams %s\n\n", e.family.c_str(),
                           e.variant.c_str(), target.name.c_str(), shape_text(e.shape, family).c_str(),
                           std::string(sim::dtype_name(e.dtype)).c_str(), params_text(e.params).c_str());
  if (!e.sim.valid) return out + "INVALID (" + e.rule + "): " + e.error + "\n";
  out += sim::format_profile_text(e.sim, 5);
  out += format("\nroofline bound  %.4f ms (simulated time is %.1fx the bound)\n", e.roofline_bound_s * 1e3,
                e.roofline_bound_s > 0 ? e.latency_s / e.roofline_bound_s : 0.0);
  const auto& v = e.verification;
  if (v.ran) {
    out += format("verification    %s at %s: max rel error %.3g (tolerance %.3g), MSE %.3g, cosine %.6f\n",
                  v.passed ? "passed" : "FAILED", shape_text(v.shape, family).c_str(), v.max_rel_error,
                  v.tolerance, v.mse, v.cosine_similarity);
  } else {
    out += "verification    not run\n";
  }
  if (!e.ok())
    out += "\n" + std::string(e.status == Outcome::wrong_answer ? "WRONG ANSWER" : "IMPLAUSIBLE") + ": " +
           e.error + "\n";
  return out;
}

}  // namespace autotune::kernels::external
