#include "store/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace autotune::store::report {
namespace {

std::optional<double> latency_of(const std::optional<Trial>& trial) {
  if (!trial || !is_measured(trial->status)) return std::nullopt;
  auto latency = trial->metric("latency_s");
  if (!latency || !(*latency > 0)) return std::nullopt;
  return latency;
}

std::optional<double> ratio(std::optional<double> numerator, std::optional<double> denominator) {
  if (!numerator || !denominator || !(*denominator > 0)) return std::nullopt;
  return *numerator / *denominator;
}

Json number_or_null(std::optional<double> value) { return value ? Json(*value) : Json(nullptr); }
Json trial_or_null(const std::optional<Trial>& trial) { return trial ? Json(*trial) : Json(nullptr); }

std::string first_line(const std::string& text, std::size_t max_width) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > max_width) line = line.substr(0, max_width - 3) + "...";
  return line;
}

// Left-aligned text columns, numbers right-aligned, two spaces between.
class TextTable {
 public:
  TextTable(std::vector<std::string> header, std::vector<bool> right_aligned)
      : right_aligned_(std::move(right_aligned)) {
    rows_.push_back(std::move(header));
  }
  void add(std::vector<std::string> row) {
    AUTOTUNE_CHECK(row.size() == rows_.front().size(), "table row has the wrong number of cells");
    rows_.push_back(std::move(row));
  }
  std::string render() const {
    std::vector<std::size_t> widths(rows_.front().size(), 0);
    for (const auto& row : rows_) {
      for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    }
    std::string out;
    for (const auto& row : rows_) {
      std::string line;
      for (std::size_t c = 0; c < row.size(); ++c) {
        const std::string padding(widths[c] - row[c].size(), ' ');
        if (c > 0) line += "  ";
        line += right_aligned_[c] ? padding + row[c] : row[c] + padding;
      }
      line.erase(line.find_last_not_of(' ') + 1);
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<bool> right_aligned_;
  std::vector<std::vector<std::string>> rows_;
};

std::string scalar_text(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", value.get<double>());
    return text;
  }
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string describe_trial(const Trial& trial) {
  return "trial " + std::to_string(trial.id) + " " + trial.variant + " {" + compact(trial.params, 200) + "}";
}

std::string latency_text(const std::optional<Trial>& trial) {
  auto latency = latency_of(trial);
  return latency ? format_seconds(*latency) : "-";
}

}  // namespace

Run require_run(Store& store, int64_t run_id) {
  auto run = store.run(run_id);
  if (!run) throw UserError("run " + std::to_string(run_id) + " not found in " + store.location());
  return *run;
}

Trial require_trial(Store& store, int64_t run_id, int64_t trial_id) {
  require_run(store, run_id);
  auto trial = store.trial(run_id, trial_id);
  if (!trial) {
    throw UserError("trial " + std::to_string(trial_id) + " not found in run " + std::to_string(run_id) +
                    " of " + store.location());
  }
  return *trial;
}

RunOverview overview(Store& store, const Run& run) {
  RunOverview out;
  out.run = run;
  out.counts = store.trial_counts(run.id);
  if (run.baseline_trial) {
    out.baseline = store.trial(run.id, *run.baseline_trial);
  } else if (out.counts.ok > 0) {
    for (auto& trial : store.trials(run.id)) {
      if (latency_of(trial)) {
        out.baseline = std::move(trial);
        break;
      }
    }
  }
  out.best = run.best_trial ? store.trial(run.id, *run.best_trial) : store.best_trial(run.id);
  out.baseline_latency_s = latency_of(out.baseline);
  out.best_latency_s = latency_of(out.best);
  out.speedup = ratio(out.baseline_latency_s, out.best_latency_s);
  if (run.summary.is_object() && run.summary.contains("improvement") &&
      run.summary["improvement"].is_number()) {
    out.improvement = run.summary["improvement"].get<double>();
  } else if (auto inverse = ratio(out.best_latency_s, out.baseline_latency_s)) {
    out.improvement = 1.0 - *inverse;
  }
  return out;
}

std::vector<RunOverview> overviews(Store& store) {
  std::vector<RunOverview> out;
  for (const Run& run : store.runs()) out.push_back(overview(store, run));
  return out;
}

Explanation explain(Store& store, int64_t run_id, int64_t trial_id) {
  Explanation out;
  out.run = require_run(store, run_id);
  out.trial = require_trial(store, run_id, trial_id);
  if (out.trial.decision_seq) out.proposal = store.decision(run_id, *out.trial.decision_seq);

  const RunOverview summary = overview(store, out.run);
  out.baseline = summary.baseline;
  out.best_now = summary.best;

  const auto& self = out.trial;
  auto known_before = [&](const Trial& other) {
    if (other.id == self.id) return false;
    if (self.decision_seq && other.decision_seq) return *other.decision_seq < *self.decision_seq;
    return other.id < self.id;
  };
  for (auto& other : store.trials(run_id)) {
    if (!known_before(other)) continue;
    auto latency = latency_of(other);
    if (latency && (!out.best_before || *latency < *latency_of(out.best_before)))
      out.best_before = std::move(other);
  }

  const auto latency = latency_of(out.trial);
  out.speedup_vs_baseline = ratio(latency_of(out.baseline), latency);
  out.speedup_vs_best_before = ratio(latency_of(out.best_before), latency);
  out.became_best = latency && (!out.best_before || *latency < *latency_of(out.best_before));
  out.is_run_best = out.best_now && out.best_now->id == out.trial.id;
  return out;
}

// ---- text

std::string format_seconds(double seconds) {
  struct Unit {
    double scale;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  const double magnitude = std::fabs(seconds);
  const Unit* unit = &kUnits[3];
  for (const Unit& candidate : kUnits) {
    if (magnitude >= candidate.scale) {
      unit = &candidate;
      break;
    }
  }
  char text[48];
  std::snprintf(text, sizeof text, "%.3f %s", seconds / unit->scale, unit->name);
  return text;
}

std::string format_speedup(double speedup) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", speedup);
  return text;
}

std::string format_improvement(double improvement) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", improvement * 100.0);
  return text;
}

