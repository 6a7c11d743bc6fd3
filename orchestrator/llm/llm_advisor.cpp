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
  }
  return "unknown";
}

LlmAdvisor::LlmAdvisor(LlmConfig config, store::Store& store) : client_(std::move(config)), store_(store) {}

Consultation LlmAdvisor::consult(const std::vector<ChatMessage>& messages) {
  Consultation out;
  const LlmConfig& config = client_.config();
  out.prompt_hash = prompt_hash(config.model, config.temperature, messages);
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
  LlmReply reply = client_.chat(messages);
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
    call.request["autotune_cached_from_call"] = *consultation.cached_from;
  call.response = consultation.content;
  call.accepted = accepted && consultation.answered();
  if (!call.accepted) call.reject_reason = reject_reason.empty() ? consultation.error : reject_reason;
  return store_.append_llm_call(call);
}

}  // namespace autotune::orchestrator::llm
