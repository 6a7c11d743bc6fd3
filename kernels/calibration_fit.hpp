#pragma once
// Fitting a target's fitted constants (sim/target_constants.hpp) to hardware
// measurements: least squares on log(simulated / measured) over the rows,
// each constant within its plausible bounds.
//
// Method: Levenberg-Marquardt over log-scaled constants (u = log(value +
// shift), the shift a hundredth of the range for constants whose lower bound
// is 0), the Jacobian by finite differences (every row simulated once per
// constant nudged, all in parallel), steps projected onto the bounds, a
// constant held where its bound stops the step, and a weak prior (moving a
// constant by a factor e costs what a 1% error on one row does) that keeps a
// constant the rows barely depend on at its start value. It stops when an accepted step improves the cost by
// less than `min_improvement` (relative), the cost is negligible, no step lowers it, or after
// `max_iterations`. Deterministic: the simulator is.
#include <functional>
#include <string>
#include <vector>

#include "kernels/calibration.hpp"
#include "sim/target.hpp"

namespace autotune::kernels {

struct FitOptions {
  std::vector<std::string> constants;  // names or key paths to fit; empty: every fitted constant
  int max_iterations = 40;
  double min_improvement = 1e-4;  // relative decrease of the cost below which the fit stops
  unsigned threads = 0;           // 0: std::thread::hardware_concurrency
  std::function<void(const std::string&)> progress;  // one line per iteration, when set
};

struct FittedValue {
  std::string name, key, unit;
  double before = 0, after = 0;
  double low = 0, high = 0;
  bool at_bound = false;  // the fit ended on a bound: the data asks for more than is plausible
  bool sensitive = true;  // false when no row's time depends on it (left unchanged)
};

struct FitResult {
  sim::TargetSpec target;  // the start target with the fitted values
  std::vector<FittedValue> values;
  std::vector<double> before_ms, after_ms;       // per row, simulated
  double rms_log_before = 0, rms_log_after = 0;  // sqrt(mean(log(simulated / measured)^2))
  int iterations = 0;
  long simulations = 0;
  std::string stopped;  // why the fit stopped
};

// Fits the constants of `start` to `rows` (traced for `start`; each must
// simulate validly on it: UserError naming the row otherwise).
FitResult fit_constants(const std::vector<TracedMeasurement>& rows, const sim::TargetSpec& start,
                        const FitOptions& options = {});

}  // namespace autotune::kernels