std::string compact(const Json& value, std::size_t max_width) {
  std::string text;
  if (value.is_null()) {
    text = "";
  } else if (value.is_object()) {
    for (const auto& [key, item] : value.items()) {
      if (!text.empty()) text += ' ';
      text += key + "=" + scalar_text(item);
    }
  } else {
    text = scalar_text(value);
  }
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (max_width >= 4 && text.size() > max_width) text = text.substr(0, max_width - 3) + "...";
  return text;
}

std::string format_runs(const std::vector<RunOverview>& runs) {
  if (runs.empty()) return "no runs yet\n";
  TextTable table(
      {"id", "created", "goal", "kernel", "target", "status", "best", "speedup", "improvement", "evals"},
      {true, false, false, false, false, false, true, true, true, true});
  for (const auto& entry : runs) {
    const Run& run = entry.run;
    std::string created = run.created.substr(0, 16);
    std::replace(created.begin(), created.end(), 'T', ' ');
    std::string status(to_string(run.status));
    if (run.goal_met) status += " (goal met)";
    table.add({std::to_string(run.id), created, run.goal_name, run.kernel, run.target, status,
               entry.best_latency_s ? format_seconds(*entry.best_latency_s) : "-",
               entry.speedup ? format_speedup(*entry.speedup) : "-",
               entry.improvement ? format_improvement(*entry.improvement) : "-",
               std::to_string(entry.counts.total)});
  }
  return table.render();
}

std::string format_trials(const std::vector<Trial>& trials, std::optional<double> baseline_latency_s) {
  if (trials.empty()) return "no trials\n";
  TextTable table({"id", "iter", "variant", "params", "status", "latency", "speedup", "cache", "error"},
                  {true, true, false, false, false, true, true, false, false});
  for (const Trial& trial : trials) {
    const auto latency = latency_of(trial);
    const auto speedup = ratio(baseline_latency_s, latency);
    table.add({std::to_string(trial.id), std::to_string(trial.iteration), trial.variant,
               compact(trial.params, 100), std::string(to_string(trial.status)),
               latency ? format_seconds(*latency) : "-", speedup ? format_speedup(*speedup) : "-",
               trial.cache_hit ? "hit" : "", first_line(trial.error, 40)});
  }
  return table.render();
}

std::string format_decisions(const std::vector<Decision>& decisions) {
  if (decisions.empty()) return "no decisions\n";
  TextTable table({"seq", "iter", "skill", "action", "by", "evidence", "outcome"},
                  {true, true, false, false, false, false, false});
  for (const Decision& decision : decisions) {
    table.add({std::to_string(decision.seq), std::to_string(decision.iteration), decision.skill,
               decision.action, decision.proposer, compact(decision.evidence, 60),
               first_line(decision.outcome, 60)});
  }
  return table.render();
}

