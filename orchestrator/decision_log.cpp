#include "orchestrator/decision_log.hpp"

#include "core/error.hpp"

namespace autotune::orchestrator {

namespace {

// What the plugin's author can do about a failure of this kind (docs/plugins.md).
std::string plugin_failure_hint(const std::string& failure) {
  if (failure == "timed_out")
    return "a reply is one line on stdout, flushed at once (print(..., flush=True)); one that needs longer "
           "wants a larger timeout_s";
  if (failure == "malformed")
    return "docs/plugins.md says what a reply holds: one line of JSON on stdout (diagnostics on stderr) with "
           "the role's result";
  if (failure == "plugin_error") return "";  // the plugin's own reason
  return "check its command with `autotune skills GOAL`";
}

}  // namespace

std::string DecisionLog::failure_line(const std::string& skill, const skills::SkillDecision& decision) {
  if (decision.action == "plugin_failed") {
    const std::string plugin =
        decision.inputs.is_object() ? decision.inputs.value("plugin", decision.proposer) : decision.proposer;
    const std::string failure =
        decision.evidence.is_object() ? decision.evidence.value("failure", std::string()) : std::string();
    const std::string hint = plugin_failure_hint(failure);
    return "plugin '" + plugin + "' (" + skill + ") failed: " + decision.outcome +
           (hint.empty() ? "" : " (" + hint + ")");
  }
  if (decision.evidence.is_object() && decision.evidence.contains("llm") &&
      decision.evidence["llm"].is_object()) {
    const skills::Json& llm = decision.evidence["llm"];
    if (llm.value("status", "") == "rejected")
      return "the LLM's answer was not used (" + llm.value("reason", std::string("no reason recorded")) +
             "); the rules decided (check the goal's llm: endpoint, model and key; docs/llm.md)";
  }
  return "";
}

int64_t DecisionLog::append(int iteration, const std::string& skill, const skills::SkillDecision& decision,
                            double duration_ms) {
  if (failure_sink_)
    if (const std::string line = failure_line(skill, decision); !line.empty()) failure_sink_(line);
  std::lock_guard lock(mutex_);
  if (next_seq_ <= already_logged_) {
    const auto stored = store_.decision(run_, next_seq_);
    AUTOTUNE_CHECK(stored.has_value(),
                   "decision " + std::to_string(next_seq_) + " of a resumed run is missing");
    if (stored->skill != skill || stored->action != decision.action)
      throw UserError(
          "cannot resume run " + std::to_string(run_) + ": decision " + std::to_string(next_seq_) + " was '" +
          stored->skill + ": " + stored->action + "' but the replay made '" + skill + ": " + decision.action +
          "' (a different goal, seed or simulator version, or a plugin or LLM that now answers otherwise?)");
    return next_seq_++;
  }
  if (write_guard_) write_guard_();
  store::Decision record;
  record.run = run_;
  record.iteration = iteration;
  record.skill = skill;
  record.action = decision.action;
  record.proposer = decision.proposer;
  record.inputs = decision.inputs;
  record.evidence = decision.evidence;
  record.alternatives = decision.alternatives;
  record.rationale = decision.rationale;
  record.outcome = decision.outcome;
  record.duration_ms = duration_ms;
  const int64_t seq = store_.append_decision(record);
  AUTOTUNE_CHECK(seq == next_seq_, "the store assigned decision seq " + std::to_string(seq) + ", expected " +
                                       std::to_string(next_seq_));
  return next_seq_++;
}

void DecisionLog::set_outcome(int64_t seq, const std::string& outcome) {
  std::lock_guard lock(mutex_);
  if (write_guard_) write_guard_();
  store_.set_decision_outcome(run_, seq, outcome);
}

}  // namespace autotune::orchestrator
