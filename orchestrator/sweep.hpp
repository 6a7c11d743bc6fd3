#pragma once
// Exhaustive evaluation of a goal's space(s): every valid configuration of
// every variant in the catalog, measured in parallel by the Benchmark Runner
// and stored as one run (its decisions say it was a sweep). What the
// agentic loop's results are compared against.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/goal.hpp"
#include "skills/benchmark_runner.hpp"
#include "skills/measurement_target.hpp"
#include "skills/variant_catalog.hpp"
#include "store/store.hpp"

namespace autotune::orchestrator {

// The most configurations a sweep without a limit lists and measures.
inline constexpr std::uint64_t kMaxSweepConfigurations = 1'000'000;

struct SweepOptions {
  int jobs = 1;
  // Measure through the store's shared queue, with `autotune worker`
  // processes (docs/distributed.md); jobs may then be 0.
  bool queue = false;
  bool use_cache = true;
  // At most this many configurations: a uniform sample seeded by the goal's seed, the start point always in.
  std::optional<std::uint64_t> limit;
  // Continue this sweep run: its committed trials are served from the store
  // (never measured again) and the rest measured. The goal must be the same.
  std::optional<int64_t> resume;
  // Called once the run exists (its id, for a message on interruption).
  std::function<void(int64_t)> started;
  // Called after each result: done, total, seconds elapsed, workers active
  // (with a queue; 0 otherwise).
  std::function<void(std::uint64_t, std::uint64_t, double, std::int64_t)> progress;
};

struct SweepResult {
  int64_t run_id = 0;
  std::uint64_t configurations = 0;
  std::vector<store::Trial> trials;  // every trial, in order
  std::vector<store::Trial> top;     // measured, best first
  double wall_time_s = 0;
  skills::RunnerCounters counters;
};

SweepResult run_sweep(const Goal& goal, const skills::VariantCatalog& catalog,
                      skills::MeasurementTarget& target, store::Store& store,
                      const std::string& simulator_version, const SweepOptions& options, int top_k = 10);

}  // namespace autotune::orchestrator