std::string format_explanation(const Explanation& e) {
  std::string out;
  auto line = [&](const std::string& label, const std::string& value) {
    if (value.empty()) return;
    std::string padded = "  " + label;
    padded.resize(std::max<std::size_t>(padded.size() + 1, 16), ' ');
    out += padded + value + "\n";
  };

  out += describe_trial(e.trial) + ", run " + std::to_string(e.run.id) + " (" + e.run.goal_name +
         "), iteration " + std::to_string(e.trial.iteration) + "\n";

  out += "proposed by\n";
  if (e.proposal) {
    const Decision& d = *e.proposal;
    line("decision", "#" + std::to_string(d.seq) + " (iteration " + std::to_string(d.iteration) +
                         "): " + d.skill + " / " + d.action + ", by " + d.proposer);
    line("evidence", compact(d.evidence, 200));
    line("rationale", d.rationale);
    line("alternatives", compact(d.alternatives, 200));
    line("led to", d.outcome);
  } else if (e.trial.decision_seq) {
    line("decision", "#" + std::to_string(*e.trial.decision_seq) + " (not recorded)");
  } else {
    line("decision", "none recorded");
  }

  out += "compared with\n";
  if (e.baseline) {
    line("baseline", describe_trial(*e.baseline) + ": " + latency_text(e.baseline));
  } else {
    line("baseline", "none measured");
  }
  if (e.best_before) {
    line("best before", describe_trial(*e.best_before) + ": " + latency_text(e.best_before));
  } else {
    line("best before", "nothing measured before it");
  }

  out += "outcome\n";
  std::string status(to_string(e.trial.status));
  if (e.trial.cache_hit) status += " (cache hit)";
  line("status", status);
  if (auto latency = latency_of(e.trial)) {
    std::string text = format_seconds(*latency);
    if (e.speedup_vs_baseline) text += ", " + format_speedup(*e.speedup_vs_baseline) + " vs baseline";
    if (e.speedup_vs_best_before)
      text += ", " + format_speedup(*e.speedup_vs_best_before) + " vs best before";
    line("latency", text);
  }
  line("metrics", compact(e.trial.metrics, 200));
  line("verification", compact(e.trial.verification, 200));
  line("error", first_line(e.trial.error, 200));
  std::string verdict;
  if (e.became_best) {
    verdict = e.best_before ? "became the best so far" : "first measured trial of the run";
  } else if (latency_of(e.trial)) {
    verdict = "did not beat the best so far";
  } else {
    verdict = "not measured; does not rank";
  }
  if (e.is_run_best) {
    verdict += "; it is the run's best trial";
  } else if (e.best_now) {
    verdict +=
        "; the run's best is trial " + std::to_string(e.best_now->id) + " (" + latency_text(e.best_now) + ")";
  }
  line("result", verdict);
  return out;
}

// ---- JSON

Json runs_json(const std::vector<RunOverview>& runs) {
  Json out = Json::array();
  for (const auto& entry : runs) {
    const Run& run = entry.run;
    out.push_back({{"id", run.id},
                   {"created", run.created},
                   {"updated", run.updated},
                   {"goal_name", run.goal_name},
                   {"kernel", run.kernel},
                   {"target", run.target},
                   {"seed", run.seed},
                   {"simulator_version", run.simulator_version},
                   {"status", to_string(run.status)},
                   {"goal_met", run.goal_met},
                   {"stop_reason", run.stop_reason},
                   {"baseline_trial", entry.baseline ? Json(entry.baseline->id) : Json(nullptr)},
                   {"best_trial", entry.best ? Json(entry.best->id) : Json(nullptr)},
                   {"baseline_latency_s", number_or_null(entry.baseline_latency_s)},
                   {"best_latency_s", number_or_null(entry.best_latency_s)},
                   {"speedup", number_or_null(entry.speedup)},
                   {"improvement", number_or_null(entry.improvement)},
                   {"evaluations", entry.counts.total},
                   {"cache_hits", entry.counts.cache_hits}});
  }
  return out;
}

Json trials_json(const std::vector<Trial>& trials, std::optional<double> baseline_latency_s) {
  Json out = Json::array();
  for (const Trial& trial : trials) {
    Json item = trial;
    const auto speedup = ratio(baseline_latency_s, latency_of(trial));
    item["speedup"] = number_or_null(speedup);
    out.push_back(std::move(item));
  }
  return out;
}

Json decisions_json(const std::vector<Decision>& decisions) {
  Json out = Json::array();
  for (const Decision& decision : decisions) out.push_back(decision);
  return out;
}

Json explanation_json(const Explanation& e) {
  return Json{{"run", e.run.id},
              {"trial", e.trial},
              {"proposed_by", e.proposal ? Json(*e.proposal) : Json(nullptr)},
              {"baseline", trial_or_null(e.baseline)},
              {"best_before", trial_or_null(e.best_before)},
              {"best_now", trial_or_null(e.best_now)},
              {"latency_s", number_or_null(latency_of(e.trial))},
              {"speedup_vs_baseline", number_or_null(e.speedup_vs_baseline)},
              {"speedup_vs_best_before", number_or_null(e.speedup_vs_best_before)},
              {"became_best", e.became_best},
              {"is_run_best", e.is_run_best}};
}

}  // namespace autotune::store::report
