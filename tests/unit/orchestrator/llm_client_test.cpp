#include "orchestrator/llm/llm_client.hpp"

#include <doctest/doctest.h>

#include <cstdlib>

#include "core/error.hpp"
#include "tests/support/fake_llm_server.hpp"

using namespace autotune;
using namespace autotune::orchestrator::llm;
using autotune::testing::FakeHttpRequest;
using autotune::testing::FakeHttpResponse;
using autotune::testing::FakeLlmServer;
using namespace std::chrono_literals;

namespace {

LlmConfig config_for(const std::string& endpoint) {
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);  // a proxy in the environment must not intercept the test
  LlmConfig config;
  config.endpoint = endpoint;
  config.model = "test-model";
  config.timeout_s = 2.0;
  return config;
}

const std::vector<ChatMessage> kPrompt = {{"system", "Answer in JSON."}, {"user", "Which variant next?"}};

}  // namespace

TEST_CASE("llm client returns content, token counts and status of a good reply") {
  FakeLlmServer server([](const FakeHttpRequest&) {
    return FakeLlmServer::reply_with("Here you go:\n```json\n{\"variant\": \"tiled\", \"tile\": 128}\n```\n");
  });
  LlmClient client(config_for(server.endpoint()));
  LlmReply reply = client.chat(kPrompt);
  REQUIRE_MESSAGE(reply.ok(), reply.error);
  CHECK(reply.http_status == 200);
  CHECK(reply.prompt_tokens == 11);
  CHECK(reply.completion_tokens == 7);
  CHECK(reply.latency_ms > 0);
  CHECK(reply.prompt_hash == prompt_hash("test-model", 0.2, kPrompt));
  auto extracted = extract_json_object(reply.content);
  REQUIRE_MESSAGE(extracted.object, extracted.error);
  CHECK((*extracted.object)["variant"] == "tiled");
  CHECK(client.calls_made() == 1);

  auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].method == "POST");
  CHECK(requests[0].target == "/v1/chat/completions");
  CHECK(requests[0].headers.count("authorization") == 0);  // no api_key_env: no key sent
  auto sent = nlohmann::json::parse(requests[0].body);
  CHECK(sent["model"] == "test-model");
  CHECK(sent["messages"][1]["content"] == "Which variant next?");
  CHECK(sent == reply.request);
}

TEST_CASE("llm client sends the key from the environment but never returns it") {
  const std::string secret = "sk-autotune-test-4f1c9e";
  ::setenv("AUTOTUNE_TEST_LLM_KEY", secret.c_str(), 1);
  FakeLlmServer server([](const FakeHttpRequest&) { return FakeLlmServer::reply_with("{\"ok\": true}"); });
  LlmConfig config = config_for(server.endpoint());
  config.api_key_env = "AUTOTUNE_TEST_LLM_KEY";
  LlmClient client(config);
  LlmReply reply = client.chat(kPrompt);
  REQUIRE_MESSAGE(reply.ok(), reply.error);

  auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].headers["authorization"] == "Bearer " + secret);
  CHECK(requests[0].body.find(secret) == std::string::npos);
  for (const std::string& returned : {reply.request.dump(), reply.response_body, reply.content, reply.error,
                                      reply.prompt_hash, client.config().api_key_env}) {
    CHECK(returned.find(secret) == std::string::npos);
  }
  ::unsetenv("AUTOTUNE_TEST_LLM_KEY");
  LlmReply without_key = client.chat(kPrompt);
  CHECK(without_key.error_kind == LlmErrorKind::missing_api_key);
  CHECK(without_key.error == "environment variable AUTOTUNE_TEST_LLM_KEY (api_key_env) is not set");
  CHECK(server.requests().size() == 1);
}

