#pragma once
// What `autotune report` and `autotune serve` show of a run, as one JSON
// document the page's script draws (docs/report.md has its fields):
//  - the convergence: every trial as a point (its evaluation number, latency,
//    status, variant), the best so far, the baseline and the goal;
//  - parameter importance, a first-order variance decomposition of log
//    latency over the measured trials, and per-parameter slices;
//  - the baseline's and the best trial's engine timelines, re-simulated from
//    their stored configurations, with their profiles' key figures;
//  - the decision chain, each decision with the trials it proposed.
// Large runs stay usable: beyond `max_points` trials, points are a seeded
// uniform sample that keeps every improvement of the best (the document says
// so); beyond `max_bars` timeline bars, each row's bars closer than a pixel
// of a 2000-pixel-wide chart are merged.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "store/store.hpp"

namespace autotune::report {

using Json = nlohmann::json;

struct ReportOptions {
  std::size_t max_points = 5000;
  std::size_t max_bars = 20000;
  bool timelines = true;
  // Only trials with an id above this (the live dashboard's updates): the
  // document then holds the new points and the run's header only.
  std::optional<int64_t> after_trial;
};

// One run's document. UserError when the run does not exist.
Json run_report(store::Store& store, int64_t run_id, const ReportOptions& options = {});

// The engine timeline of one stored trial, re-simulated: rows (engines, then
// DMA queues), bars [row, start_us, end_us, on_critical_site], the makespan,
// the profile's key figures. {"unavailable": reason} when the run's kernel
// is not a built-in family on a simulated target.
Json trial_timeline(const store::Run& run, const store::Trial& trial, std::size_t max_bars);

// A Chrome/Perfetto trace of one stored trial, re-simulated (`autotune trace`).
Json trial_trace(const store::Run& run, const store::Trial& trial);

// The list of runs for the dashboard's index: id, name, kernel, target,
// status, evaluations, baseline and best latency.
Json runs_index(store::Store& store);

}  // namespace autotune::report
