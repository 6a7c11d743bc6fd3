#include "orchestrator/llm/llm_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/hash.hpp"
#include "core/json_text.hpp"
#include "core/subprocess.hpp"
#include "kernels/external/sandbox.hpp"

namespace autotune::orchestrator::llm {
namespace {

constexpr std::size_t kMaxResponseBytes = 8u << 20;
constexpr std::size_t kKeptResponseBytes = 1u << 20;

void initialise_curl_once() {
  // curl_global_init is not thread-safe; every client goes through here first.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct ResponseSink {
  std::string body;
  bool too_large = false;
};

size_t write_body(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<ResponseSink*>(user);
  const size_t bytes = size * count;
  if (sink->body.size() + bytes > kMaxResponseBytes) {
    sink->too_large = true;
    return 0;  // aborts the transfer
  }
  sink->body.append(data, bytes);
  return bytes;
}

class CurlHeaders {
 public:
  ~CurlHeaders() { curl_slist_free_all(list_); }
  void add(const std::string& line) { list_ = curl_slist_append(list_, line.c_str()); }
  curl_slist* get() const { return list_; }

 private:
  curl_slist* list_ = nullptr;
};

// A short, one-line excerpt of an error body: the OpenAI-style error.message
// when present, otherwise the start of the body.
std::string error_excerpt(const std::string& body) {
  try {
    auto parsed = parse_json(body);
    if (parsed.is_object() && parsed.contains("error")) {
      const auto& e = parsed["error"];
      if (e.is_object() && e.contains("message") && e["message"].is_string()) {
        return one_line_tail(e["message"].get<std::string>().substr(0, 300), 300);
      }
      if (e.is_string()) return one_line_tail(e.get<std::string>().substr(0, 300), 300);
    }
  } catch (const nlohmann::json::exception&) {
  }
  return one_line_tail(body.substr(0, 200), 200);
}

using CurlUrl = std::unique_ptr<CURLU, decltype(&curl_url_cleanup)>;

std::string url_part(CURLU* url, CURLUPart part) {
  char* text = nullptr;
  if (curl_url_get(url, part, &text, 0) != CURLUE_OK || text == nullptr) return "";
  std::string out = text;
  curl_free(text);
  return out;
}

// The request URL: the endpoint's path with /chat/completions appended,
// its query (an api-version, say) kept after it.
std::string completions_url(const std::string& endpoint) {
  CurlUrl url(curl_url(), &curl_url_cleanup);
  if (curl_url_set(url.get(), CURLUPART_URL, endpoint.c_str(), 0) != CURLUE_OK) return endpoint;
  std::string path = url_part(url.get(), CURLUPART_PATH);
  while (!path.empty() && path.back() == '/') path.pop_back();
  path += "/chat/completions";
  curl_url_set(url.get(), CURLUPART_PATH, path.c_str(), 0);
  curl_url_set(url.get(), CURLUPART_FRAGMENT, nullptr, 0);
  return url_part(url.get(), CURLUPART_URL);
}

// The URL as errors name it: scheme, host, port and path. User, password
// and query are left out, since any of them may carry a credential, and an
// error reaches the terminal, the decision log and the report.
std::string displayed_url(const std::string& request_url) {
  CurlUrl url(curl_url(), &curl_url_cleanup);
  if (curl_url_set(url.get(), CURLUPART_URL, request_url.c_str(), 0) != CURLUE_OK) return "the endpoint";
  curl_url_set(url.get(), CURLUPART_USER, nullptr, 0);
  curl_url_set(url.get(), CURLUPART_PASSWORD, nullptr, 0);
  curl_url_set(url.get(), CURLUPART_OPTIONS, nullptr, 0);
  curl_url_set(url.get(), CURLUPART_QUERY, nullptr, 0);
  curl_url_set(url.get(), CURLUPART_FRAGMENT, nullptr, 0);
  return url_part(url.get(), CURLUPART_URL);
}

// Every occurrence of `secret` in `text` replaced: a server may echo the
// key it was sent ("Incorrect API key provided: ..."). Keys shorter than 8
// characters are not searched for, since they would match ordinary words.
void scrub(std::string& text, const std::string& secret) {
  if (secret.size() < 8) return;
  for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at))
    text.replace(at, secret.size(), "<redacted>");
}