TEST_CASE("llm client scrubs a key the server echoes and names the endpoint without credentials") {
  const std::string secret = "sk-autotune-test-echoed-77aa";
  ::setenv("AUTOTUNE_TEST_LLM_KEY", secret.c_str(), 1);
  FakeLlmServer server([](const FakeHttpRequest& request) {
    const std::string echoed =
        request.headers.count("authorization") ? request.headers.at("authorization") : "";
    return FakeHttpResponse{401,
                            R"({"error": {"message": "Incorrect API key provided: )" + echoed + R"("}})"};
  });
  // User, password and a query secret in the endpoint; the query (an api-version) goes with the request.
  std::string endpoint = server.endpoint();
  endpoint.replace(endpoint.find("://"), 3, "://user:url-password@");
  LlmConfig config = config_for(endpoint + "?api-version=2024&api_key=query-secret");
  config.api_key_env = "AUTOTUNE_TEST_LLM_KEY";
  LlmClient client(config);
  const LlmReply reply = client.chat(kPrompt);
  ::unsetenv("AUTOTUNE_TEST_LLM_KEY");
  CHECK(reply.error_kind == LlmErrorKind::http_error);
  CHECK(reply.error.find("Incorrect API key provided: Bearer <redacted>") != std::string::npos);
  CHECK(reply.error.find("/v1/chat/completions)") != std::string::npos);
  for (const std::string& returned : {reply.error, reply.response_body}) {
    CAPTURE(returned);
    for (const std::string& hidden : {secret, std::string("url-password"), std::string("query-secret")})
      CHECK(returned.find(hidden) == std::string::npos);
  }
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].target == "/v1/chat/completions?api-version=2024&api_key=query-secret");
}

TEST_CASE("llm client waits no longer than what is left of the run's wall time") {
  FakeHttpResponse late = FakeLlmServer::reply_with("{}");
  late.delay = 3s;
  FakeLlmServer server([&](const FakeHttpRequest&) { return late; });
  LlmClient client(config_for(server.endpoint()));  // timeout_s 2
  const LlmReply reply = client.chat(kPrompt, 0.3);
  CHECK(reply.error_kind == LlmErrorKind::timeout);
  CHECK(reply.error.starts_with("no reply within 0.3 s, what was left of the run's wall-time budget"));
}

TEST_CASE("llm client reports an endpoint that is down") {
  LlmClient client(config_for("http://127.0.0.1:" + std::to_string(FakeLlmServer::closed_port()) + "/v1"));
  LlmReply reply = client.chat(kPrompt);
  CHECK(reply.error_kind == LlmErrorKind::unreachable);
  CHECK(reply.error.find("/v1/chat/completions") != std::string::npos);
  CHECK(reply.error.find('\n') == std::string::npos);
  CHECK(reply.http_status == 0);
}

TEST_CASE("llm client times out a slow endpoint") {
  FakeLlmServer server([](const FakeHttpRequest&) {
    FakeHttpResponse late = FakeLlmServer::reply_with("{}");
    late.delay = 3s;
    return late;
  });
  LlmConfig config = config_for(server.endpoint());
  config.timeout_s = 0.3;
  LlmClient client(config);
  LlmReply reply = client.chat(kPrompt);
  CHECK(reply.error_kind == LlmErrorKind::timeout);
  CHECK(reply.error.starts_with("no reply within 0.3 s"));
}

TEST_CASE("llm client reports an HTTP error with the server's message") {
  FakeLlmServer server([](const FakeHttpRequest&) {
    return FakeHttpResponse{500, R"({"error": {"message": "model overloaded", "type": "server_error"}})"};
  });
  LlmClient client(config_for(server.endpoint()));
  LlmReply reply = client.chat(kPrompt);
  CHECK(reply.error_kind == LlmErrorKind::http_error);
  CHECK(reply.http_status == 500);
  CHECK(reply.error == "HTTP 500: model overloaded (" + server.endpoint() + "/chat/completions)");
}

