#include "skills/targets/evaluation_measurement.hpp"

#include <algorithm>

namespace autotune::skills {

namespace {

Outcome trial_status(const std::string& status) {
  if (status == "ok") return Outcome::ok;
  if (status == "invalid") return Outcome::invalid;
  if (status == "wrong_answer") return Outcome::wrong_answer;
  if (status == "timeout") return Outcome::timeout;
  return Outcome::failed;  // failed, implausible
}

Json verification_record(const Json& v) {
  Json out = {{"passed", v.value("passed", false)},
              {"max_rel_error", v["max_rel_error"].is_number() ? v["max_rel_error"] : Json("inf")},
              {"mse", v["mse"].is_number() ? v["mse"] : Json("inf")},
              {"cosine", v["cosine_similarity"]},
              {"tolerance", v["tolerance"]},
              {"checked_elements", v["checked_elements"]},
              {"shape", v["shape"]}};
  if (v.contains("error")) out["error"] = v["error"];
  return out;
}

Json metrics_of(const Json& r) {
  const double latency = r.value("latency_s", 0.0);
  const double bound = r.value("roofline_bound_s", 0.0);
  const Json summary = r.value("summary", Json::object());
  Json metrics = {{"latency_s", latency}, {"roofline_bound_s", bound}};
  const double flops = r.value("flops", 0.0);
  if (flops > 0 && latency > 0) metrics["throughput_flops_per_s"] = flops / latency;
  if (r.value("compulsory_bytes", 0.0) > 0) metrics["compulsory_bytes"] = r["compulsory_bytes"];
  if (summary.contains("mfu_estimated_percent")) metrics["mfu_percent"] = summary["mfu_estimated_percent"];
  if (summary.contains("neuroncore_cycle_count")) metrics["cycles"] = summary["neuroncore_cycle_count"];
  if (latency > 0 && bound > 0) metrics["roofline_fraction"] = bound / latency;
  return metrics;
}

// The profile summary with the three hottest source lines.
Json profile_of(const Json& r) {
  Json profile = r.value("summary", Json::object());
  if (r.contains("hot_lines") && r["hot_lines"].is_array() && !r["hot_lines"].empty()) {
    Json hot = Json::array();
    for (std::size_t i = 0; i < std::min<std::size_t>(3, r["hot_lines"].size()); ++i) {
      const Json& line = r["hot_lines"][i];
      hot.push_back({{"file", line["file"]}, {"line", line["line"]}, {"percent", line["percent_of_total"]}});
    }
    profile["hot_lines"] = hot;
  }
  return profile;
}

}  // namespace

Measurement measurement_from_evaluation(const Json& evaluation, double duration_ms) {
  const Json r = evaluation.is_object() ? evaluation : Json::object();
  const std::string status = r.value("status", "failed");
  Measurement m;
  m.status = trial_status(status);
  m.error = r.value("error", "");
  if (status == "invalid" && r.contains("rule") && r["rule"].is_string())
    m.error = r["rule"].get<std::string>() + ": " + m.error;
  if (status == "implausible") m.error = status + ": " + m.error;
  if (r.contains("verification") && r["verification"].value("ran", false))
    m.verification = verification_record(r["verification"]);
  if (r.value("valid", false)) {
    m.metrics = metrics_of(r);
    m.profile = profile_of(r);
  }
  m.duration_ms = duration_ms;
  return m;
}

Json simulated_target_facts(const sim::TargetSpec& target, sim::Dtype dtype) {
  return {{"partitions", target.partitions},
          {"sbuf_usable_bytes_per_partition", target.sbuf_bytes_per_partition},
          {"kernel_launch_s", target.launch_overhead_s},
          {"hbm_bytes_per_s", target.hbm_bytes_per_s},
          {"peak_flops", target.peak_flops(dtype)},
          {"engine_clock_hz", target.clock(sim::Engine::scalar)},
          {"dma_efficiency_half_bytes", target.dma_efficiency_half_bytes}};
}

}  // namespace autotune::skills
