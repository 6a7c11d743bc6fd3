#include "store/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"

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

std::string string_at(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

// The latest decision of `decisions` (in seq order) in `iteration` before
// `before_seq` that `matches`.
template <class Match>
std::optional<Decision> last_before(const std::vector<Decision>& decisions, int iteration, int64_t before_seq,
                                    Match matches) {
  std::optional<Decision> found;
  for (const Decision& d : decisions)
    if (d.iteration == iteration && d.seq < before_seq && matches(d)) found = d;
  return found;
}

// Follows a trial's proposing decision back to the idea and findings behind
// it. The loop logs, per iteration: analysis, generation, the policy's
// try:<kind> (inputs.idea names the idea picked), the explorer's search, and
// after it accept/rollback (inputs.idea too, which older runs only have).
void trace_chain(const std::vector<Decision>& decisions, Explanation& out) {
  if (!out.proposal) return;
  const Decision& proposal = *out.proposal;
  out.choice = last_before(decisions, proposal.iteration, proposal.seq + 1, [](const Decision& d) {
    return d.skill == "orchestrator" && d.action.starts_with("try:");
  });
  if (!out.choice) return;
  for (const Decision& d : decisions) {
    if (d.iteration == proposal.iteration && d.seq > proposal.seq && d.skill == "orchestrator" &&
        (d.action == "accept" || d.action == "rollback")) {
      out.verdict = d;
      break;
    }
  }
  std::string idea_id = string_at(out.choice->inputs, "idea");
  if (idea_id.empty() && out.verdict) idea_id = string_at(out.verdict->inputs, "idea");

  out.generation = last_before(decisions, proposal.iteration, out.choice->seq, [](const Decision& d) {
    return d.skill == "kernel_generator" || d.action.starts_with("propose:");
  });
  if (out.generation && out.generation->evidence.is_object() && out.generation->evidence.contains("ideas")) {
    for (const Json& idea : out.generation->evidence["ideas"])
      if (string_at(idea, "id") == idea_id) out.idea = idea;
  }
  if (out.idea.is_null() && out.choice->inputs.is_object() && out.choice->inputs.contains("llm_idea"))
    out.idea = out.choice->inputs["llm_idea"];
  if (out.idea.is_null() && !idea_id.empty()) out.idea = Json{{"id", idea_id}};

  out.analysis = last_before(decisions, proposal.iteration,
                             out.generation ? out.generation->seq : out.choice->seq, [](const Decision& d) {
                               return d.skill == "profile_analyzer" || d.action.starts_with("findings:") ||
                                      d.action == "no_findings";
                             });
  const std::string finding = string_at(out.idea, "finding");
  if (finding.empty()) return;
  // The analyzer logs its findings as alternatives; the policy repeats them in its evidence.
  const Json* sources[] = {out.analysis ? &out.analysis->alternatives : nullptr,
                           out.choice->evidence.is_object() && out.choice->evidence.contains("findings")
                               ? &out.choice->evidence["findings"]
                               : nullptr};
  for (const Json* source : sources) {
    if (source == nullptr || !source->is_array()) continue;
    for (const Json& item : *source)
      if (string_at(item, "kind") == finding) out.findings.push_back(item);
    if (!out.findings.empty()) return;
  }
}

std::string verification_text(const Trial& trial) {
  const Json& v = trial.verification;
  const bool has_passed = v.is_object() && v.contains("passed") && v["passed"].is_boolean();
  if (trial.status == Outcome::wrong_answer || (has_passed && !v["passed"].get<bool>()))
    return "failed: " + (trial.error.empty() ? compact(v, 200) : first_line(trial.error, 200));
  if (has_passed) {
    std::string text = "passed";
    if (v.contains("max_rel_error") && v.contains("tolerance"))
      text += ": max_rel_error " + scalar_text(v["max_rel_error"]) + " within tolerance " +
              scalar_text(v["tolerance"]);
    return text;
  }
  if (!is_measured(trial.status))
    return "not verified: " + std::string(to_string(trial.status)) +
           (trial.error.empty() ? "" : ": " + first_line(trial.error, 200));
  return "";
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
  if (out.trial.decision_seq) {
    const auto decisions = store.decisions(run_id);
    const auto proposal = std::find_if(decisions.begin(), decisions.end(),
                                       [&](const Decision& d) { return d.seq == *out.trial.decision_seq; });
    if (proposal != decisions.end()) out.proposal = *proposal;
    trace_chain(decisions, out);
  }

  const RunOverview summary = overview(store, out.run);
  out.baseline = summary.baseline;
  out.best_now = summary.best;

  const auto& self = out.trial;
  auto known_before = [&](const Trial& other) {
    if (other.id == self.id) return false;
    if (self.batch && other.batch) return *other.batch < *self.batch;
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
      if (key == "_") continue;  // the placeholder of a variant without parameters
      if (!text.empty()) text += ' ';
      text += key + "=" + scalar_text(item);
    }
    if (text.empty() && !value.empty()) text = "(no parameters)";
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
  // Parameters with one value in every listed trial that has them are said
  // once above the table; each row shows only those that tell it apart.
  std::map<std::string, std::set<std::string>> values;
  std::map<std::string, std::size_t> holders;
  for (const Trial& trial : trials)
    if (trial.params.is_object())
      for (const auto& [key, value] : trial.params.items()) {
        if (key == "_") continue;  // the placeholder of a variant without parameters
        values[key].insert(value.dump(-1, ' ', false, Json::error_handler_t::replace));
        ++holders[key];
      }
  std::set<std::string> shared;
  if (trials.size() > 1)
    for (const auto& [key, seen] : values)
      if (seen.size() == 1 && holders[key] == trials.size()) shared.insert(key);
  const std::string shared_text = join(
      shared, " ", [&](const std::string& key) { return key + "=" + compact(trials.front().params[key]); });
  TextTable table({"id", "iter", "variant", "params", "status", "latency", "speedup", "cache", "error"},
                  {true, true, false, false, false, true, true, false, false});
  for (const Trial& trial : trials) {
    const auto latency = latency_of(trial);
    const auto speedup = ratio(baseline_latency_s, latency);
    Json differing = Json::object();
    if (trial.params.is_object())
      for (const auto& [key, value] : trial.params.items())
        if (!shared.count(key)) differing[key] = value;
    std::string params = compact(differing, 0);  // whole: the differing ones are the point
    if (params.empty()) params = shared.empty() ? "(no parameters)" : "(the shared ones)";
    table.add({std::to_string(trial.id), std::to_string(trial.iteration), trial.variant, params,
               std::string(to_string(trial.status)), latency ? format_seconds(*latency) : "-",
               speedup ? format_speedup(*speedup) : "-", trial.cache_hit ? "hit" : "",
               first_line(trial.error, 60)});
  }
  return (shared_text.empty() ? "" : "every trial listed has " + shared_text + "\n") + table.render();
}

namespace {

// `text` as lines of at most `width` characters, broken between words, each
// after the first indented by `indent` spaces.
std::string wrapped(const std::string& text, std::size_t width, std::size_t indent) {
  std::string out, line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  return out + line;
}

}  // namespace

std::string format_decisions(const std::vector<Decision>& decisions) {
  if (decisions.empty()) return "no decisions\n";
  // One block per decision: who decided what, then why (the rationale, else
  // the evidence) and what came of it, wrapped rather than cut.
  constexpr std::size_t kWidth = 100, kIndent = 15;
  std::string out;
  for (const Decision& decision : decisions) {
    char head[64];
    std::snprintf(head, sizeof head, "%4lld  iter %-3d ", static_cast<long long>(decision.seq),
                  decision.iteration);
    out += head + decision.skill + " / " + decision.action + "  (" + decision.proposer + ")\n";
    std::string reason = decision.rationale;
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    if (reason.empty()) reason = compact(decision.evidence, 0);
    if (!reason.empty()) out += "      why:     " + wrapped(reason, kWidth - kIndent, kIndent) + "\n";
    std::string outcome = decision.outcome;
    std::replace(outcome.begin(), outcome.end(), '\n', ' ');
    if (!outcome.empty()) out += "      outcome: " + wrapped(outcome, kWidth - kIndent, kIndent) + "\n";
  }
  return out;
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

  if (e.choice) {
    out += "why\n";
    if (e.analysis) {
      const std::string analysed = string_at(e.analysis->inputs, "candidate");
      line("analysed", (analysed.empty() ? std::string("the best so far") : analysed) + " (decision #" +
                           std::to_string(e.analysis->seq) + ", " + e.analysis->skill + " / " +
                           e.analysis->action + ", by " + e.analysis->proposer + ")");
    }
    for (const Json& finding : e.findings) {
      std::string text = string_at(finding, "kind");
      const std::string summary = string_at(finding, "summary");
      if (!summary.empty()) text += ": " + summary;
      line("finding", text);
      if (finding.contains("evidence")) line("evidence", compact(finding["evidence"], 200));
    }
    if (e.findings.empty())
      line("finding", e.analysis ? "none acted on: an exploration idea" : "no analysis recorded");
    if (!e.idea.is_null()) {
      std::string text = string_at(e.idea, "id");
      if (e.generation)
        text += " (decision #" + std::to_string(e.generation->seq) + ", " + e.generation->skill + ", by " +
                e.generation->proposer + ")";
      line("idea", text);
      line("idea's why", string_at(e.idea, "rationale"));
    }
    line("chosen", "decision #" + std::to_string(e.choice->seq) + ": " + e.choice->skill + " / " +
                       e.choice->action + ", by " + e.choice->proposer);
    line("choice's why", e.choice->rationale);
    if (e.verdict) line("idea verdict", e.verdict->action + ": " + e.verdict->rationale);
  }

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
  line("verified", verification_text(e.trial));
  if (e.speedup_vs_best_before && e.best_before) {
    const double change = 1.0 / *e.speedup_vs_best_before - 1.0;
    line("change", "latency " + format_improvement(change) + " against trial " +
                       std::to_string(e.best_before->id) + ", the best before (" +
                       latency_text(e.best_before) + " -> " + latency_text(e.trial) + ")");
  }
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
    Json item = run_listing_json(entry.run);
    // The overview's baseline and best, found from the trials while a run is going.
    item["baseline_trial"] = entry.baseline ? Json(entry.baseline->id) : Json(nullptr);
    item["best_trial"] = entry.best ? Json(entry.best->id) : Json(nullptr);
    item["baseline_latency_s"] = number_or_null(entry.baseline_latency_s);
    item["best_latency_s"] = number_or_null(entry.best_latency_s);
    item["speedup"] = number_or_null(entry.speedup);
    item["improvement"] = number_or_null(entry.improvement);
    item["evaluations"] = entry.counts.total;
    item["cache_hits"] = entry.counts.cache_hits;
    out.push_back(std::move(item));
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
              {"analysis", e.analysis ? Json(*e.analysis) : Json(nullptr)},
              {"findings", e.findings},
              {"generation", e.generation ? Json(*e.generation) : Json(nullptr)},
              {"idea", e.idea},
              {"chosen_by", e.choice ? Json(*e.choice) : Json(nullptr)},
              {"verdict", e.verdict ? Json(*e.verdict) : Json(nullptr)},
              {"baseline", trial_or_null(e.baseline)},
              {"best_before", trial_or_null(e.best_before)},
              {"best_now", trial_or_null(e.best_now)},
              {"latency_s", number_or_null(latency_of(e.trial))},
              {"speedup_vs_baseline", number_or_null(e.speedup_vs_baseline)},
              {"speedup_vs_best_before", number_or_null(e.speedup_vs_best_before)},
              {"verified", verification_text(e.trial)},
              {"became_best", e.became_best},
              {"is_run_best", e.is_run_best}};
}

}  // namespace autotune::store::report