// Whether a word of letters, digits and '_' reads as a token rather than a
// variable's name: names are words joined by '_' (OPENAI_API_KEY), while
// tokens of that alphabet (hf_..., ghp_..., gsk_...) hold a long random run.
// A run of 20 or more letters and digits mixing lower case, upper case and
// digits, or of 32 or more mixing letters and digits (hex), is taken as one.
bool looks_like_a_key(const std::string& word) {
  std::size_t at = 0;
  while (at < word.size()) {
    const auto end = std::min(word.find('_', at), word.size());
    bool lower = false, upper = false, digit = false;
    for (std::size_t i = at; i < end; ++i) {
      const auto c = static_cast<unsigned char>(word[i]);
      lower = lower || std::islower(c);
      upper = upper || std::isupper(c);
      digit = digit || std::isdigit(c);
    }
    const std::size_t run = end - at;
    if ((run >= 20 && lower && upper && digit) || (run >= 32 && (lower || upper) && digit)) return true;
    at = end + 1;
  }
  return false;
}

// Seconds as a person writes them: 0.3, 2.98, 60, 900.
std::string format_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, value < 1000 ? "%.3g" : "%.0f", value);
  return buffer;
}

}  // namespace

std::string to_string(LlmErrorKind kind) {
  switch (kind) {
    case LlmErrorKind::none:
      return "none";
    case LlmErrorKind::unreachable:
      return "unreachable";
    case LlmErrorKind::timeout:
      return "timeout";
    case LlmErrorKind::http_error:
      return "http_error";
    case LlmErrorKind::malformed_response:
      return "malformed_response";
    case LlmErrorKind::call_budget_exhausted:
      return "call_budget_exhausted";
    case LlmErrorKind::missing_api_key:
      return "missing_api_key";
  }
  return "unknown";
}

LlmConfig parse_llm_config(ConfigReader& reader) {
  LlmConfig config;
  config.endpoint = reader.required<std::string>("endpoint", "a base URL such as http://127.0.0.1:8080/v1");
  if (!config.endpoint.starts_with("http://") && !config.endpoint.starts_with("https://")) {
    reader.fail("endpoint", "'" + config.endpoint + "' is not an http:// or https:// URL", nullptr);
  }
  // libcurl parses it as it will when the first request is made: a URL without a host fails here.
  const CurlUrl url(curl_url(), &curl_url_cleanup);
  if (const CURLUcode parsed = curl_url_set(url.get(), CURLUPART_URL, config.endpoint.c_str(), 0);
      parsed != CURLUE_OK)
    reader.fail("endpoint", "'" + config.endpoint + "' is not a URL: " + curl_url_strerror(parsed), nullptr);
  config.model = reader.required<std::string>("model");
  if (config.model.empty())
    reader.fail("model", "must name the model the endpoint serves, e.g. qwen2.5-coder-32b");
  config.api_key_env = reader.optional<std::string>("api_key_env", "");
  // The goal is stored with the run: a key pasted here instead of a variable
  // name would be stored too. Refused, without echoing the value.
  const bool variable_name =
      config.api_key_env.empty() ||
      ((std::isalpha(static_cast<unsigned char>(config.api_key_env[0])) || config.api_key_env[0] == '_') &&
       std::all_of(config.api_key_env.begin(), config.api_key_env.end(),
                   [](unsigned char c) { return std::isalnum(c) || c == '_'; }) &&
       config.api_key_env.size() <= 128 && !looks_like_a_key(config.api_key_env));
  if (!variable_name)
    reader.fail("api_key_env",
                "must be the NAME of the environment variable that holds the key (letters, digits, _), "
                "not the key itself");
  config.timeout_s = reader.optional_seconds("timeout_s", config.timeout_s);
  config.max_calls = reader.optional<int>("max_calls", config.max_calls);
  if (config.max_calls < 0) reader.fail("max_calls", "must be 0 or more");
  config.temperature = reader.optional<double>("temperature", config.temperature);
  if (config.temperature < 0 || config.temperature > 2) reader.fail("temperature", "must be between 0 and 2");
  config.kernel_sources = reader.optional<int>("kernel_sources", config.kernel_sources);
  if (config.kernel_sources < 0) reader.fail("kernel_sources", "must be 0 or more");
  config.allow_unsandboxed_sources =
      reader.optional<bool>("allow_unsandboxed_sources", config.allow_unsandboxed_sources);
  if (config.kernel_sources > 0 && !config.allow_unsandboxed_sources) {
    if (const auto why = kernels::external::sandbox_unavailable())
      reader.fail("kernel_sources",
                  "generated kernel sources run in a sandbox, and " + *why +
                      " (scripts/setup.sh installs bubblewrap); or run them with your own privileges: "
                      "allow_unsandboxed_sources: true");
  }
  reader.finish({"endpoint", "model", "api_key_env", "timeout_s", "max_calls", "temperature",
                 "kernel_sources", "allow_unsandboxed_sources"});
  return config;
}

