#include "skills/measurement_queue.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace autotune::skills {

Json to_json(const Measurement& measurement) {
  return {{"status", to_string(measurement.status)}, {"metrics", measurement.metrics},
          {"repeats", measurement.repeats},          {"verification", measurement.verification},
          {"profile", measurement.profile},          {"error", measurement.error},
          {"duration_ms", measurement.duration_ms}};
}

Measurement measurement_from_json(const Json& result) {
  Measurement m;
  try {
    m.status = store::parse_trial_status(result.at("status").get<std::string>());
    m.metrics = result.value("metrics", Json::object());
    m.repeats = result.value("repeats", Json());
    m.verification = result.value("verification", Json());
    m.profile = result.value("profile", Json());
    m.error = result.value("error", std::string());
    m.duration_ms = result.value("duration_ms", 0.0);
    if (m.status == Outcome::ok &&
        (!m.metrics.is_object() || !m.metrics.contains("latency_s") || !m.metrics["latency_s"].is_number()))
      throw std::invalid_argument("an ok measurement without metrics.latency_s");
  } catch (const std::exception& e) {
    Measurement bad;
    bad.status = Outcome::failed;
    bad.error = std::string("the queued result is not a measurement: ") + e.what();
    return bad;
  }
  return m;
}

Json candidate_to_json(const Candidate& candidate) {
  return {{"variant", candidate.variant}, {"params", candidate.params}};
}

Candidate candidate_from_json(const Json& candidate) {
  return Candidate{candidate.at("variant").get<std::string>(), candidate.value("params", Json::object())};
}

std::string claimer_id(const std::string& tag) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + tag;
}

Measurement measure_with_deadline(MeasurementTarget& target, const Candidate& candidate,
                                  const TimeLimit& limit) {
  const double timeout_s = limit.seconds;
  struct PendingMeasurement {
    std::mutex mutex;
    std::condition_variable done;
    std::optional<Measurement> measurement;
  };
  auto outcome = std::make_shared<PendingMeasurement>();
  const auto start = std::chrono::steady_clock::now();
  // The measuring thread holds the outcome, not this frame: after a timeout
  // it finishes into memory nobody reads.
  std::thread([outcome, &target, candidate, timeout_s] {
    Measurement m;
    try {
      m = target.measure(candidate, MeasureOptions{timeout_s});
    } catch (const std::exception& e) {
      m.status = Outcome::failed;
      m.error = std::string("target raised: ") + e.what();
    }
    std::lock_guard lock(outcome->mutex);
    outcome->measurement = std::move(m);
    outcome->done.notify_all();
  }).detach();
  std::unique_lock lock(outcome->mutex);
  if (!outcome->done.wait_for(lock, std::chrono::duration<double>(timeout_s),
                              [&] { return outcome->measurement.has_value(); })) {
    Measurement m;
    m.status = Outcome::timeout;
    m.error = timeout_error(limit);
    m.duration_ms = timeout_s * 1000;
    return m;
  }
  Measurement m = std::move(*outcome->measurement);
  if (m.duration_ms == 0)
    m.duration_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return m;
}

}  // namespace autotune::skills
