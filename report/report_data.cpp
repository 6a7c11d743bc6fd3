#include "report/report_data.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "core/noise.hpp"
#include "kernels/evaluate.hpp"
#include "report/stored_kernel.hpp"
#include "sim/simulator.hpp"
#include "store/report.hpp"

namespace autotune::report {
namespace {

// What the run was asked for, as the page's header shows it and as a latency line on the convergence
// chart where the baseline's metrics convert it: improvements follow orchestrator::improvement_of (MFU and
// throughput grow as latency shrinks at a fixed amount of work), absolute bounds their own unit.
struct GoalView {
  std::string text;
  std::optional<double> latency_s;
};

std::string number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// The goal stored with a run, read with the bounds of every YAML reader (a
// recursive alias or a billion laughs is one UserError line, not a crash or
// a hang): the database is written by other processes.
YAML::Node stored_goal(const store::Run& run) {
  return load_yaml_text(run.goal_yaml, "run " + std::to_string(run.id) + "'s stored goal");
}

GoalView goal_view(const YAML::Node& goal, const std::optional<store::Trial>& baseline) {
  GoalView view;
  try {
    const std::string objective = goal["objective"] ? goal["objective"].Scalar() : "latency";
    const YAML::Node target = goal["goal"];
    if (!target || !target.IsMap()) return view;
    auto metric = [&](const char* key) -> std::optional<double> {
      if (!baseline) return std::nullopt;
      const auto value = baseline->metric(key);
      return value && *value > 0 ? value : std::nullopt;
    };
    const auto base_latency = metric("latency_s");
    std::vector<std::string> parts;
    std::vector<double> lines;
    if (target["improvement"]) {
      const double improvement = target["improvement"].as<double>();
      const std::string percent = number("%.4g%%", 100 * improvement);
      if (objective == "latency") {
        parts.push_back(percent + " lower latency than the baseline");
        if (base_latency) lines.push_back(*base_latency * (1 - improvement));
      } else {
        parts.push_back(percent + (objective == "mfu" ? " more MFU" : " more throughput") +
                        " than the baseline");
        if (base_latency) lines.push_back(*base_latency / (1 + improvement));
      }
    }
    if (objective == "latency" && target["latency_s"]) {
      const double bound = target["latency_s"].as<double>();
      parts.push_back("latency <= " + number("%.4g", bound) + " s");
      lines.push_back(bound);
    }
    if (objective == "throughput" && target["throughput_flops_per_s"]) {
      const double bound = target["throughput_flops_per_s"].as<double>();
      parts.push_back("throughput >= " + number("%.4g", bound / 1e12) + " TFLOP/s");
      if (const auto base = metric("throughput_flops_per_s"); base && base_latency)
        lines.push_back(*base_latency * *base / bound);
    }
    if (objective == "mfu" && target["mfu_percent"]) {
      const double bound = target["mfu_percent"].as<double>();
      parts.push_back("MFU >= " + number("%.4g", bound) + "%");
      if (const auto base = metric("mfu_percent"); base && base_latency)
        lines.push_back(*base_latency * *base / bound);
    }
    for (std::size_t i = 0; i < parts.size(); ++i) view.text += (i ? " and " : "") + parts[i];
    // Both asked: the stricter bound is the line to reach.
    if (!lines.empty()) view.latency_s = *std::min_element(lines.begin(), lines.end());
  } catch (const YAML::Exception&) {
  }
  return view;
}

// How many noise widths a win had to clear before it was measured again
// (the command target's remeasure_beyond, core/noise.hpp), from the run's goal.
double remeasure_beyond_of(const YAML::Node& goal) {
  try {
    if (goal["target"] && goal["target"].IsMap() && goal["target"]["remeasure_beyond"])
      return goal["target"]["remeasure_beyond"].as<double>();
  } catch (const YAML::Exception&) {
  }
  return kDefaultRemeasureBeyond;
}

// A trial's median interval of latency, [low, high], when it has one wider than a point.
Json interval_of(const store::Trial& trial) {
  const auto e = estimate_from_metrics(trial.metrics, "latency_s");
  return e && e->width() > 0 ? Json{e->low, e->high} : Json();
}

std::string objective_of(const YAML::Node& goal) {
  try {
    if (goal["objective"]) return goal["objective"].Scalar();
  } catch (const YAML::Exception&) {
  }
  return "latency";
}

// Status as the page colours it: measured (ok, cached) is "ok".
std::string status_class(Outcome status) {
  return is_measured(status) ? "ok" : std::string(to_string(status));
}

// First-order variance decomposition of log latency: for each parameter (and
// the variant), the share of the variance of log latency over the measured
// trials that have it which the parameter's value alone explains, i.e.
// Var(E[y | x]) / Var(y). Interactions are not separated.
Json importance(const std::vector<store::Trial>& trials) {
  std::map<std::string, std::vector<std::pair<std::string, double>>> by_parameter;
  for (const auto& trial : trials) {
    const auto latency = trial.metric("latency_s");
    if (!is_measured(trial.status) || !latency || *latency <= 0) continue;
    const double y = std::log(*latency);
    by_parameter["variant"].emplace_back(trial.variant, y);
    if (trial.params.is_object())
      for (const auto& [name, value] : trial.params.items())
        if (name != "_") by_parameter[name].emplace_back(value.dump(), y);
  }
  Json out = Json::array();
  for (const auto& [name, samples] : by_parameter) {
    std::map<std::string, std::pair<double, int>> groups;
    double mean = 0;
    for (const auto& [level, y] : samples) {
      groups[level].first += y;
      groups[level].second += 1;
      mean += y;
    }
    if (groups.size() < 2 || samples.size() < 3) continue;
    mean /= double(samples.size());
    double total = 0, between = 0;
    for (const auto& [level, y] : samples) total += (y - mean) * (y - mean);
    for (const auto& [level, sum_count] : groups) {
      const double group_mean = sum_count.first / sum_count.second;
      between += sum_count.second * (group_mean - mean) * (group_mean - mean);
    }
    out.push_back({{"name", name},
                   {"fraction", total > 0 ? between / total : 0.0},
                   {"levels", groups.size()},
                   {"trials", samples.size()}});
  }
  std::sort(out.begin(), out.end(), [](const Json& a, const Json& b) {
    return a["fraction"].get<double>() > b["fraction"].get<double>();
  });
  return out;
}

Json figures_of(const Json& summary, double latency_s) {
  Json figures = {{"latency_s", latency_s}};
  for (const char* key :
       {"mfu_estimated_percent", "dma_average_efficiency_percent", "dma_compute_overlap_percent",
        "sbuf_peak_bytes_per_partition", "sbuf_usable_bytes_per_partition",
        "tensor_engine_active_time_percent", "dma_active_time_percent", "instruction_count"})
    if (summary.contains(key)) figures[key] = summary[key];
  return figures;
}

}  // namespace

Json trial_timeline(const store::Run& run, const store::Trial& trial, std::size_t max_bars) {
  StoredKernel kernel;
  try {
    kernel = resolve_stored_kernel(run, trial);
  } catch (const UserError& error) {
    return {{"trial", trial.id}, {"unavailable", error.what()}};
  }
  const sim::TargetSpec target = sim::load_target(kernel.target_name);
  kernels::EvaluateOptions options;
  options.verify = false;
  options.record_timeline = true;
  const kernels::Evaluation e = kernels::evaluate(*kernel.family, kernel.variant->name, kernel.shape,
                                                  kernel.dtype, kernel.params, target, options);
  if (!e.sim.valid)
    return {{"trial", trial.id}, {"unavailable", "the configuration does not fit: " + e.sim.error}};

  // Rows: the compute engines, then every DMA queue that carried a transfer.
  Json rows = Json::array();
  std::map<int, int> row_of_engine, row_of_queue;
  for (int engine = 0; engine < sim::kEngineCount; ++engine) {
    if (static_cast<sim::Engine>(engine) == sim::Engine::dma) continue;
    row_of_engine[engine] = static_cast<int>(rows.size());
    rows.push_back(std::string(sim::engine_name(static_cast<sim::Engine>(engine))));
  }
  std::set<int> queues;
  for (const auto& slice : e.sim.dma_slices) queues.insert(slice.queue);
  for (int queue : queues) {
    row_of_queue[queue] = static_cast<int>(rows.size());
    rows.push_back("DMA queue " + std::to_string(queue));
  }
  // Sites of the critical path's heaviest source lines: their instructions are marked.
  std::set<std::tuple<int, int, std::uint32_t>> critical_sites;
  for (const auto& line : e.sim.critical_path.lines)
    critical_sites.insert({int(line.site.engine), int(line.site.opcode), line.site.location});
  std::map<sim::InstructionId, bool> critical_instruction;

  struct Bar {
    int row;
    double start_s, end_s;
    bool critical;
  };
  std::vector<Bar> bars;
  for (const auto& entry : e.sim.timeline) {
    const bool critical = critical_sites.count({int(entry.engine), int(entry.opcode), entry.location}) > 0;
    if (entry.engine == sim::Engine::dma) {
      critical_instruction[entry.instruction] = critical;
      continue;
    }
    bars.push_back({row_of_engine.at(int(entry.engine)), entry.start_s, entry.end_s, critical});
  }
  for (const auto& slice : e.sim.dma_slices)
    bars.push_back(
        {row_of_queue.at(slice.queue), slice.start_s, slice.end_s, critical_instruction[slice.instruction]});

  const double makespan =
      e.sim.critical_path.length_s > 0 ? e.sim.critical_path.length_s : e.sim.total_time_s - 0.0;
  bool coalesced = false;
  if (bars.size() > max_bars) {
    // Merge, row by row, bars less than one pixel of 2000 apart.
    coalesced = true;
    const double pixel = makespan / 2000;
    std::stable_sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) {
      return a.row != b.row ? a.row < b.row : a.start_s < b.start_s;
    });
    std::vector<Bar> merged;
    for (const Bar& bar : bars) {
      if (!merged.empty() && merged.back().row == bar.row && bar.start_s - merged.back().end_s < pixel) {
        merged.back().end_s = std::max(merged.back().end_s, bar.end_s);
        merged.back().critical = merged.back().critical || bar.critical;
      } else {
        merged.push_back(bar);
      }
    }
    bars = std::move(merged);
  }
  Json out_bars = Json::array();
  for (const Bar& bar : bars)
    out_bars.push_back({bar.row, bar.start_s * 1e6, bar.end_s * 1e6, bar.critical ? 1 : 0});
  return {{"trial", trial.id},
          {"variant", trial.variant},
          {"params", trial.params},
          {"rows", rows},
          {"bars", out_bars},
          {"instructions", e.sim.timeline.size()},
          {"coalesced", coalesced},
          {"makespan_us", makespan * 1e6},
          {"critical_path", e.sim.summary.value("critical_path", Json::object())},
          {"figures", figures_of(e.sim.summary, e.sim.total_time_s)}};
}

