#pragma once
// New kernel sources from the goal's LLM (docs/llm.md, "Kernel sources").
//
// The LLM is given the kernel API a user kernel is written against
// (kernels/external/user_kernel.hpp), the current best configuration as a
// standalone source (the text `autotune export` writes) and the Profile
// Analyzer's findings about it, and asked for a new kernel source that
// computes the same family. The answer goes through what any user kernel
// goes through (kernels/external, skills/targets/source_target.hpp): compiled
// with the system compiler, described and measured in an isolated
// kernel-worker process, verified against the family's reference on fresh
// inputs, simulated on the goal's shape. It is accepted only when it compiles,
// declares the goal's family (no reference of its own) and verifies; then its
// measurement is returned for the caller to record as a trial. Everything
// else is a rejection with its reason, logged in llm_calls; nothing here
// throws for what the model or the kernel does.
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "orchestrator/goal.hpp"
#include "orchestrator/llm/llm_advisor.hpp"
#include "skills/skill.hpp"

namespace autotune::orchestrator::llm {

// A screened run's simulator in front of the device (goal `screen:`;
// docs/loop.md, "Screened tuning"): an accepted source is simulated on the
// screen's target before the device measures it, and measured only when the
// screen keeps it, as any candidate.
struct SourceScreenVerdict {
  bool measure = true;
  nlohmann::json evidence = nlohmann::json::object();  // the simulated and predicted figures, the bound
  std::string reason;                                  // why not, when not measured
};
struct SourceScreen {
  // The target file the source is simulated on: the screen's, as corrected
  // so far (called once, when a source is to be simulated).
  std::function<std::string()> target;
  // The device measures the source when this says so, from its measurement
  // on `target`.
  std::function<SourceScreenVerdict(const skills::Measurement& simulated)> judge;
};

struct SourceProposalRequest {
  int64_t run = 0;
  const orchestrator::Goal* goal = nullptr;  // family, shape, dtype, target, tolerance, verification seed
  skills::Candidate best;
  nlohmann::json best_metrics = nlohmann::json::object();
  skills::Analysis analysis;
  double worker_timeout_s = 60;          // per compiled candidate
  const SourceScreen* screen = nullptr;  // a screened run's screen
  // What is left of the run's wall-time budget: the consultation waits no longer.
  double wall_time_left_s = std::numeric_limits<double>::infinity();
};

struct SourceProposal {
  std::string status;  // accepted | rejected | unanswered | skipped | screened_out
  std::string reason;  // why not, when not accepted
  std::optional<int64_t> llm_call;
  std::string prompt_hash;
  std::string kernel_name;  // the declared kernel (the trial's variant name)
  std::string source_hash;
  std::filesystem::path source_path;                 // the compiled copy in the kernel cache
  nlohmann::json params = nlohmann::json::object();  // the kernel's defaults, as measured
  std::optional<skills::Measurement> measurement;    // when it was measured (accepted, or a wrong answer)
  skills::SkillDecision decision;  // for the decision log (proposer llm:<model> when accepted)
};

// The chat messages asking for a new source. Deterministic in its inputs.
std::vector<ChatMessage> kernel_source_prompt(const SourceProposalRequest& request,
                                              const std::string& best_source, const std::string& api_summary);

// The source text in a reply: {"source": "..."} JSON, or the first ```cpp /
// ```c++ / ``` fenced block. nullopt with the reason otherwise.
std::optional<std::string> extract_kernel_source(const std::string& reply, std::string& reason);

class LlmSourceProposer {
 public:
  explicit LlmSourceProposer(LlmAdvisor& advisor) : advisor_(advisor) {}
  SourceProposal propose(const SourceProposalRequest& request);

 private:
  LlmAdvisor& advisor_;
};

}  // namespace autotune::orchestrator::llm
