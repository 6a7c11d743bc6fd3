#pragma once
// The decision policy with an LLM in the loop (docs/llm.md, "Next action").
//
// At each decision point the rules decide first. When they would stop, the
// run stops (the LLM is not asked to overrule a stop). Otherwise the LLM is
// shown the goal, every variant with its parameter domains, roles and
// constraints, the best so far, the latest findings, the generator's ideas
// and what earlier iterations tried with what outcome, and asked for the next
// action as one JSON object:
//
//   {"idea": "<id of a listed idea>", "rationale": "..."}                or
//   {"variant": "<name>", "region": {"<param>": [v, ...] | v | {"min": a, "max": b}}, "rationale": "..."}
//
// The reply is validated against the catalog: it must parse, name a known
// idea or variant, only that variant's parameters and only values of their
// domains, and the region must hold a valid configuration. An accepted reply
// steers the iteration (PolicyChoice::idea or a new Idea of kind "llm" over
// the named region, with the rules' budget) and the decision's proposer is
// "llm:<model>"; a rejected one is logged with its reason and the rules'
// choice stands (proposer "rules"). Either way the call is in llm_calls.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/decision_log.hpp"
#include "orchestrator/goal.hpp"
#include "orchestrator/llm/llm_advisor.hpp"
#include "orchestrator/llm/llm_source_proposer.hpp"
#include "orchestrator/policy.hpp"
#include "skills/variant_catalog.hpp"

namespace autotune::orchestrator::llm {

// The reply, validated: either a listed idea (index) or a new region idea.
struct NextAction {
  std::optional<std::size_t> idea;       // index into PolicyState::ideas
  std::optional<skills::Idea> new_idea;  // kind "llm"
  std::string rationale;
};
struct ValidatedAction {
  std::optional<NextAction> action;
  std::string reject_reason;  // why not, when there is no action
};

// Validates a model's reply text against the catalog and the listed ideas.
ValidatedAction validate_next_action(const std::string& reply, const skills::VariantCatalog& catalog,
                                     const std::vector<skills::Idea>& ideas);

// The chat messages for one decision. Deterministic in its inputs (they are
// the cache key). `history` lists earlier iterations (JSON objects).
std::vector<ChatMessage> next_action_prompt(const orchestrator::Goal& goal,
                                            const skills::VariantCatalog& catalog,
                                            const orchestrator::PolicyState& state,
                                            const nlohmann::json& history);

class LlmPolicy : public orchestrator::Policy {
 public:
  // `goal`, `catalog` and `store` must outlive the policy.
  LlmPolicy(const orchestrator::Goal& goal, const skills::VariantCatalog& catalog, store::Store& store,
            LlmConfig config);

  std::string name() const override { return advisor_.proposer(); }
  // The advisor (client, cache, llm_calls log); kernel source proposals share
  // it, so llm.max_calls bounds both uses together.
  LlmAdvisor& advisor() { return advisor_; }
  const orchestrator::Goal& goal() const { return goal_; }
  int kernel_sources_asked = 0;  // by propose_kernel_source
  skills::SkillResult<orchestrator::PolicyChoice> decide(const orchestrator::PolicyState& state) override;

 private:
  const orchestrator::Goal& goal_;
  const skills::VariantCatalog& catalog_;
  LlmAdvisor advisor_;
  orchestrator::RulePolicy rules_;
  nlohmann::json history_ = nlohmann::json::array();  // one entry per decision that tried something
  std::optional<double> value_before_last_;           // best value when the last entry was decided
};

// One step of the loop, after the policy chose to go on: while the goal's
// llm.kernel_sources allows, asks `policy`'s LLM for a kernel source
// (LlmSourceProposer), logs the kernel_generator decision (proposer
// llm:<model> when accepted) and commits the measured source as a trial of its
// own (variant = the declared kernel's name, proposed by that decision). The
// trial is recorded and ranked with the others but is not searched further by
// the loop (its variant is not in the catalog). Does nothing for any other
// policy. A resumed run does not commit the same trial twice. With `screen`
// (a screened run), the source is simulated on the screen's target first and
// measured only when the screen keeps it; a source it leaves out is no trial.
void propose_kernel_source(orchestrator::Policy& policy, const orchestrator::PolicyState& state,
                           const store::Trial& best, orchestrator::DecisionLog& log, store::Store& store,
                           double worker_timeout_s, const SourceScreen* screen = nullptr);

// The run's policy: the rules, advised by the goal's LLM when it names one.
std::unique_ptr<orchestrator::Policy> make_policy(const orchestrator::Goal& goal,
                                                  const skills::VariantCatalog& catalog, store::Store& store);

}  // namespace autotune::orchestrator::llm
