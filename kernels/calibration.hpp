#pragma once
// The simulator's calibration target: the four structures of the NKI
// matrix-multiplication tutorial on trn1, bf16, [4096, 8192] @ [8192, 8192],
// simulated with each variant's default (the tutorial's) parameters, beside
// the latencies measured on hardware (NEURONCORE.md). Every ratio must lie
// within kCalibrationLow-kCalibrationHigh and the order must be kept:
// bench/calibration prints the table, tests/unit/kernels/calibration_test
// fails outside it (simulated time is deterministic).
#include <string>
#include <vector>

#include "sim/simulator.hpp"
#include "sim/target.hpp"

namespace autotune::kernels {

inline constexpr double kCalibrationLow = 0.75, kCalibrationHigh = 1.25;

struct CalibrationRow {
  std::string variant;   // the gemm family's variant
  std::string tutorial;  // the tutorial kernel it reproduces
  double measured_ms = 0;
  bool valid = false;
  std::string error;  // when not valid
  double simulated_ms = 0;
  sim::SimResult sim;
  double ratio() const { return simulated_ms / measured_ms; }
};

// The four steps in the tutorial's order (slowest first).
std::vector<CalibrationRow> run_calibration(const sim::TargetSpec& target);

}  // namespace autotune::kernels
