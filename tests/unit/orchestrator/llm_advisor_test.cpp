#include "orchestrator/llm/llm_advisor.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "orchestrator/llm/llm_policy.hpp"
#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "tests/support/fake_llm_server.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using namespace autotune::orchestrator::llm;
using autotune::testing::FakeHttpRequest;
using autotune::testing::FakeHttpResponse;
using autotune::testing::FakeLlmServer;
using autotune::testing::TempDir;

namespace {

// A small GEMM goal (quickstart's kernel) with an `llm:` section.
std::string goal_text(const std::string& endpoint, const std::string& extra_llm = "") {
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  return "name: llm-unit\n"
         "kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}\n"
         "goal: {improvement: 0.95}\n"
         "max_iterations: 2\n"
         "budget: {evaluations: 8, wall_time_s: 60}\n"
         "search: {strategy: random, batch_size: 2}\n"
         "start: {variant: tiled}\n"
         "seed: 3\n"
         "llm: {endpoint: \"" +
         endpoint + "\", model: unit-model, timeout_s: 2, max_calls: 4" + extra_llm + "}\n";
}

orchestrator::PreparedGoal prepare(const TempDir& dir, const std::string& text) {
  return orchestrator::load_and_prepare(dir.write("goal.yaml", text));
}

const std::string kGoodRegion =
    R"({"variant": "hoisted", "region": {"tile_n": [256, 512], "pipeline_depth": {"min": 2, "max": 3}}, "rationale": "hoisting removes reloads"})";

struct RunRecord {
  orchestrator::RunSummary summary;
  std::vector<store::Decision> policy_decisions;
  std::vector<store::LlmCall> calls;
};

RunRecord run_goal(orchestrator::PreparedGoal& prepared, store::Store& store) {
  orchestrator::RunContext context{prepared.goal, prepared.setup.catalog,           *prepared.setup.target,
                                   store,         prepared.setup.simulator_version, {}};
  RunRecord out;
  out.summary = orchestrator::Orchestrator(context).run();
  for (const auto& d : store.decisions(out.summary.run_id, std::string("orchestrator")))
    if (d.action.starts_with("try:") || d.action == "stop") out.policy_decisions.push_back(d);
  out.calls = store.llm_calls(out.summary.run_id);
  return out;
}

}  // namespace

TEST_CASE("validate_next_action accepts known variants, parameters and values and names what is wrong") {
  TempDir dir;
  auto prepared = prepare(dir, goal_text("http://127.0.0.1:9/v1"));
  const auto& catalog = prepared.setup.catalog;
  skills::Idea listed;
  listed.id = "raise:pipeline_depth";
  listed.kind = "raise";
  listed.variant = "tiled";
  const std::vector<skills::Idea> ideas = {listed};

  auto good = validate_next_action("Sure:\n```json\n" + kGoodRegion + "\n```", catalog, ideas);
  REQUIRE_MESSAGE(good.action, good.reject_reason);
  REQUIRE(good.action->new_idea);
  CHECK(good.action->new_idea->variant == "hoisted");
  CHECK(good.action->new_idea->kind == "llm");
  CHECK(good.action->new_idea->region.at("tile_n").size() == 2);
  CHECK(good.action->new_idea->region.at("pipeline_depth").size() == 2);  // {min 2, max 3} of {1, 2, 3}
  CHECK(good.action->rationale == "hoisting removes reloads");

  auto by_id = validate_next_action(R"({"idea": "raise:pipeline_depth"})", catalog, ideas);
  REQUIRE(by_id.action);
  CHECK(by_id.action->idea == 0u);
  CHECK_FALSE(by_id.action->new_idea);

  auto whole_variant = validate_next_action(R"({"variant": "tiled"})", catalog, ideas);
  REQUIRE(whole_variant.action);
  CHECK(whole_variant.action->new_idea->region.empty());

  struct Bad {
    std::string reply;
    std::string reason;
  };
  const Bad bad[] = {
      {"I think you should raise the tile size.", "malformed reply: the reply contains no JSON object"},
      {R"({"variant": "tiled", "region": {"tile_m": [64, )", "malformed reply"},
      {R"({"variant": "blocked_magic"})", "unknown variant 'blocked_magic'; accepted: tiled"},
      {R"({"variant": "tiled", "region": {"tile_q": [64]}})",
       "unknown parameter 'tile_q' of variant 'tiled'"},
      {R"({"variant": "tiled", "region": {"tile_m": [64, 96]}})",
       "value 96 is not in the domain of 'tile_m' in variant 'tiled': [32, 64, 128]"},
      {R"({"variant": "tiled", "region": {"tile_m": []}})", "is empty"},
      {R"({"variant": "tiled", "region": {"tile_m": {"min": 200}}})", "no value of 'tile_m'"},
      {R"({"idea": "raise:nothing"})", "unknown idea 'raise:nothing'; listed: raise:pipeline_depth"},
      {R"({"action": "go faster"})", "names neither an 'idea' nor a 'variant'"},
  };
  for (const auto& b : bad) {
    CAPTURE(b.reply);
    auto result = validate_next_action(b.reply, catalog, ideas);
    CHECK_FALSE(result.action);
    CHECK_MESSAGE(result.reject_reason.find(b.reason) != std::string::npos, result.reject_reason);
  }
}

