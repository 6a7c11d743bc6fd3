// How much of a sweep's wall time goes outside the simulator (store commits,
// scheduling, result handling): measured with one worker, where the time
// inside the target is exactly the simulator's share. The issue asks for at
// most 5%. Also prints the same split for one agentic run.
//
//   build/bench/bench_orchestration_overhead [configurations=200]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "orchestrator/sweep.hpp"
#include "store/store.hpp"

using namespace autotune;

int main(int argc, char** argv) {
  const std::uint64_t configurations = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200;
  const auto dir = std::filesystem::temp_directory_path() / "autotune-bench-overhead";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto goal_file = dir / "goal.yaml";
  std::ofstream(goal_file) << "name: overhead\n"
                              "kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}\n"
                              "start: {variant: tiled}\n"
                              "variants: [tiled, hoisted]\n"
                              "budget: {evaluations: 40}\n"
                              "goal: {improvement: 0.99}\n"  // out of reach: the run spends its budget
                              "max_iterations: 8\n";
  {
    auto prepared = orchestrator::load_and_prepare(goal_file);
    auto store = store::open_store((dir / "sweep.db").string());
    orchestrator::SweepOptions options;
    options.jobs = 1;
    options.use_cache = false;
    options.limit = configurations;
    const auto result = orchestrator::run_sweep(prepared.goal, prepared.setup.catalog, *prepared.setup.target,
                                                *store, prepared.setup.simulator_version, options);
    const double outside = result.wall_time_s - result.counters.target_seconds;
    std::printf(
        "sweep, 1 worker, %llu configurations: wall %.3f s, simulator %.3f s, outside %.3f s = %.2f%% "
        "(commits %.3f s in %lld transactions); target <= 5%%\n",
        static_cast<unsigned long long>(result.configurations), result.wall_time_s,
        result.counters.target_seconds, outside, 100 * outside / result.wall_time_s,
        result.counters.commit_seconds, static_cast<long long>(result.counters.commits));
  }
  {
    auto prepared = orchestrator::load_and_prepare(goal_file);
    auto store = store::open_store((dir / "run.db").string());
    orchestrator::RunOptions options;
    options.jobs = 1;
    options.use_cache = false;
    orchestrator::RunContext context{prepared.goal, prepared.setup.catalog,           *prepared.setup.target,
                                     *store,        prepared.setup.simulator_version, options};
    const auto summary = orchestrator::Orchestrator(context).run();
    const double outside = summary.wall_time_s - summary.target_seconds;
    std::printf(
        "agentic run, 1 worker, %d evaluations: wall %.3f s, simulator %.3f s, outside %.3f s = %.2f%%\n",
        summary.evaluations, summary.wall_time_s, summary.target_seconds, outside,
        100 * outside / summary.wall_time_s);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
