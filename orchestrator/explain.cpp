#include "orchestrator/explain.hpp"

#include <algorithm>
#include <map>

#include "orchestrator/decision_log.hpp"
#include "skills/candidate.hpp"
#include "skills/skill.hpp"

namespace autotune::orchestrator {
namespace {

using store::Decision;
using store::Trial;
using namespace store::report;

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
    return d.skill == kOrchestrator && d.action.starts_with(kTryPrefix);
  });
  if (!out.choice) return;
  for (const Decision& d : decisions) {
    if (d.iteration == proposal.iteration && d.seq > proposal.seq && d.skill == kOrchestrator &&
        (d.action == kAccept || d.action == kRollback)) {
      out.verdict = d;
      break;
    }
  }
  std::string idea_id = string_at(out.choice->inputs, "idea");
  if (idea_id.empty() && out.verdict) idea_id = string_at(out.verdict->inputs, "idea");

  // The generator's last decision before the choice, or, when a plugin
  // amended the built-in's ideas, the latest of them that logs the idea whole.
  for (const Decision& d : decisions) {
    if (d.iteration != proposal.iteration || d.seq >= out.choice->seq ||
        !(d.skill == skills::kKernelGenerator || d.action.starts_with(skills::kProposePrefix)))
      continue;
    if (!out.generation || out.idea.is_null()) out.generation = d;
    if (!d.evidence.is_object() || !d.evidence.contains("ideas") || !d.evidence["ideas"].is_array()) continue;
    for (const Json& idea : d.evidence["ideas"]) {
      if (idea.is_object() && string_at(idea, "id") == idea_id) {
        out.generation = d;
        out.idea = idea;
      }
    }
  }
  if (out.idea.is_null() && out.choice->inputs.is_object() && out.choice->inputs.contains("llm_idea"))
    out.idea = out.choice->inputs["llm_idea"];
  if (out.idea.is_null() && !idea_id.empty()) out.idea = Json{{"id", idea_id}};

  out.analysis = last_before(decisions, proposal.iteration,
                             out.generation ? out.generation->seq : out.choice->seq, [](const Decision& d) {
                               return d.skill == skills::kProfileAnalyzer ||
                                      d.action.starts_with(skills::kFindingsPrefix) ||
                                      d.action == skills::kNoFindings;
                             });
  // An analyzer plugin after the built-in does not name the candidate; the built-in before it did.
  for (const Decision& d : decisions)
    if (out.analysis && d.iteration == proposal.iteration && d.seq <= out.analysis->seq &&
        d.skill == out.analysis->skill && !string_at(d.inputs, "candidate").empty())
      out.analysed = string_at(d.inputs, "candidate");
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

// The part of a noise decision's outcome about one trial: what follows
// `prefix` up to the next "; " (decision_log.hpp gives the form).
std::string outcome_part(const std::string& outcome, const std::string& prefix) {
  for (std::size_t start = 0; start < outcome.size();) {
    std::size_t end = outcome.find("; ", start);
    if (end == std::string::npos) end = outcome.size();
    if (outcome.compare(start, prefix.size(), prefix) == 0)
      return outcome.substr(start + prefix.size(), end - start - prefix.size());
    start = end + 2;
  }
  return "";
}

// The trial ids of a list of ids or of {trial: id} objects.
std::vector<int64_t> trial_ids(const Json& list) {
  std::vector<int64_t> out;
  if (!list.is_array()) return out;
  for (const Json& item : list) {
    const Json& id = item.is_object() ? item.value("trial", Json()) : item;
    if (id.is_number_integer()) out.push_back(id.get<int64_t>());
  }
  return out;
}

using NoiseRuling = Explanation::NoiseRuling;

// The noise rule's rulings on the trials it named, by trial id.
std::map<int64_t, NoiseRuling> noise_rulings(const std::vector<Decision>& decisions) {
  std::map<int64_t, NoiseRuling> out;
  for (const Decision& d : decisions) {
    if (d.skill != kOrchestrator) continue;
    if (d.action == kWithinNoise) {
      for (const int64_t id : trial_ids(d.evidence.value("within_noise", Json())))
        out[id] = {d, "a lower median than the best, but within its noise: not an improvement", false};
    } else if (d.action == kMeasureAgain) {
      for (const int64_t id : trial_ids(d.inputs.value("trials", Json()))) {
        const std::string again = outcome_part(d.outcome, "trial " + std::to_string(id) + " again as ");
        out[id] = {d,
                   "beat the best by more than the noise allows, so it was measured again" +
                       (again.empty() ? std::string() : " as " + again) + "; it does not count by itself",
                   false};
      }
    } else if (d.action == kNotMeasuredAgain) {
      for (const int64_t id : trial_ids(d.evidence.value("suspicious", Json()))) {
        const std::string ruling = outcome_part(d.outcome, "trial " + std::to_string(id) + ": ");
        out[id] = {d,
                   "beat the best by more than the noise allows; no evaluation was left to measure it again" +
                       (ruling.empty() ? std::string() : ": " + ruling),
                   ruling == kMeasuredOnce};
      }
    }
  }
  return out;
}