TEST_CASE("the goal's llm section is validated and an api key pasted as api_key_env is refused unechoed") {
  TempDir dir;
  auto prepared = prepare(dir, goal_text("http://127.0.0.1:9/v1", ", api_key_env: MY_KEY_VAR"));
  REQUIRE(prepared.goal.llm_config);
  CHECK(prepared.goal.llm_config->model == "unit-model");
  CHECK(prepared.goal.llm_config->max_calls == 4);
  CHECK(prepared.goal.llm_config->api_key_env == "MY_KEY_VAR");

  const std::string pasted = "sk-live-0123456789abcdef";
  try {
    prepare(dir, goal_text("http://127.0.0.1:9/v1", ", api_key_env: " + pasted));
    FAIL("a key in api_key_env must be refused");
  } catch (const UserError& e) {
    const std::string message = e.what();
    CHECK(message.find("llm.api_key_env") != std::string::npos);
    CHECK(message.find(pasted) == std::string::npos);
  }
  CHECK_THROWS_WITH_AS(prepare(dir, goal_text("ftp://host/v1")), doctest::Contains("llm.endpoint"),
                       UserError);
  CHECK_THROWS_WITH_AS(prepare(dir, goal_text("http://127.0.0.1:9/v1", ", temperture: 1")),
                       doctest::Contains("temperture"), UserError);
}

TEST_CASE("an accepted LLM answer steers the run, and a replay with the endpoint down reproduces it") {
  TempDir dir;
  auto store = store::open_store((dir.path() / "runs.db").string());
  std::vector<store::Decision> first_decisions;
  {
    FakeLlmServer server([](const FakeHttpRequest&) { return FakeLlmServer::reply_with(kGoodRegion); });
    auto prepared = prepare(dir, goal_text(server.endpoint()));
    const auto first = run_goal(prepared, *store);
    CHECK(first.summary.status == "completed");
    REQUIRE_FALSE(first.calls.empty());
    CHECK(first.calls.front().accepted);
    CHECK(first.calls.front().model == "unit-model");
    CHECK(first.calls.front().response == kGoodRegion);
    CHECK(first.calls.front().prompt_tokens == 11);
    REQUIRE_FALSE(first.policy_decisions.empty());
    const auto& steered = first.policy_decisions.front();
    CHECK(steered.proposer == "llm:unit-model");
    CHECK(steered.action == "try:llm");
    CHECK(steered.evidence["llm"]["status"] == "accepted");
    // The hoisted variant was measured because the LLM named it.
    bool hoisted = false;
    for (const auto& t : store->trials(first.summary.run_id)) hoisted = hoisted || t.variant == "hoisted";
    CHECK(hoisted);
    // The prompt carried the catalog and the findings.
    const auto requests = server.requests();
    REQUIRE_FALSE(requests.empty());
    const auto body = nlohmann::json::parse(requests.front().body);
    const std::string user = body["messages"][1]["content"];
    CHECK(user.find("\"hoisted\"") != std::string::npos);
    CHECK(user.find("pipeline_depth") != std::string::npos);
    CHECK(user.find("analysis_of_best") != std::string::npos);
    first_decisions = first.policy_decisions;
  }
  // Same goal and seed, nothing listening: every answer comes from the cache.
  auto prepared =
      prepare(dir, goal_text("http://127.0.0.1:" + std::to_string(FakeLlmServer::closed_port()) + "/v1"));
  const auto second = run_goal(prepared, *store);
  CHECK(second.summary.status == "completed");
  REQUIRE(second.policy_decisions.size() == first_decisions.size());
  for (std::size_t i = 0; i < first_decisions.size(); ++i) {
    CHECK(second.policy_decisions[i].proposer == first_decisions[i].proposer);
    CHECK(second.policy_decisions[i].action == first_decisions[i].action);
    CHECK(second.policy_decisions[i].rationale == first_decisions[i].rationale);
  }
  for (const auto& call : second.calls) {
    CHECK(call.request.contains("autotune_cached_from_call"));
    CHECK(call.latency_ms == 0);
  }
  CHECK(second.policy_decisions.front().evidence["llm"]["source"] == "cache");
}

