#include "orchestrator/llm/llm_advisor.hpp"

namespace autotune::orchestrator::llm {

std::string to_string(Consultation::Source source) {
  switch (source) {
    case Consultation::Source::endpoint:
      return "endpoint";
    case Consultation::Source::cache:
      return "cache";
    case Consultation::Source::skipped:
      return "skipped";
    case Consultation::Source::replay:
      return "replay";
  }
  return "unknown";
}

LlmAdvisor::LlmAdvisor(LlmConfig config, store::Store& store) : client_(std::move(config)), store_(store) {}

namespace {
// Markers in a logged request: a cached answer names the row it came from,
// and a consultation that sent nothing (no key) says so.
constexpr const char* kCachedFrom = "autotune_cached_from_call";
constexpr const char* kNotSent = "autotune_not_sent";
}  // namespace

void LlmAdvisor::load_log(int64_t run) {
  if (loaded_run_ == run) return;
  loaded_run_ = run;
  recorded_.clear();
  int sent = 0;
  for (auto& call : store_.llm_calls(run)) {
    const bool marked =
        call.request.is_object() && (call.request.contains(kCachedFrom) || call.request.contains(kNotSent));
    if (!marked) ++sent;
    recorded_[call.prompt_hash].push_back(std::move(call));
  }
  client_.count_earlier_calls(sent);
}

Consultation LlmAdvisor::consult(int64_t run, const std::vector<ChatMessage>& messages, double max_wait_s) {
  Consultation out;
  const LlmConfig& config = client_.config();
  out.prompt_hash = prompt_hash(config.model, config.temperature, messages);
  load_log(run);
  if (auto found = recorded_.find(out.prompt_hash); found != recorded_.end() && !found->second.empty()) {
    const store::LlmCall& call = found->second.front();
    out.source = Consultation::Source::replay;
    out.request = call.request;
    out.content = call.response;
    if (call.response.empty())
      out.error = call.reject_reason.empty() ? "no answer was recorded" : call.reject_reason;
    out.replayed = call.id;
    found->second.pop_front();
    return out;
  }
  if (auto cached = store_.cached_llm_response(out.prompt_hash)) {
    out.source = Consultation::Source::cache;
    out.request = cached->request;
    out.content = cached->response;
    out.cached_from = cached->id;
    return out;
  }
  if (client_.calls_made() >= config.max_calls) {
    out.source = Consultation::Source::skipped;
    out.error = to_string(LlmErrorKind::call_budget_exhausted) + ": the budget of " +
                std::to_string(config.max_calls) + " LLM calls (llm.max_calls) is spent";
    return out;
  }
  LlmReply reply = client_.chat(messages, max_wait_s);
  out.sent = reply.error_kind != LlmErrorKind::missing_api_key &&
             reply.error_kind != LlmErrorKind::call_budget_exhausted;
  out.request = std::move(reply.request);
  out.latency_ms = reply.latency_ms;
  out.prompt_tokens = reply.prompt_tokens;
  out.completion_tokens = reply.completion_tokens;
  if (reply.error_kind == LlmErrorKind::call_budget_exhausted) out.source = Consultation::Source::skipped;
  if (reply.ok()) {
    out.content = std::move(reply.content);
  } else {
    out.error = to_string(reply.error_kind) + ": " + reply.error;
  }
  return out;
}

int64_t LlmAdvisor::record(int64_t run, const Consultation& consultation, bool accepted,
                           const std::string& reject_reason) {
  if (consultation.replayed) return *consultation.replayed;
  store::LlmCall call;
  call.run = run;
  call.prompt_hash = consultation.prompt_hash;
  call.model = client_.config().model;
  call.latency_ms = consultation.latency_ms;
  call.prompt_tokens = consultation.prompt_tokens;
  call.completion_tokens = consultation.completion_tokens;
  call.request = consultation.request;
  // A cached answer is marked in its request so the table tells a replay from a call.
  if (consultation.cached_from && call.request.is_object())
    call.request[kCachedFrom] = *consultation.cached_from;
  if (!consultation.cached_from && !consultation.sent && call.request.is_object())
    call.request[kNotSent] = true;
  call.response = consultation.content;
  call.accepted = accepted && consultation.answered();
  if (!call.accepted) call.reject_reason = reject_reason.empty() ? consultation.error : reject_reason;
  return store_.append_llm_call(call);
}

}  // namespace autotune::orchestrator::llm