std::string prompt_hash(const std::string& model, double temperature,
                        const std::vector<ChatMessage>& messages) {
  nlohmann::json canonical = {
      {"model", model}, {"temperature", temperature}, {"messages", nlohmann::json::array()}};
  for (const auto& m : messages) canonical["messages"].push_back({{"role", m.role}, {"content", m.content}});
  const std::string text = canonical.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return stable_hash_hex(text);
}

LlmClient::LlmClient(LlmConfig config) : config_(std::move(config)) { initialise_curl_once(); }

LlmReply LlmClient::chat(const std::vector<ChatMessage>& messages, double max_wait_s) {
  LlmReply reply;
  reply.prompt_hash = prompt_hash(config_.model, config_.temperature, messages);
  reply.request = {
      {"model", config_.model}, {"temperature", config_.temperature}, {"messages", nlohmann::json::array()}};
  for (const auto& m : messages)
    reply.request["messages"].push_back({{"role", m.role}, {"content", m.content}});

  auto fail = [&](LlmErrorKind kind, std::string reason) {
    reply.error_kind = kind;
    reply.error = std::move(reason);
    return reply;
  };

  // The key is read now and kept only for this call: in the header list,
  // and to scrub from whatever the server sends back.
  std::string key;
  if (!config_.api_key_env.empty()) {
    const char* value = std::getenv(config_.api_key_env.c_str());
    if (value == nullptr || *value == '\0') {
      return fail(LlmErrorKind::missing_api_key,
                  "environment variable " + config_.api_key_env + " (api_key_env) is not set");
    }
    key = value;
  }
  if (calls_made_.fetch_add(1) >= config_.max_calls) {
    calls_made_.fetch_sub(1);
    return fail(LlmErrorKind::call_budget_exhausted,
                "the budget of " + std::to_string(config_.max_calls) + " LLM calls is spent");
  }
  perform(reply, key, max_wait_s);
  scrub(reply.error, key);
  std::fill(key.begin(), key.end(), '\0');
  return reply;
}

void LlmClient::perform(LlmReply& reply, const std::string& key, double max_wait_s) const {
  auto fail = [&](LlmErrorKind kind, std::string reason) {
    reply.error_kind = kind;
    reply.error = std::move(reason);
  };
  const std::string url = completions_url(config_.endpoint);
  const std::string body = reply.request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  CURL* curl = curl_easy_init();
  if (curl == nullptr) return fail(LlmErrorKind::unreachable, "cannot create an HTTP client handle");
  CurlHeaders headers;
  headers.add("Content-Type: application/json");
  headers.add("Accept: application/json");
  headers.add("Expect:");  // no 100-continue round trip for large prompts
  if (!key.empty()) {
    std::string authorization = "Authorization: Bearer " + key;
    headers.add(authorization);
    // The key now lives only in libcurl's header list, freed after the call.
    std::fill(authorization.begin(), authorization.end(), '\0');
  }

  ResponseSink sink;
  char curl_error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // required for timeouts in multi-threaded programs
  // 0 would mean "no timeout" to libcurl.
  const bool budget_limits = max_wait_s < config_.timeout_s;
  const double timeout_s = budget_limits ? std::max(0.0, max_wait_s) : config_.timeout_s;
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, std::max(1L, static_cast<long>(timeout_s * 1000.0)));
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);

  const auto start = std::chrono::steady_clock::now();
  const CURLcode code = curl_easy_perform(curl);
  reply.latency_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.http_status);
  curl_easy_cleanup(curl);
  scrub(sink.body, key);  // before it is cut, so no part of an echoed key is kept
  reply.response_body = sink.body.substr(0, kKeptResponseBytes);

  const std::string where = " (" + displayed_url(url) + ")";
  if (code != CURLE_OK) {
    const std::string detail = curl_error[0] != '\0' ? curl_error : curl_easy_strerror(code);
    if (code == CURLE_OPERATION_TIMEDOUT)
      return fail(LlmErrorKind::timeout,
                  "no reply within " + format_number(timeout_s) + " s" +
                      (budget_limits ? ", what was left of the run's wall-time budget" : "") + where);
    if (code == CURLE_WRITE_ERROR && sink.too_large)
      return fail(LlmErrorKind::malformed_response,
                  "the response is larger than " + std::to_string(kMaxResponseBytes >> 20) + " MiB" + where);
    return fail(LlmErrorKind::unreachable, one_line_tail(detail, 300) + where);
  }
  if (reply.http_status < 200 || reply.http_status >= 300) {
    const std::string excerpt = error_excerpt(sink.body);
    return fail(LlmErrorKind::http_error, "HTTP " + std::to_string(reply.http_status) +
                                              (excerpt.empty() ? "" : ": " + excerpt) + where);
  }

  ChatCompletion completion = parse_chat_completion(sink.body);
  if (!completion.error.empty()) return fail(LlmErrorKind::malformed_response, completion.error);
  reply.content = std::move(completion.content);
  reply.prompt_tokens = completion.prompt_tokens;
  reply.completion_tokens = completion.completion_tokens;
}