TEST_CASE("rejected, failed and over-budget consultations fall back to the rules and are logged") {
  TempDir dir;
  auto store = store::open_store(":memory:");
  int served = 0;
  FakeLlmServer server([&](const FakeHttpRequest&) {
    ++served;
    if (served == 1) return FakeHttpResponse{500, R"({"error": {"message": "model overloaded"}})"};
    return FakeLlmServer::reply_with(R"({"variant": "tiled", "region": {"tile_m": [96]}})");
  });
  auto prepared = prepare(dir, goal_text(server.endpoint()));
  prepared.goal.max_iterations = 3;
  prepared.goal.llm_config->max_calls = 2;
  const auto run = run_goal(prepared, *store);
  CHECK(run.summary.status == "completed");
  REQUIRE(run.calls.size() == 2);  // max_calls
  CHECK_FALSE(run.calls[0].accepted);
  CHECK(run.calls[0].reject_reason.find("http_error: HTTP 500: model overloaded") == 0);
  CHECK(run.calls[0].response.empty());
  CHECK_FALSE(run.calls[1].accepted);
  CHECK(run.calls[1].reject_reason.find("value 96 is not in the domain of 'tile_m'") != std::string::npos);
  for (const auto& d : run.policy_decisions) {
    CHECK(d.proposer == "rules");
    if (d.action != "stop") CHECK(d.rationale.find("the LLM's answer was not used") != std::string::npos);
  }
  if (run.policy_decisions.size() >= 3) CHECK(run.policy_decisions[2].evidence["llm"]["status"] == "skipped");
  CHECK(server.requests().size() == 2);
}

TEST_CASE("a resumed run replays its own consultations, answered or not, and counts the calls it sent") {
  TempDir dir;
  auto store = store::open_store(":memory:");
  store::Run record;
  record.goal_name = "resumed";
  const int64_t run = store->create_run(record);
  const std::vector<ChatMessage> asked = {{"system", "Answer in JSON."}, {"user", "Which variant next?"}};
  const std::vector<ChatMessage> next = {{"system", "Answer in JSON."}, {"user", "And then?"}};

  LlmConfig config;
  config.model = "unit-model";
  config.timeout_s = 2;
  config.max_calls = 1;
  int64_t logged = 0;
  {
    FakeLlmServer down([](const FakeHttpRequest&) { return FakeHttpResponse{503, "busy"}; });
    config.endpoint = down.endpoint();
    LlmAdvisor first(config, *store);
    const Consultation failed = first.consult(run, asked);
    CHECK(failed.source == Consultation::Source::endpoint);
    CHECK_FALSE(failed.answered());
    logged = first.record(run, failed, false, "");
  }
  // The endpoint has come back; the run is resumed in a new process.
  FakeLlmServer up([](const FakeHttpRequest&) { return FakeLlmServer::reply_with(kGoodRegion); });
  config.endpoint = up.endpoint();
  LlmAdvisor resumed(config, *store);
  const Consultation replayed = resumed.consult(run, asked);
  CHECK(replayed.source == Consultation::Source::replay);
  CHECK_FALSE(replayed.answered());  // as the run found it: the decision it took stands
  CHECK(replayed.error.find("HTTP 503") != std::string::npos);
  CHECK(resumed.record(run, replayed, false, "") == logged);
  CHECK(store->llm_calls(run).size() == 1);
  // The one call max_calls allows was sent before the resume.
  CHECK(resumed.consult(run, next).source == Consultation::Source::skipped);
  CHECK(up.requests().empty());
}
