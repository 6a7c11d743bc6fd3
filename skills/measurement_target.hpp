#pragma once
// MeasurementTarget: where the Benchmark Runner measures a candidate.
//
// Implementations: `sim` (the built-in NeuronCore simulator, with
// verification against the host reference and the roofline check), `replay`
// (a recorded, brute-forced space: a Kernel Tuner cachefile), and `command`
// (an external program printing JSON metrics).
//
// Contract:
//  - measure() is called from several worker threads at once and must be
//    thread-safe. It never throws for a bad candidate: that is a Measurement
//    with a status (invalid, wrong_answer, failed, timeout) and a reason.
//  - A measurement with status ok has been verified (where the target can
//    verify) and carries metrics["latency_s"] in seconds.
//  - `deadline_s` is the time the runner allows; a target that can stop early
//    (a child process, a cycle limit) should, and report timeout. The runner
//    enforces it regardless.
//  - cache_identity() names everything besides (variant, params) that changes
//    a measurement: target, shape, dtype, simulator version, tolerances. Two
//    targets with the same identity give the same result for a candidate, so
//    the runner may serve one from the other's stored trials.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/noise.hpp"
#include "core/text.hpp"
#include "skills/candidate.hpp"

namespace autotune::skills {

struct MeasureOptions {
  double deadline_s = 60;
};

// The longest one measurement of a candidate may take, and the setting that
// chose it, named for messages ("the goal's timeout_s").
struct TimeLimit {
  double seconds = 120;
  std::string setting = "the goal's timeout_s";
};

class MeasurementTarget {
 public:
  virtual ~MeasurementTarget() = default;
  virtual std::string kind() const = 0;         // "sim", "replay", "command"
  virtual std::string description() const = 0;  // "trn1 (simulated NeuronCore-v2)"
  virtual std::string cache_identity() const = 0;
  virtual Measurement measure(const Candidate& candidate, const MeasureOptions& options) = 0;
  // Facts about the machine the Profile Analyzer may use (peak FLOP/s, HBM
  // bandwidth, SBUF capacity, launch floor, ...); {} when unknown.
  virtual Json facts() const { return Json::object(); }
  // Whether measurements carry a profile summary worth analysing.
  virtual bool has_profiles() const { return false; }
  // Why no candidate can be measured at all (e.g. the kernel source does not
  // compile), on one line; "" when candidates can be measured. Such a target
  // still measures: every candidate fails with the reason in full.
  virtual std::string unusable_reason() const { return ""; }

  // The time one measurement needs by the target's own settings (a command
  // target: its timeout per run times its runs), with those settings named;
  // nothing when it has none. See candidate_time_limit.
  virtual std::optional<TimeLimit> own_time_limit() const { return std::nullopt; }

  // Noisy targets (whose measurements carry intervals in
  // metrics["intervals"], core/noise.hpp): how many noise widths beyond the
  // incumbent a win must be to be measured again before it counts.
  virtual double remeasure_beyond() const { return kDefaultRemeasureBeyond; }
  // A candidate measured again: the measurement that stands for both, given
  // the first one's repeats and the second measurement (ok). The default
  // keeps the second; a target that repeats runs pools them.
  virtual Measurement combine(const Json& earlier_repeats, const Measurement& again) const {
    (void)earlier_repeats;
    return again;
  }
};

// The per-candidate limit on `target` of a goal whose timeout_s is
// `timeout_s`: that, unless the target's own settings allow its runs longer
// altogether (own_time_limit), since a shorter limit would kill candidates
// the user allowed to run.
inline TimeLimit candidate_time_limit(const MeasurementTarget& target, double timeout_s) {
  const auto own = target.own_time_limit();
  if (own && own->seconds > timeout_s) return *own;
  return TimeLimit{timeout_s, "the goal's timeout_s"};
}

// The error of a measurement stopped at `limit`: "exceeded the per-candidate
// timeout of 120 s (the goal's timeout_s)".
inline std::string timeout_error(const TimeLimit& limit) {
  return "exceeded the per-candidate timeout of " + number_text(limit.seconds) + " s (" + limit.setting + ")";
}

}  // namespace autotune::skills
