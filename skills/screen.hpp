#pragma once
// SimulatedScreen: ranks candidates for a device target by their simulated
// latency, and learns from the device's measurements how far to trust it
// (a goal's `screen:`; docs/loop.md, "Screened tuning").
//
// predict(): each candidate is traced and simulated (timing only: the
// device verifies what it runs) on the screen's target as corrected so far;
// its prediction is the simulated latency times exp(the log ratio of its
// variant). A candidate the simulator rejects (it does not fit, a parameter
// it lacks) is predicted invalid and ranks last.
//
// learn(): the device's latencies of measured candidates. Each is simulated
// on the current target, and the correction follows:
//   ratio  per variant, the mean of log(measured / simulated) over its
//          device trials; a variant without one takes the mean over all;
//   refit  first the target's fitted constants are refitted (the calibration
//          fit, kernels/calibration_fit.hpp) on the last kRefitWindow device
//          trials (ScreenConfig::refit_window), once there are three and whenever the trials grew by half
//          since the last fit, each fit starting from the last (so a refit
//          costs at most about 60 x kRefitWindow simulations, and the refits
//          grow with the logarithm of the trials); then the ratio over every
//          trial, on the refitted target;
//   none   the simulator as it is.
// The search strategy never sees a prediction: it learns from the device
// alone; the screen only chooses which of its proposals the device measures.
//
// margin(): how far the screen's ranking can be trusted, from what it
// predicted of the device trials before they taught it (out of sample): a
// proposal predicted worse than the best by more than the margin is not
// worth a device evaluation (choose_within()).
//
// Deterministic: the same calls in the same order give the same predictions,
// so a resumed run ranks as its first execution did. Not thread-safe: one
// caller at a time (predict() simulates in parallel inside).
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skills/candidate.hpp"

namespace autotune::skills {

// The device trials a refit fits by default: the most recent 16.
inline constexpr std::size_t kScreenRefitWindow = 16;

struct ScreenConfig {
  std::string target;  // a target name or file (sim::load_target)
  std::string family;  // the kernel family the candidates are variants of
  // The family variant every candidate runs (a command target's one
  // program); empty: the candidate's own variant.
  std::string variant;
  std::map<std::string, std::int64_t> shape;
  std::string dtype;
  std::string correction = "refit";  // refit | ratio | none
  // Device trials a refit fits, the most recent; 0: every one (a refit's
  // cost then grows with the run; bench_screened_tuning --refit-cost
  // measures the difference).
  std::size_t refit_window = kScreenRefitWindow;
  unsigned threads = 0;  // simulations in parallel; 0: the machine's cores
};

struct ScreenPrediction {
  bool valid = false;
  // False when the simulator cannot take the candidate at all (a parameter
  // that is not one of the family's integers): the screen has no opinion.
  bool simulable = true;
  std::string error;  // why the simulator rejected it, when not valid
  double simulated_s = 0;
  double log_ratio = 0;  // the correction applied: predicted = simulated * exp(log_ratio)
  double predicted_s = 0;
};

// One device measurement as the screen saw it: what it had predicted (before
// learning from it) and what the device measured.
struct ScreenFeedback {
  Candidate candidate;
  bool valid = false;  // the simulator could simulate it (else it does not teach the screen)
  std::string error;
  double simulated_s = 0;
  double predicted_s = 0;
  double measured_s = 0;
};

class SimulatedScreen {
 public:
  // UserError when the target, family, variant, shape or dtype is unknown.
  explicit SimulatedScreen(ScreenConfig config);
  ~SimulatedScreen();

  std::vector<ScreenPrediction> predict(const std::vector<Candidate>& candidates);
  // The indices of the `keep` best predictions (valid ones by predicted
  // latency, ties to the earlier proposal; invalid ones only to fill).
  static std::vector<std::size_t> choose(const std::vector<ScreenPrediction>& predictions, std::size_t keep);
  // The indices the device measures of one round, at most `keep`: valid
  // predictions no slower than `bound_s`, best first (ties to the earlier
  // proposal), then candidates the screen cannot simulate (it has no
  // opinion on them), in proposal order. Candidates predicted slower than
  // the bound, or to fail on the screen's machine, are never chosen: the
  // result may be empty.
  static std::vector<std::size_t> choose_within(const std::vector<ScreenPrediction>& predictions,
                                                std::size_t keep, double bound_s);

  // Learns from device measurements: (candidate, measured latency in seconds).
  std::vector<ScreenFeedback> learn(const std::vector<std::pair<Candidate, double>>& measured);

  // The correction as it stands: its kind, the per-variant log ratios and
  // their trial counts, the fitted constants (refit), how well the screen
  // now explains the device trials (rms of log(measured / predicted)).
  Json correction_json() const;
  // The log ratio a candidate of `variant` is corrected by.
  double log_ratio(const std::string& variant) const;
  // The one a kernel of no variant measured yet is corrected by: the mean over every device trial.
  double overall_log_ratio() const;
  // The log-scale margin beyond which a prediction worse than another is
  // trusted to be worse: twice the rms of log(measured / predicted) over the
  // last kMarginWindow device trials as predicted before they were learnt
  // (out of sample), at least kMinMargin; infinite before any device trial.
  double margin() const;
  static constexpr std::size_t kRefitWindow = kScreenRefitWindow;
  static constexpr std::size_t kMarginWindow = 8;
  static constexpr double kMinMargin = 0.05;
  // Writes the screen's target as corrected so far (its fitted constants as
  // refitted) to `out`, a target file a kernel-worker can load: what a
  // kernel source the screen cannot trace itself is simulated on.
  void write_current_target(const std::filesystem::path& out) const;
  // Simulations spent so far: rankings, device trials, fits.
  long simulations() const { return simulations_; }
  const ScreenConfig& config() const { return config_; }

 private:
  struct Impl;
  void update_ratios();
  ScreenConfig config_;
  std::unique_ptr<Impl> impl_;
  std::atomic<long> simulations_{0};
};

}  // namespace autotune::skills
