#pragma once
// Timing a model's forward from its operators (docs/model.md).
//
// Each operator runs its family's default variant with default parameters
// (marked so); where that default does not fit the shape on the target, the
// fastest fitting configuration of the default variant (model/fit.hpp); only
// when none fits, the family's baseline, with the reason. When the database
// holds a verified trial for the operator's exact family, shape, dtype and
// target (any run or sweep), the best of them is simulated beside that
// configuration and runs instead only if it is at least as fast: a tuned
// trial is a candidate, not a promise (a run with a narrow space or a small
// budget can end slower than the default). With `baseline`, every operator
// runs its family's baseline variant. Each distinct (family, shape, configuration) is
// evaluated once through the kernel pipeline (kernels/evaluate.hpp: the full
// shape simulated, the output verified on the variant's verification shape)
// and counted once per call.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/evaluate.hpp"
#include "model/model.hpp"
#include "sim/target.hpp"
#include "store/store.hpp"

namespace autotune::model {

// Where an operator's configuration came from.
struct ChosenConfig {
  std::string variant;
  kernels::ParamValues params;
  // "tuned" | "default" | "default, shrunk to fit" | "baseline", or
  // "baseline (...)" when the default could not run, with the reason in `note`.
  // A configuration that ran instead of a slower tuned trial says so in
  // parentheses: "default (faster than run 1 trial 4's tuned tiled)".
  std::string source;
  std::optional<std::int64_t> run, trial;  // the tuned trial, when it runs
  double recorded_latency_s = 0;           // as the trial measured it
  // Why a default was shrunk or left for the baseline, or a tuned trial
  // passed over (both times); empty otherwise.
  std::string note;
};

// The best verified (status ok, verification passed) trial of any run in
// `store` whose kernel is `family` at exactly `shape` and `dtype`, on the
// simulated target `target` (a name or a target file), by latency. A run's
// target and `target` are compared as the files they resolve to
// (sim::target_file), so a run whose goal wrote `target: mytrn.yaml` counts
// for `--target mytrn.yaml` (not for a built-in target of the name the file
// gives itself). Trials of a configuration the family no longer accepts are
// skipped.
std::optional<ChosenConfig> best_verified_config(store::Store& store, const std::string& family,
                                                 const kernels::Shape& shape, sim::Dtype dtype,
                                                 const std::string& target);

struct OperatorTiming {
  Operator op;
  ChosenConfig config;
  Outcome status = Outcome::failed;  // the evaluation's: ok | invalid | wrong_answer | implausible
  std::string error;
  double latency_s = 0;      // one call
  double roofline_s = 0;     // one call's bound
  double flops = 0;          // one call
  double mfu_percent = 0;    // one call's FLOPs / (latency * peak)
  double share_percent = 0;  // of the forward's time
  double verification_cosine = 0, verification_mse = 0;
  bool verified = false;
};

struct ForwardTiming {
  std::vector<OperatorTiming> operators;
  double latency_s = 0;   // sum over operators of latency * calls
  double roofline_s = 0;  // sum of their bounds
  double flops = 0;
  double mfu_percent = 0;  // flops / (latency * the target's peak)
  bool all_ok = true;
};

struct ForwardOptions {
  bool baseline = false;
  // Configurations by operator name, taken as given (a model run's choices).
  std::map<std::string, ChosenConfig> configs;
  int jobs = 1;
  std::uint64_t seed = 0;
};

// `store` may be null (nothing tuned: defaults everywhere).
ForwardTiming time_forward(const ModelSpec& model, const sim::TargetSpec& target, store::Store* store,
                           const ForwardOptions& options);

}  // namespace autotune::model
