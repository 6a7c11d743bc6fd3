#pragma once
// `autotune worker`: measures queued candidates of any running run or sweep
// in a shared store (docs/distributed.md), on as many hosts as there are
// workers. Each of its jobs claims one candidate at a time (exclusively; the
// store hands a claim whose worker stopped heartbeating to another after
// the lease), measures it with the run's own target, built from the goal the
// coordinator stored, and stores the result once. The coordinator turns
// results into trials; the agentic loop's decisions never leave it.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "store/store.hpp"

namespace autotune::orchestrator {

struct WorkerOptions {
  int jobs = 1;
  // Leave after this long with nothing to claim; absent: run until stopped.
  std::optional<double> idle_exit_s;
  double lease_s = 30;  // how long a claim of a worker that stopped heartbeating stays with it
  // One line per event worth telling (a run joined, a goal that cannot be measured here).
  std::function<void(const std::string&)> note;
};

struct WorkerSummary {
  std::string id;
  int64_t measured = 0;     // results stored
  int64_t discarded = 0;    // results of claims handed to another worker meanwhile
  int64_t runs = 0;         // runs measured for
  double mean_claim_s = 0;  // time a claim that got a candidate took, on average
  double wall_time_s = 0;
};

// Throws UserError naming the flag when an option is out of range; run_worker checks it too, and a
// command calls it before opening the store, so bad flags cost nothing.
void check_worker_options(const WorkerOptions& options);

WorkerSummary run_worker(store::Store& store, const WorkerOptions& options);

}  // namespace autotune::orchestrator
