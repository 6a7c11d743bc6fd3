#include "orchestrator/policy.hpp"

#include <algorithm>

#include "orchestrator/decision_log.hpp"

namespace autotune::orchestrator {

skills::SkillResult<PolicyChoice> RulePolicy::decide(const PolicyState& state) {
  skills::SkillResult<PolicyChoice> out;
  PolicyChoice& choice = out.result;
  auto& decision = out.decision;
  decision.inputs = {{"iteration", state.iteration},
                     {"evaluations", state.evaluations},
                     {"budget", state.budget_evaluations},
                     {"best", state.best.text()},
                     {"improvement", state.improvement}};
  Json findings = Json::array();
  for (const auto& f : state.analysis.findings)
    findings.push_back({{"kind", f.kind},
                        {"action", f.action},
                        {"expected_gain", f.expected_gain},
                        {"evidence", f.evidence}});
  decision.evidence = {
      {"bound", state.analysis.bound}, {"headroom", state.analysis.headroom}, {"findings", findings}};
  Json alternatives = Json::array();
  for (const auto& idea : state.ideas)
    alternatives.push_back({{"idea", idea.id}, {"kind", idea.kind}, {"expected_gain", idea.expected_gain}});
  decision.alternatives = alternatives;

  for (const auto& finding : state.analysis.findings) {
    if (finding.action != "stop") continue;
    choice.stop = true;
    choice.stop_reason = finding.kind + ": " + finding.summary;
    decision.action = "stop";
    decision.rationale = "the analyzer reports " + finding.kind + " (" + finding.summary +
                         "): no action can buy more than the remaining headroom";
    return out;
  }
  if (state.ideas.empty()) {
    choice.stop = true;
    choice.stop_reason = "no idea left: every idea settled and every variant's space is exhausted";
    decision.action = "stop";
    decision.rationale = choice.stop_reason;
    return out;
  }

  const int remaining = std::max(0, state.budget_evaluations - state.evaluations);
  const int iterations_left = std::max(1, state.max_iterations - state.iteration + 1);
  const int share = std::max(state.batch_size, remaining / iterations_left);
  const skills::Idea& idea = state.ideas.front();
  choice.idea = 0;
  if (idea.kind == "handover") {
    choice.budget = remaining;  // the search takes over: no finding proposes anything new
  } else if (idea.kind == "explore") {
    choice.budget = std::min(remaining, share);
  } else {
    choice.budget = std::min(remaining, 2 * share);
  }
  choice.budget = std::max(choice.budget, std::min(remaining, 1));
  decision.action = std::string(kTryPrefix) + idea.kind;
  decision.rationale = (idea.kind == "handover" ? ""
                        : idea.finding.empty()  ? "no finding left to act on; "
                                                : "strongest finding " + idea.finding + "; ") +
                       idea.rationale + "; budget " + std::to_string(choice.budget) + " of " +
                       std::to_string(remaining) + " left over " + std::to_string(iterations_left) +
                       " iterations";
  return out;
}

}  // namespace autotune::orchestrator