TEST_CASE("llm client reports a malformed response body") {
  int call = 0;
  FakeLlmServer server([&call](const FakeHttpRequest&) {
    ++call;
    if (call == 1) return FakeHttpResponse{200, "{\"choices\": [ this is not json"};
    return FakeHttpResponse{200, R"({"choices": []})"};
  });
  LlmClient client(config_for(server.endpoint()));
  LlmReply not_json = client.chat(kPrompt);
  CHECK(not_json.error_kind == LlmErrorKind::malformed_response);
  CHECK(not_json.error == "the response body is not JSON: '{\"choices\": [ this is not json'");
  LlmReply no_choice = client.chat(kPrompt);
  CHECK(no_choice.error_kind == LlmErrorKind::malformed_response);
  CHECK(no_choice.error == "the response has no choices[0].message.content string");
}

TEST_CASE("llm client treats a number beyond a double's range as a malformed body") {
  FakeLlmServer server([](const FakeHttpRequest&) {
    return FakeHttpResponse{
        200, R"({"choices": [{"message": {"content": "{}"}}], "usage": {"prompt_tokens": 1e999}})"};
  });
  LlmClient client(config_for(server.endpoint()));
  LlmReply reply = client.chat(kPrompt);
  CHECK(reply.error_kind == LlmErrorKind::malformed_response);
  CHECK(reply.error.starts_with("the response body is not JSON"));
}

TEST_CASE("a valid reply whose content is not JSON is found out by extract_json_object") {
  FakeLlmServer server([](const FakeHttpRequest&) {
    return FakeLlmServer::reply_with("I would try a larger tile size next.");
  });
  LlmClient client(config_for(server.endpoint()));
  LlmReply reply = client.chat(kPrompt);
  REQUIRE(reply.ok());
  auto extracted = extract_json_object(reply.content);
  CHECK_FALSE(extracted.object);
  CHECK(extracted.error == "the reply contains no JSON object");
}

TEST_CASE("llm client stops at its call budget") {
  FakeLlmServer server([](const FakeHttpRequest&) { return FakeLlmServer::reply_with("{}"); });
  LlmConfig config = config_for(server.endpoint());
  config.max_calls = 2;
  LlmClient client(config);
  CHECK(client.chat(kPrompt).ok());
  CHECK(client.chat(kPrompt).ok());
  LlmReply third = client.chat(kPrompt);
  CHECK(third.error_kind == LlmErrorKind::call_budget_exhausted);
  CHECK(third.error == "the budget of 2 LLM calls is spent");
  CHECK(server.requests().size() == 2);
}

TEST_CASE("prompt_hash is stable and depends on model, temperature and every message") {
  const std::string h = prompt_hash("m", 0.2, kPrompt);
  CHECK(h.size() == 16);
  CHECK(h == prompt_hash("m", 0.2, kPrompt));
  CHECK(h != prompt_hash("other", 0.2, kPrompt));
  CHECK(h != prompt_hash("m", 0.7, kPrompt));
  auto changed = kPrompt;
  changed[1].content += " ";
  CHECK(h != prompt_hash("m", 0.2, changed));
  auto swapped = kPrompt;
  swapped[0].role = "user";
  CHECK(h != prompt_hash("m", 0.2, swapped));
}

TEST_CASE("extract_json_object finds an object in prose and fences") {
  CHECK((*extract_json_object("  {\"a\": 1}  ").object)["a"] == 1);
  CHECK((*extract_json_object("```\n{\"a\": 2}\n```").object)["a"] == 2);
  CHECK((*extract_json_object("Sure! {\"a\": \"}{\", \"b\": {\"c\": 3}} hope this helps").object)["b"]["c"] ==
        3);
  CHECK((*extract_json_object("first {not json} then {\"a\": 4}").object)["a"] == 4);
  CHECK((*extract_json_object("```python\nx = 1\n```\n```json\n{\"a\": 5}\n```").object)["a"] == 5);

  auto broken = extract_json_object("```json\n{\"a\": 1,}\n```");
  CHECK_FALSE(broken.object);
  CHECK(broken.error.starts_with("the reply's JSON does not parse: "));
  CHECK(extract_json_object("[1, 2]").error == "the reply contains no JSON object");
  CHECK(extract_json_object("").error == "the reply is empty");
  // Unclosed braces before the object, nested objects after a failed span.
  CHECK((*extract_json_object(std::string(100000, '{') + "{\"a\": 6}").object)["a"] == 6);
  CHECK((*extract_json_object("{ {\"b\": {\"c\": 7}}").object)["b"]["c"] == 7);
  CHECK(extract_json_object("x" + std::string(100000, '{')).error == "the reply contains no JSON object");
  auto overflow = extract_json_object("```json\n{\"tile\": 1e999}\n```");
  CHECK_FALSE(overflow.object);
  CHECK(overflow.error.starts_with("the reply's JSON does not parse: "));
}

