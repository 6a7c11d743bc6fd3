// Calibration: the four structures of the NKI matrix-multiplication tutorial
// on trn1, bf16, [4096, 8192] @ [8192, 8192], simulated with each variant's
// default (the tutorial's) parameters, beside the latencies measured on
// hardware (NEURONCORE.md). Target: every ratio within 0.75-1.25 and the
// order kept (kernels/calibration.hpp). Prints figures; exits 1 outside them.
//
//   build/bench/bench_calibration [target name or path]
#include "kernels/calibration.hpp"

#include <cstdio>

#include "sim/simulator.hpp"
#include "sim/target.hpp"

using namespace autotune;

int main(int argc, char** argv) {
  const sim::TargetSpec target = sim::load_target(argc > 1 ? argv[1] : "trn1");
  std::printf("NKI matmul tutorial, %s, bf16, [4096,8192] @ [8192,8192] (%s, %s)\n\n", target.name.c_str(),
              std::string(sim::kSimulatorVersion).c_str(), target.source_file.c_str());
  std::printf("%-12s %-34s %12s %12s %7s %6s %6s %8s\n", "variant", "tutorial kernel", "simulated ms",
              "measured ms", "ratio", "MFU %", "DMA %", "DMA eff%");
  double previous = 1e300;
  bool in_band = true, ordered = true;
  for (const auto& row : kernels::run_calibration(target)) {
    if (!row.valid) {
      std::printf("%-12s invalid: %s\n", row.variant.c_str(), row.error.c_str());
      in_band = false;
      continue;
    }
    in_band = in_band && row.ratio() >= kernels::kCalibrationLow && row.ratio() <= kernels::kCalibrationHigh;
    ordered = ordered && row.simulated_ms < previous;
    previous = row.simulated_ms;
    const auto& summary = row.sim.summary;
    std::printf("%-12s %-34s %12.2f %12.2f %7.2f %6.1f %6.1f %8.1f\n", row.variant.c_str(),
                row.tutorial.c_str(), row.simulated_ms, row.measured_ms, row.ratio(),
                summary.value("mfu_estimated_percent", 0.0), summary.value("dma_active_time_percent", 0.0),
                summary.value("dma_average_efficiency_percent", 0.0));
  }
  std::printf("\nevery ratio within 0.75-1.25: %s; order kept: %s\n", in_band ? "yes" : "NO",
              ordered ? "yes" : "NO");
  return in_band && ordered ? 0 : 1;
}
