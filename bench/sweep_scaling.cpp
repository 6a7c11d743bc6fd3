// sweep --jobs 2 against --jobs 1 on a sweep of a few hundred evaluations:
// prints both wall times and the speed-up (the issue asks for >= 1.7x on a
// 2-core machine). Each sweep measures everything (no cache) into its own
// SQLite file, so commits are part of the time.
//
//   build/bench/bench_sweep_scaling [configurations=300]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "orchestrator/setup.hpp"
#include "orchestrator/sweep.hpp"
#include "store/store.hpp"

using namespace autotune;

int main(int argc, char** argv) {
  const std::uint64_t configurations = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 300;
  const auto dir = std::filesystem::temp_directory_path() / "autotune-bench-sweep-scaling";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto goal_file = dir / "goal.yaml";
  std::ofstream(goal_file) << "name: sweep-scaling\n"
                              "kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}\n"
                              "start: {variant: tiled}\n"
                              "variants: [tiled, hoisted]\n";
  double wall[3] = {0, 0, 0};
  for (int jobs : {1, 2}) {
    auto prepared = orchestrator::load_and_prepare(goal_file);
    auto store = store::open_store((dir / ("jobs" + std::to_string(jobs) + ".db")).string());
    orchestrator::SweepOptions options;
    options.jobs = jobs;
    options.use_cache = false;
    options.limit = configurations;
    const auto result = orchestrator::run_sweep(prepared.goal, prepared.setup.catalog, *prepared.setup.target,
                                                *store, prepared.setup.simulator_version, options);
    wall[jobs] = result.wall_time_s;
    std::printf(
        "sweep --jobs %d: %llu configurations in %.2f s (%.1f ms each; %.2f s inside the simulator)\n", jobs,
        static_cast<unsigned long long>(result.configurations), result.wall_time_s,
        1000 * result.wall_time_s / double(result.configurations), result.counters.target_seconds);
  }
  std::printf("speed-up --jobs 2 over --jobs 1: %.2fx (target >= 1.7x on 2 idle cores)\n", wall[1] / wall[2]);
  std::filesystem::remove_all(dir);
  return 0;
}
