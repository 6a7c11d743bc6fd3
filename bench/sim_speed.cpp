// Simulator speed: simulated instructions per second in timing-only mode on
// the largest GEMM (the calibration shape, fully blocked), and wall time per
// evaluation (trace + simulate, timing only) for each family's variants at
// their default shapes. Tracing time counts. Prints figures; not a test.
//
//   build/bench/bench_sim_speed [repeats]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "kernels/evaluate.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

using namespace autotune;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const sim::TargetSpec target = sim::load_target("trn1");
  const auto& gemm = kernels::family_registry().get("gemm");
  const auto& mnk = gemm.variant("blocked_mnk");
  const kernels::ParamValues params = kernels::resolve_params(mnk, kernels::ParamValues{});

  std::printf("simulator %s, target %s, best of %d\n\n", std::string(sim::kSimulatorVersion).c_str(),
              target.name.c_str(), repeats);
  double best_trace = 1e9, best_sim = 1e9;
  std::size_t instructions = 0;
  for (int r = 0; r < 3 * repeats; ++r) {
    auto t0 = Clock::now();
    const sim::Program program =
        kernels::trace_program(gemm, mnk, gemm.default_shape, sim::Dtype::bf16, params, target);
    const double trace_s = seconds_since(t0);
    t0 = Clock::now();
    const sim::SimResult result = sim::simulate(program, target, sim::SimOptions{false, false});
    const double sim_s = seconds_since(t0);
    instructions = program.size();
    best_trace = std::min(best_trace, trace_s);
    best_sim = std::min(best_sim, sim_s);
    if (!result.valid) std::printf("invalid: %s\n", result.error.c_str());
  }
  std::printf("gemm/blocked_mnk M=4096,N=8192,K=8192 bf16: %zu instructions\n", instructions);
  std::printf("  trace %.3f s + simulate %.3f s = %.3f s  (target < 0.5 s)\n", best_trace, best_sim,
              best_trace + best_sim);
  std::printf("  %.2f M instructions/s simulated, %.2f M/s including tracing  (target >= 2 M/s)\n\n",
              double(instructions) / best_sim * 1e-6, double(instructions) / (best_trace + best_sim) * 1e-6);

  std::printf("%-9s %-12s %-26s %12s %10s %10s %10s %12s\n", "family", "variant", "default shape",
              "instructions", "trace s", "sim s", "M instr/s", "simulated ms");
  for (const auto& [name, family] : kernels::family_registry().entries()) {
    for (const auto& variant : family.variants) {
      const kernels::ParamValues p = kernels::resolve_params(variant, kernels::ParamValues{});
      double trace_s = 1e9, sim_s = 1e9, latency = 0;
      std::size_t count = 0;
      std::string status = "ok";
      for (int r = 0; r < repeats; ++r) {
        auto t0 = Clock::now();
        const sim::Program program =
            kernels::trace_program(family, variant, family.default_shape, family.dtypes.front(), p, target);
        trace_s = std::min(trace_s, seconds_since(t0));
        t0 = Clock::now();
        const sim::SimResult result = sim::simulate(program, target, sim::SimOptions{false, false});
        sim_s = std::min(sim_s, seconds_since(t0));
        count = program.size();
        latency = result.total_time_s;
        if (!result.valid) status = result.rule;
      }
      // An invalid configuration has no latency: its column says so and the rule follows.
      char simulated[32] = "invalid";
      if (status == "ok") std::snprintf(simulated, sizeof simulated, "%.4f", latency * 1e3);
      std::printf("%-9s %-12s %-26s %12zu %10.4f %10.4f %10.2f %12s %s\n", name.c_str(), variant.name.c_str(),
                  kernels::shape_text(family.default_shape, family).c_str(), count, trace_s, sim_s,
                  sim_s > 0 ? double(count) / sim_s * 1e-6 : 0.0, simulated,
                  status == "ok" ? "" : status.c_str());
    }
  }
  return 0;
}
