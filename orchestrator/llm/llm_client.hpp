#pragma once
// A client for an OpenAI-compatible chat endpoint (POST {endpoint}/chat/completions).
//
// Contract:
//  - chat() never throws for anything the endpoint does: a server that is down,
//    slow, failing or answering garbage gives an LlmReply with an error kind and
//    a one-line reason, so a run without a usable LLM still completes.
//  - The API key is read from the environment variable named by api_key_env at
//    the moment of each call and only ever placed in the Authorization header.
//    It is not kept in the client, and nothing returned (request JSON, errors,
//    response body) contains it: a server that echoes it back has it replaced
//    by "<redacted>". Errors name the endpoint without user, password or query.
//  - Every call that reaches the network counts against max_calls; once spent,
//    chat() answers call_budget_exhausted without a request.
//  - chat() is thread-safe (one libcurl handle per call).
#include <atomic>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/config_reader.hpp"

namespace autotune::orchestrator::llm {

struct LlmConfig {
  std::string endpoint;     // base URL including the API prefix, e.g. "http://127.0.0.1:8080/v1"
  std::string model;        // sent as "model"
  std::string api_key_env;  // name of the environment variable holding the key; empty: no key is sent
  double timeout_s = 60.0;  // whole request, connection included
  int max_calls = 20;       // calls allowed over the client's lifetime
  double temperature = 0.2;
  // Kernel sources the LLM is asked for over a run (docs/llm.md); 0: next actions only.
  int kernel_sources = 0;
  // Generated sources are compiled and run in a sandbox (kernels/external/
  // sandbox.hpp); where none can be made they are refused unless this is set.
  bool allow_unsandboxed_sources = false;
};

// Reads a goal's `llm:` mapping: {endpoint, model, api_key_env, timeout_s,
// max_calls, temperature, kernel_sources, allow_unsandboxed_sources}; endpoint and model are required,
// unknown keys are rejected (UserError naming file, line and key).
LlmConfig parse_llm_config(ConfigReader& reader);

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

enum class LlmErrorKind {
  none,
  unreachable,            // cannot connect, connection reset, or no HTTP reply at all
  timeout,                // no complete reply within timeout_s
  http_error,             // an HTTP status other than 2xx (http_status says which)
  malformed_response,     // 2xx but not a chat completion (bad JSON, no choices[0].message.content)
  call_budget_exhausted,  // max_calls already made; nothing was sent
  missing_api_key,        // api_key_env names a variable that is not set; nothing was sent
};
std::string to_string(LlmErrorKind kind);

struct LlmReply {
  LlmErrorKind error_kind = LlmErrorKind::none;
  std::string error;      // one line when error_kind != none
  std::string content;    // choices[0].message.content
  int prompt_tokens = 0;  // from "usage" when the server reports it
  int completion_tokens = 0;
  double latency_ms = 0.0;
  long http_status = 0;  // 0 when no HTTP reply arrived
  std::string prompt_hash;
  nlohmann::json request;     // the body that was (or would have been) sent; never holds the key
  std::string response_body;  // raw body as received (first 1 MiB), for the llm_calls log

  bool ok() const { return error_kind == LlmErrorKind::none; }
};

// A stable cache key for a prompt: FNV-1a 64 over the canonical JSON of
// {model, temperature, messages}, as 16 lowercase hex digits. Holds no secret.
std::string prompt_hash(const std::string& model, double temperature,
                        const std::vector<ChatMessage>& messages);

class LlmClient {
 public:
  explicit LlmClient(LlmConfig config);

  // Waits at most max_wait_s or config().timeout_s, whichever is shorter.
  LlmReply chat(const std::vector<ChatMessage>& messages,
                double max_wait_s = std::numeric_limits<double>::infinity());

  const LlmConfig& config() const { return config_; }
  int calls_made() const { return calls_made_.load(); }
  // Counts calls sent before this client existed (by the run it resumes)
  // against max_calls.
  void count_earlier_calls(int calls) { calls_made_ += calls; }

 private:
  // One request with `key` (empty: none) in its Authorization header; fills
  // the reply's outcome, with the key scrubbed from what the server sent.
  void perform(LlmReply& reply, const std::string& key, double max_wait_s) const;

  LlmConfig config_;
  std::atomic<int> calls_made_{0};
};

// An OpenAI-style chat completion body: choices[0].message.content and the
// usage counts. `error` (one line) when the body is not one.
struct ChatCompletion {
  std::string content;
  int prompt_tokens = 0;
  int completion_tokens = 0;
  std::string error;
};
ChatCompletion parse_chat_completion(const std::string& body);

// The JSON object in a model's reply text. Models wrap JSON in ```json fences
// or surround it with prose; this accepts, in order: the whole text, the body
// of each fenced block, then each balanced {...} span in the text (strings and
// escapes respected). The first candidate that parses as an object wins.
struct ExtractedJson {
  std::optional<nlohmann::json> object;
  std::string error;  // why there is none: "the reply contains no JSON object", "...: <parse error>"
};
ExtractedJson extract_json_object(const std::string& text);

}  // namespace autotune::orchestrator::llm
