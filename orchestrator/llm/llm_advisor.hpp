#pragma once
// One consultation of the goal's LLM, with the run's replay cache and the
// llm_calls log (docs/llm.md).
//
// Contract:
//  - consult() first replays the run's own log: when the run already holds
//    a consultation of the same prompt hash (a resumed run going over what it
//    did before), that row is the answer, answered or not, and record()
//    returns the row instead of adding one. So a resume takes the decisions
//    the run took, whether the endpoint is down or has come back since. Calls
//    the run already sent count against max_calls, so a resume does not send
//    more than a run may.
//  - Otherwise it answers from the store's cache when any run in the database
//    already got a response to the same prompt hash (model, temperature and
//    the whole message list); only otherwise does it call the endpoint. So a
//    replayed run (same goal, seed) takes the same decisions with the endpoint
//    down. Prompts therefore hold nothing that varies between replays (no
//    times, no run ids).
//  - A call the client refuses (max_calls spent) is not sent, not logged and
//    reported as skipped; every other consultation (fresh or cached) becomes
//    one llm_calls row through record(), once the caller knows whether it
//    accepted the answer. Callers must record() every consultation that is
//    not skipped.
//  - Nothing here throws for what the endpoint does; the key never leaves
//    the client (LlmClient's contract).
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/llm/llm_client.hpp"
#include "store/store.hpp"

namespace autotune::orchestrator::llm {

struct Consultation {
  enum class Source { endpoint, cache, skipped, replay };
  Source source = Source::endpoint;
  std::string prompt_hash;
  nlohmann::json request;  // the chat request body (never holds the key)
  // The model's reply text; empty when the endpoint gave none.
  std::string content;
  // Why there is no usable reply: "<error kind>: <one line>" ("" when content is set).
  std::string error;
  double latency_ms = 0;
  int prompt_tokens = 0;
  int completion_tokens = 0;
  std::optional<int64_t> cached_from;  // the llm_calls row a cached answer came from
  std::optional<int64_t> replayed;     // the run's own llm_calls row this consultation repeats
  bool sent = false;                   // whether a request went to the endpoint

  bool answered() const { return error.empty(); }
};
std::string to_string(Consultation::Source source);

class LlmAdvisor {
 public:
  LlmAdvisor(LlmConfig config, store::Store& store);

  const LlmConfig& config() const { return client_.config(); }
  // "llm:<model>", the proposer of the decisions an accepted answer drives.
  std::string proposer() const { return "llm:" + client_.config().model; }
  int calls_made() const { return client_.calls_made(); }

  // A call waits at most max_wait_s (what is left of the run's wall time)
  // or the configured timeout_s, whichever is shorter.
  Consultation consult(int64_t run, const std::vector<ChatMessage>& messages,
                       double max_wait_s = std::numeric_limits<double>::infinity());
  // Logs the consultation in llm_calls; returns the row's id. `reject_reason`
  // is ignored when accepted; for an unanswered consultation it defaults to
  // the consultation's error.
  int64_t record(int64_t run, const Consultation& consultation, bool accepted,
                 const std::string& reject_reason);

 private:
  // Loads `run`'s recorded consultations once, and counts those it sent.
  void load_log(int64_t run);

  LlmClient client_;
  store::Store& store_;
  std::optional<int64_t> loaded_run_;
  // The run's recorded consultations not yet replayed, by prompt hash, oldest first.
  std::map<std::string, std::deque<store::LlmCall>> recorded_;
};

}  // namespace autotune::orchestrator::llm