// The ruling on `trial`: named by a noise decision, or the measurement again
// of an earlier trial (metrics.remeasured.of_trial), judged by the outcome of
// the decision that asked for it.
std::optional<NoiseRuling> noise_ruling(const Trial& trial, const std::map<int64_t, NoiseRuling>& rulings,
                                        const std::vector<Decision>& decisions) {
  if (auto found = rulings.find(trial.id); found != rulings.end()) return found->second;
  const Json remeasured = trial.metrics.is_object() ? trial.metrics.value("remeasured", Json()) : Json();
  if (!remeasured.is_object() || !remeasured.value("of_trial", Json()).is_number_integer() ||
      !trial.decision_seq)
    return std::nullopt;
  const auto first = remeasured["of_trial"].get<int64_t>();
  const auto asked = std::find_if(decisions.begin(), decisions.end(),
                                  [&](const Decision& d) { return d.seq == *trial.decision_seq; });
  if (asked == decisions.end()) return std::nullopt;
  const std::string result =
      outcome_part(asked->outcome,
                   "trial " + std::to_string(first) + " again as trial " + std::to_string(trial.id) + ": ");
  return NoiseRuling{*asked,
                     "the candidate of trial " + std::to_string(first) +
                         " measured again, both measurements combined" +
                         (result.empty() ? "" : ": " + result),
                     result.empty() || result.starts_with(kConfirmed)};
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

Explanation explain(store::Store& store, int64_t run_id, int64_t trial_id) {
  Explanation out;
  out.run = require_run(store, run_id);
  out.trial = require_trial(store, run_id, trial_id);
  const auto decisions = store.decisions(run_id);
  if (out.trial.decision_seq) {
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
  const Json& verification = out.trial.verification;
  for (const char* key : {"same_program_as", "same_schedule_as"})
    if (verification.is_object() && verification.value(key, Json()).is_string()) {
      out.reused_from = verification[key].get<std::string>();
      out.reused_same_program = std::string_view(key) == "same_program_as";
    }
  const auto trials = store.trials(run_id);
  if (!out.reused_from.empty())
    for (const auto& other : trials)
      if (other.id != self.id && skills::Candidate{other.variant, other.params}.key() == out.reused_from &&
          (!out.reused_trial || other.id < out.reused_trial->id))
        out.reused_trial = other;
  const auto rulings = noise_rulings(decisions);
  out.noise = noise_ruling(self, rulings, decisions);
  for (const auto& other : trials) {
    if (!known_before(other)) continue;
    if (const auto ruling = noise_ruling(other, rulings, decisions); ruling && !ruling->counts) continue;
    auto latency = latency_of(other);
    if (latency && (!out.best_before || *latency < *latency_of(out.best_before))) out.best_before = other;
  }

  const auto latency = latency_of(out.trial);
  out.speedup_vs_baseline = ratio(latency_of(out.baseline), latency);
  out.speedup_vs_best_before = ratio(latency_of(out.best_before), latency);
  out.became_best = latency && (!out.noise || out.noise->counts) &&
                    (!out.best_before || *latency < *latency_of(out.best_before));
  out.is_run_best = out.best_now && out.best_now->id == out.trial.id;
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
      const std::string& analysed = e.analysed;
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
      line("finding", !e.analysis                               ? "no analysis recorded"
                      : string_at(e.idea, "kind") == "handover" ? "none proposes anything new: the handover"
                                                                : "none acted on: an exploration idea");
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
  if (!e.reused_from.empty())
    line("measured",
         std::string("not simulated again: ") +
             (e.reused_same_program ? "the same program as "
                                    : "the same schedule and outputs (buffers placed differently) as ") +
             (e.reused_trial ? describe_trial(*e.reused_trial) : e.reused_from) +
             ", measured before; its measurement and verification are that candidate's");
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
  if (e.noise)
    line("noise rule", e.noise->text + " (decision #" + std::to_string(e.noise->decision.seq) + ")");
  std::string verdict;
  if (e.noise && !e.noise->counts && latency_of(e.trial)) {
    verdict = "not counted as better (the noise rule)";
  } else if (e.became_best) {
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

Json explanation_json(const Explanation& e) {
  return Json{
      {"run", e.run.id},
      {"trial", e.trial},
      {"proposed_by", e.proposal ? Json(*e.proposal) : Json(nullptr)},
      {"analysis", e.analysis ? Json(*e.analysis) : Json(nullptr)},
      {"analysed", e.analysed.empty() ? Json(nullptr) : Json(e.analysed)},
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
      {"reused_from", e.reused_from.empty()
                          ? Json(nullptr)
                          : Json{{"candidate", e.reused_from},
                                 {"same", e.reused_same_program ? "program" : "schedule"},
                                 {"trial", e.reused_trial ? Json(e.reused_trial->id) : Json(nullptr)}}},
      {"noise_rule",
       e.noise
           ? Json{{"decision", e.noise->decision.seq}, {"ruling", e.noise->text}, {"counts", e.noise->counts}}
           : Json(nullptr)},
      {"became_best", e.became_best},
      {"is_run_best", e.is_run_best}};
}

}  // namespace autotune::orchestrator
