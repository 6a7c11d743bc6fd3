#pragma once
// The decision policy: given the analysis of the best so far and the
// generator's ideas, what the loop does next (try an idea with some budget,
// or stop) and why. The rule-based policy is the default; an LLM policy
// (orchestrator/llm/llm_policy.hpp) implements the same interface and falls back to the rules when
// its answer is rejected.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "skills/skill.hpp"

namespace autotune::orchestrator {

using Json = nlohmann::json;

struct PolicyState {
  int iteration = 0;
  int max_iterations = 0;
  int evaluations = 0;
  int budget_evaluations = 0;
  int batch_size = 1;
  skills::Candidate best;
  double best_value = 0;      // objective, minimised
  double baseline_value = 0;  // objective, minimised
  double improvement = 0;     // of the best over the baseline, per the goal's objective
  skills::Analysis analysis;
  std::vector<skills::Idea> ideas;    // from the generator, best first
  int failed_ideas_in_a_row = 0;      // ideas that did not improve, since the last improvement
  int64_t run = 0;                    // the run id (an LLM policy logs its calls against it)
  // What is left of the run's wall-time budget: an LLM consultation waits no longer.
  double wall_time_left_s = std::numeric_limits<double>::infinity();
  std::set<std::string> tried_ideas;  // ideas whose region settled
  std::map<std::string, std::uint64_t> measured_counts;  // variant -> configurations measured
};

struct PolicyChoice {
  bool stop = false;
  std::string stop_reason;  // when stop
  std::size_t idea = 0;     // index into PolicyState::ideas
  int budget = 0;           // evaluations for this iteration
  // A policy's own idea (e.g. an LLM's region), tried instead of ideas[idea].
  std::optional<skills::Idea> new_idea;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  virtual skills::SkillResult<PolicyChoice> decide(const PolicyState& state) = 0;
};

// Rules (docs/loop.md):
//  1. a "stop" finding (at the roofline, compute-bound at high MFU, at the
//     launch floor) ends the run, with its evidence;
//  2. otherwise the generator's strongest idea is tried: finding-driven
//     ideas first (ranked by the gain the finding estimates), exploration
//     after; an idea answering no finding gets an equal share of what is
//     left of the budget over the iterations left, a finding-driven one the
//     size of its region (capped likewise at twice that share);
//  3. no idea left ends the run.
class RulePolicy : public Policy {
 public:
  std::string name() const override { return "rules"; }
  skills::SkillResult<PolicyChoice> decide(const PolicyState& state) override;
};

}  // namespace autotune::orchestrator