TEST_CASE("parse_llm_config reads the goal's llm mapping strictly") {
  YAML::Node node = YAML::Load(
      "llm: {endpoint: 'http://localhost:8080/v1', model: qwen, api_key_env: KEY, "
      "timeout_s: 5, max_calls: 3}\n");
  ConfigReader goal(node, "goal.yaml");
  auto section = goal.child("llm");
  LlmConfig config = parse_llm_config(section);
  CHECK(config.endpoint == "http://localhost:8080/v1");
  CHECK(config.model == "qwen");
  CHECK(config.api_key_env == "KEY");
  CHECK(config.timeout_s == 5.0);
  CHECK(config.max_calls == 3);
  CHECK(config.temperature == doctest::Approx(0.2));

  ConfigReader typo(YAML::Load("llm: {endpoint: 'http://x/v1', model: m, api_key: sk-1}\n"), "goal.yaml");
  auto typo_section = typo.child("llm");
  CHECK_THROWS_WITH_AS(parse_llm_config(typo_section),
                       "goal.yaml:1: llm.api_key: unknown key (did you mean api_key_env?); accepted: "
                       "endpoint, model, api_key_env, timeout_s, "
                       "max_calls, temperature, kernel_sources, allow_unsandboxed_sources",
                       UserError);
  ConfigReader bad_url(YAML::Load("llm: {endpoint: 'localhost:8080', model: m}\n"), "goal.yaml");
  auto bad_section = bad_url.child("llm");
  CHECK_THROWS_AS(parse_llm_config(bad_section), UserError);
  // Tokens of a variable name's alphabet (Hugging Face, GitHub, hex) are keys, not names.
  for (const char* token :
       {"hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "ghp_0123456789abcdefABCDEF0123456789abcd",
        "deadbeef0123456789abcdef0123456789ab"}) {
    CAPTURE(token);
    ConfigReader reader(
        YAML::Load(std::string("llm: {endpoint: 'http://x/v1', model: m, api_key_env: ") + token + "}\n"),
        "goal.yaml");
    auto llm = reader.child("llm");
    try {
      parse_llm_config(llm);
      FAIL("a token must be refused as api_key_env");
    } catch (const UserError& e) {
      CHECK(std::string(e.what()).find(token) == std::string::npos);
    }
  }
  for (const char* name :
       {"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY_v2", "hf_token", "MY_COMPANY_LLM_KEY_2024"}) {
    CAPTURE(name);
    ConfigReader reader(
        YAML::Load(std::string("llm: {endpoint: 'http://x/v1', model: m, api_key_env: ") + name + "}\n"),
        "goal.yaml");
    auto llm = reader.child("llm");
    CHECK(parse_llm_config(llm).api_key_env == name);
  }
  // What the first request would find out, found when the goal is read.
  const std::pair<const char*, const char*> refused[] = {
      {"llm: {endpoint: 'http://', model: m}\n", "llm.endpoint: 'http://' is not a URL"},
      {"llm: {endpoint: 'http://x/v1', model: ''}\n", "llm.model: must name the model"},
      {"llm: {endpoint: 'http://x/v1', model: m, timeout_s: 1e300}\n",
       "llm.timeout_s: 1e+300 is out of range; accepted: a positive number of seconds, at most 10000000"},
  };
  for (const auto& [text, needle] : refused) {
    CAPTURE(text);
    ConfigReader reader(YAML::Load(text), "goal.yaml");
    auto llm = reader.child("llm");
    CHECK_THROWS_WITH_AS(parse_llm_config(llm), doctest::Contains(needle), UserError);
  }
}