Json trial_trace(const store::Run& run, const store::Trial& trial) {
  const StoredKernel kernel = resolve_stored_kernel(run, trial);
  const sim::TargetSpec target = sim::load_target(kernel.target_name);
  kernels::EvaluateOptions options;
  options.verify = false;
  options.record_timeline = true;
  const kernels::Evaluation e = kernels::evaluate(*kernel.family, kernel.variant->name, kernel.shape,
                                                  kernel.dtype, kernel.params, target, options);
  if (!e.sim.valid)
    throw UserError("trial " + std::to_string(trial.id) + " of run " + std::to_string(run.id) +
                    " does not fit its target: " + e.sim.error);
  return sim::perfetto_trace_json(e.sim, *e.program);
}

namespace {

Json decision_chain(store::Store& store, int64_t run_id, const std::vector<store::Trial>& trials) {
  Json chain = Json::array();
  std::map<int64_t, Json> proposed;
  for (const auto& trial : trials)
    if (trial.decision_seq) proposed[*trial.decision_seq].push_back(trial.id);
  for (const auto& d : store.decisions(run_id)) {
    Json entry = {{"seq", d.seq},         {"iteration", d.iteration}, {"skill", d.skill},
                  {"action", d.action},   {"proposer", d.proposer},   {"rationale", d.rationale},
                  {"outcome", d.outcome}, {"evidence", d.evidence}};
    const auto it = proposed.find(d.seq);
    const std::size_t count = it == proposed.end() ? 0 : it->second.size();
    entry["trials_proposed"] = count;
    if (count > 0)
      entry["trials"] =
          count > 200 ? Json(std::vector<Json>(it->second.begin(), it->second.begin() + 200)) : it->second;
    chain.push_back(std::move(entry));
  }
  return chain;
}

// A screened run (a goal's `screen:`): every device trial the screen
// simulated, from its screen_feedback decisions: [trial, simulated_s,
// measured_s, variant], in the order measured.
Json screen_points(const Json& decisions) {
  Json points = Json::array();
  for (const auto& d : decisions) {
    if (d.value("action", "") != "screen_feedback" || !d["evidence"].is_object()) continue;
    for (const auto& t : d["evidence"].value("trials", Json::array()))
      if (t.contains("simulated_s") && t.contains("measured_s"))
        points.push_back({t["trial"], t["simulated_s"], t["measured_s"], t.value("variant", "")});
  }
  return points;
}

// A model goal's run has no trials of its own: its document holds the
// forward before and after, a row per operator (from the run's summary) and
// its kernel runs with their evaluations, in place of the trial charts.
Json model_report(store::Store& store, const store::Run& run, const store::report::RunOverview& overview) {
  Json doc = store::run_listing_json(run);
  doc["objective"] = "latency";
  doc["evaluations"] = overview.counts.total;
  if (overview.baseline_latency_s) doc["baseline"] = {{"latency_s", *overview.baseline_latency_s}};
  if (overview.best_latency_s) doc["best"] = {{"latency_s", *overview.best_latency_s}};
  if (overview.improvement) doc["improvement"] = *overview.improvement;
  doc["variants"] = Json::array();
  doc["points"] = Json::array();
  doc["best_so_far"] = Json::array();
  doc["parameters"] = Json::array();
  doc["last_trial"] = 0;
  const Json& summary = run.summary;
  auto number = [&](const char* key) {
    return summary.contains(key) && summary[key].is_number() ? summary[key] : Json();
  };
  Json kernel_runs = Json::array();
  for (const int64_t id : overview.kernel_runs) {
    const auto child = store.run(id);
    if (!child) continue;
    const auto o = store::report::overview(store, *child);
    kernel_runs.push_back({{"run", id},
                           {"goal_name", child->goal_name},
                           {"kernel", child->kernel},
                           {"status", std::string(store::to_string(child->status))},
                           {"stop_reason", child->stop_reason},
                           {"evaluations", o.counts.total},
                           {"baseline_latency_s", store::report::number_or_null(o.baseline_latency_s)},
                           {"best_latency_s", store::report::number_or_null(o.best_latency_s)},
                           {"speedup", store::report::number_or_null(o.speedup)}});
  }
  doc["model"] = {{"forward_before_s", number("baseline_latency_s")},
                  {"forward_after_s", number("best_latency_s")},
                  {"speedup", number("speedup")},
                  {"mfu_before_percent", number("baseline_mfu_percent")},
                  {"mfu_after_percent", number("best_mfu_percent")},
                  {"roofline_sum_s", number("roofline_sum_s")},
                  {"operators", summary.value("operators", Json::array())},
                  {"kernel_runs", kernel_runs}};
  doc["decisions"] = decision_chain(store, run.id, {});
  return doc;
}

}  // namespace

