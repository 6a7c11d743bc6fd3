// Calibration: the four structures of the NKI matrix-multiplication tutorial
// on trn1, bf16, [4096, 8192] @ [8192, 8192], simulated with each variant's
// default (the tutorial's) parameters, beside the latencies measured on
// hardware (NEURONCORE.md). Target: every ratio within 0.75-1.25 and the
// order kept. Prints figures; not a test.
//
//   build/bench/bench_calibration [target name or path]
#include <cstdio>

#include "kernels/evaluate.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

using namespace autotune;

int main(int argc, char** argv) {
  const sim::TargetSpec target = sim::load_target(argc > 1 ? argv[1] : "trn1");
  const auto& gemm = kernels::family_registry().get("gemm");
  const kernels::Shape shape = {{"M", 4096}, {"N", 8192}, {"K", 8192}};
  struct Step {
    const char* variant;
    const char* tutorial;
    double measured_ms;
  };
  const Step steps[] = {{"tiled", "nki_matmul_tiled_", 51.80},
                        {"hoisted", "nki_matmul_hoist_load_", 42.96},
                        {"blocked_mn", "nki_matmul_block_free_dimension_", 22.07},
                        {"blocked_mnk", "nki_matmul_fully_optimized_", 6.97}};

  std::printf("NKI matmul tutorial, %s, bf16, [4096,8192] @ [8192,8192] (%s, %s)\n\n", target.name.c_str(),
              std::string(sim::kSimulatorVersion).c_str(), target.source_file.c_str());
  std::printf("%-12s %-34s %12s %12s %7s %6s %6s %8s\n", "variant", "tutorial kernel", "simulated ms",
              "measured ms", "ratio", "MFU %", "DMA %", "DMA eff%");
  double previous = 1e300;
  bool in_band = true, ordered = true;
  for (const Step& s : steps) {
    const auto& variant = gemm.variant(s.variant);
    kernels::EvaluateOptions options;
    options.verify = false;
    const kernels::Evaluation e =
        kernels::evaluate(gemm, s.variant, shape, sim::Dtype::bf16,
                          kernels::resolve_params(variant, kernels::ParamValues{}), target, options);
    if (!e.sim.valid) {
      std::printf("%-12s invalid: %s\n", s.variant, e.error.c_str());
      in_band = false;
      continue;
    }
    const double ms = e.latency_s * 1e3;
    const double ratio = ms / s.measured_ms;
    in_band = in_band && ratio >= 0.75 && ratio <= 1.25;
    ordered = ordered && ms < previous;
    previous = ms;
    std::printf("%-12s %-34s %12.2f %12.2f %7.2f %6.1f %6.1f %8.1f\n", s.variant, s.tutorial, ms,
                s.measured_ms, ratio, e.sim.summary.value("mfu_estimated_percent", 0.0),
                e.sim.summary.value("dma_active_time_percent", 0.0),
                e.sim.summary.value("dma_average_efficiency_percent", 0.0));
  }
  std::printf("\nevery ratio within 0.75-1.25: %s; order kept: %s\n", in_band ? "yes" : "NO",
              ordered ? "yes" : "NO");
  return 0;
}