ChatCompletion parse_chat_completion(const std::string& body) {
  ChatCompletion out;
  nlohmann::json parsed;
  try {
    parsed = parse_json(body);
  } catch (const nlohmann::json::exception&) {
    out.error = "the response body is not JSON: '" + one_line_tail(body.substr(0, 120), 120) + "'";
    return out;
  }
  const nlohmann::json* content = nullptr;
  if (parsed.is_object() && parsed.contains("choices") && parsed["choices"].is_array() &&
      !parsed["choices"].empty()) {
    const auto& choice = parsed["choices"][0];
    if (choice.is_object() && choice.contains("message") && choice["message"].is_object() &&
        choice["message"].contains("content") && choice["message"]["content"].is_string()) {
      content = &choice["message"]["content"];
    }
  }
  if (content == nullptr) {
    out.error = "the response has no choices[0].message.content string";
    return out;
  }
  out.content = content->get<std::string>();
  // Token counts outside int's range are not counts; they are left at 0.
  auto count = [](const nlohmann::json& usage, const char* key) {
    if (!usage.contains(key) || !usage[key].is_number_integer()) return 0;
    const auto value = usage[key].get<std::int64_t>();
    return value >= 0 && value <= std::numeric_limits<int>::max() ? static_cast<int>(value) : 0;
  };
  if (parsed.contains("usage") && parsed["usage"].is_object()) {
    out.prompt_tokens = count(parsed["usage"], "prompt_tokens");
    out.completion_tokens = count(parsed["usage"], "completion_tokens");
  }
  return out;
}

ExtractedJson extract_json_object(const std::string& text) {
  ExtractedJson out;
  std::string first_parse_error;
  bool saw_non_object = false;
  auto attempt = [&](std::string_view candidate) {
    try {
      auto value = parse_json(candidate);
      if (value.is_object()) {
        out.object = std::move(value);
        return true;
      }
      saw_non_object = true;
    } catch (const nlohmann::json::exception& e) {
      if (first_parse_error.empty()) first_parse_error = e.what();
    }
    return false;
  };

  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) {
    out.error = "the reply is empty";
    return out;
  }
  if (text[begin] == '{' && attempt(text)) return out;

  // Fenced blocks: ``` or ```json (any info string) up to the closing ```.
  for (std::size_t open = text.find("```"); open != std::string::npos;) {
    const auto line_end = text.find('\n', open + 3);
    if (line_end == std::string::npos) break;
    const auto close = text.find("```", line_end + 1);
    if (close == std::string::npos) break;
    const std::string_view block(text.data() + line_end + 1, close - line_end - 1);
    if (block.find('{') != std::string_view::npos && attempt(block)) return out;
    open = text.find("```", close + 3);
  }

  // Balanced {...} spans, outermost first; a failed span is retried from its
  // next '{'. One pass pairs every brace (strings and escapes respected as seen
  // from the first '{'), so a reply of unclosed braces costs linear time, and
  // at most 64 spans are parsed.
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // (open, close), in order of open
  {
    std::vector<std::size_t> open;
    bool in_string = false, escaped = false;
    for (std::size_t i = text.find('{'); i != std::string::npos && i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (escaped)
          escaped = false;
        else if (c == '\\')
          escaped = true;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{') {
        open.push_back(i);
      } else if (c == '}' && !open.empty()) {
        spans.emplace_back(open.back(), i);
        open.pop_back();
      }
    }
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t k = 0; k < spans.size() && k < 64; ++k) {
    const auto [start, close] = spans[k];
    if (attempt(std::string_view(text.data() + start, close - start + 1))) return out;
  }

  if (!first_parse_error.empty()) {
    out.error = "the reply's JSON does not parse: " + one_line_tail(first_parse_error, 200);
  } else if (saw_non_object) {
    out.error = "the reply's JSON is not an object";
  } else {
    out.error = "the reply contains no JSON object";
  }
  return out;
}

}  // namespace autotune::orchestrator::llm