Json run_report(store::Store& store, int64_t run_id, const ReportOptions& options) {
  const store::Run run = store::report::require_run(store, run_id);
  const store::report::RunOverview overview = store::report::overview(store, run);
  if (overview.model) return model_report(store, run, overview);
  const std::vector<store::Trial> trials = store.trials(run_id);

  const YAML::Node goal_document = stored_goal(run);
  Json doc = store::run_listing_json(run);
  doc["objective"] = objective_of(goal_document);
  doc["evaluations"] = trials.size();
  auto number_or_null = [](std::optional<double> value) { return value ? Json(*value) : Json(); };
  if (overview.baseline)
    doc["baseline"] = {{"trial", overview.baseline->id},
                       {"latency_s", number_or_null(overview.baseline_latency_s)},
                       {"interval", interval_of(*overview.baseline)}};
  if (overview.best)
    doc["best"] = {{"trial", overview.best->id},
                   {"latency_s", number_or_null(overview.best_latency_s)},
                   {"interval", interval_of(*overview.best)}};
  if (overview.improvement) doc["improvement"] = *overview.improvement;
  const GoalView goal = goal_view(goal_document, overview.baseline);
  if (!goal.text.empty()) doc["goal"] = goal.text;
  if (goal.latency_s) doc["goal_latency_s"] = *goal.latency_s;

  // Points in commit order; the evaluation number is the position in it.
  // The best so far follows the loop's rule (core/noise.hpp): by the goal's
  // objective (an MFU goal's best is its highest MFU), with intervals a trial
  // improves on the best only beyond the noise, and a win the loop measured
  // again counts at its second measurement. The line is drawn at each best's
  // latency, the chart's axis.
  std::vector<std::string> variants;
  std::map<std::string, int> variant_index;
  std::vector<std::size_t> improving;  // indices where the best so far improved
  Json best_so_far = Json::array();
  std::optional<Estimate> best;
  const double remeasure_beyond = remeasure_beyond_of(goal_document);
  const ObjectiveMetric objective = objective_metric(objective_of(goal_document));
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const auto& trial = trials[i];
    if (!variant_index.count(trial.variant)) {
      variant_index[trial.variant] = static_cast<int>(variants.size());
      variants.push_back(trial.variant);
    }
    const auto estimate = estimate_from_metrics(trial.metrics, objective.key, objective.maximised);
    const auto latency = trial.metric("latency_s");
    if (!is_measured(trial.status) || !estimate || !latency) continue;
    if (best &&
        compare_estimates(*estimate, *best, trial.metrics.contains("remeasured") ? -1.0 : remeasure_beyond) !=
            Comparison::better)
      continue;
    best = estimate;
    improving.push_back(i);
    best_so_far.push_back({i + 1, *latency, trial.id});
  }
  std::vector<std::size_t> shown;
  const std::size_t first =
      options.after_trial
          ? std::size_t(std::upper_bound(trials.begin(), trials.end(), *options.after_trial,
                                         [](int64_t id, const store::Trial& t) { return id < t.id; }) -
                        trials.begin())
          : 0;
  const std::size_t candidates = trials.size() - first;
  if (candidates <= options.max_points) {
    for (std::size_t i = first; i < trials.size(); ++i) shown.push_back(i);
  } else {
    std::set<std::size_t> keep;
    for (std::size_t i : improving)
      if (i >= first) keep.insert(i);
    std::mt19937_64 rng(run.seed ^ 0x5eed);
    std::vector<std::size_t> rest;
    for (std::size_t i = first; i < trials.size(); ++i)
      if (!keep.count(i)) rest.push_back(i);
    std::shuffle(rest.begin(), rest.end(), rng);
    for (std::size_t k = 0; k < rest.size() && keep.size() < options.max_points; ++k) keep.insert(rest[k]);
    shown.assign(keep.begin(), keep.end());
    doc["sampled"] = {{"shown", shown.size()},
                      {"of", candidates},
                      {"how", "a seeded uniform sample of the trials, every improvement of the best kept"}};
  }
  Json points = Json::array();
  std::set<std::string> parameter_names;
  for (std::size_t i : shown) {
    const auto& trial = trials[i];
    const auto latency = trial.metric("latency_s");
    points.push_back({{"n", i + 1},
                      {"trial", trial.id},
                      {"latency_s", is_measured(trial.status) && latency ? Json(*latency) : Json()},
                      {"interval", is_measured(trial.status) ? interval_of(trial) : Json()},
                      {"status", status_class(trial.status)},
                      {"variant", variant_index[trial.variant]},
                      {"params", trial.params},
                      {"decision", trial.decision_seq ? Json(*trial.decision_seq) : Json()},
                      {"error", trial.error.substr(0, 300)}});
    if (trial.params.is_object())
      for (const auto& [name, value] : trial.params.items())
        if (name != "_") parameter_names.insert(name);
  }
  doc["variants"] = variants;
  doc["points"] = points;
  doc["best_so_far"] = best_so_far;
  doc["parameters"] = parameter_names;
  doc["last_trial"] = trials.empty() ? 0 : trials.back().id;
  if (options.after_trial) return doc;

  doc["importance"] = {
      {"method",
       "first-order variance decomposition of log latency over the measured trials: the share of "
       "its variance each parameter's value explains alone (interactions not separated)"},
      {"parameters", importance(trials)}};

  doc["decisions"] = decision_chain(store, run_id, trials);
  if (Json screen = screen_points(doc["decisions"]); !screen.empty()) doc["screen"] = screen;

  if (options.timelines) {
    Json timelines = Json::object();
    if (overview.baseline) timelines["baseline"] = trial_timeline(run, *overview.baseline, options.max_bars);
    if (overview.best) timelines["best"] = trial_timeline(run, *overview.best, options.max_bars);
    doc["timelines"] = timelines;
  }
  return doc;
}

Json runs_index(store::Store& store) {
  Json out = Json::array();
  for (const auto& o : store::report::overviews(store)) {
    Json row = store::run_listing_json(o.run);
    row["evaluations"] = o.counts.total;
    if (o.baseline_latency_s) row["baseline_latency_s"] = *o.baseline_latency_s;
    if (o.best_latency_s) row["best_latency_s"] = *o.best_latency_s;
    if (o.speedup) row["speedup"] = *o.speedup;
    if (o.model) row["kernel_runs"] = o.kernel_runs;
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace autotune::report
