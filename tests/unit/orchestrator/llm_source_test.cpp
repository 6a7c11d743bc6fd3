// Kernel sources from the LLM: compiled, verified and measured through the
// kernel worker (needs the autotune executable beside the test binaries).
#include <doctest/doctest.h>

#include <cstdlib>

#include "orchestrator/llm/llm_policy.hpp"
#include "orchestrator/llm/llm_source_proposer.hpp"
#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "tests/support/fake_llm_server.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using namespace autotune::orchestrator::llm;
using autotune::testing::FakeHttpRequest;
using autotune::testing::FakeLlmServer;
using autotune::testing::TempDir;

namespace {

std::string goal_text(const std::string& endpoint) {
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  return "name: llm-source-unit\n"
         "kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}\n"
         "goal: {improvement: 0.95}\n"
         "max_iterations: 1\n"
         "budget: {evaluations: 4, wall_time_s: 120}\n"
         "search: {strategy: random, batch_size: 2}\n"
         "start: {variant: tiled}\n"
         "llm: {endpoint: \"" +
         endpoint + "\", model: src-model, timeout_s: 5, max_calls: 4, kernel_sources: 1}\n";
}

// The current best source the prompt carries (the first ```cpp block after "standalone").
std::string best_source_in(const FakeHttpRequest& request) {
  const auto body = nlohmann::json::parse(request.body);
  const std::string user = body["messages"][1]["content"];
  const auto marker = user.find("standalone kernel source:\n```cpp\n");
  if (marker == std::string::npos) return "";
  const auto start = user.find('\n', user.find("```cpp", marker)) + 1;
  return user.substr(start, user.find("```", start) - start);
}

bool asks_for_source(const FakeHttpRequest& request) {
  const auto body = nlohmann::json::parse(request.body);
  return body["messages"][0]["content"].get<std::string>().starts_with("You write kernels");
}

struct SourceRun {
  std::vector<store::Decision> source_decisions;
  std::vector<store::Trial> trials;
  std::vector<store::LlmCall> calls;
  std::string status;
};

SourceRun run_with(const std::function<std::string(const std::string& best)>& source_reply) {
  TempDir dir;
  ::setenv("AUTOTUNE_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  FakeLlmServer server([&](const FakeHttpRequest& request) {
    if (asks_for_source(request)) return FakeLlmServer::reply_with(source_reply(best_source_in(request)));
    return FakeLlmServer::reply_with(R"({"idea": "none"})");
  });
  auto prepared = orchestrator::load_and_prepare(dir.write("goal.yaml", goal_text(server.endpoint())));
  auto store = store::open_store(":memory:");
  orchestrator::RunContext context{prepared.goal, prepared.setup.catalog,           *prepared.setup.target,
                                   *store,        prepared.setup.simulator_version, {}};
  SourceRun out;
  const auto summary = orchestrator::Orchestrator(context).run();
  out.status = summary.status;
  out.source_decisions = store->decisions(summary.run_id, std::string("kernel_generator"));
  std::erase_if(out.source_decisions, [](const auto& d) { return d.action != "propose_source"; });
  out.trials = store->trials(summary.run_id);
  out.calls = store->llm_calls(summary.run_id);
  return out;
}

}  // namespace

TEST_CASE("an LLM kernel source that compiles and verifies is measured as a trial of its own") {
  const auto run = run_with([](const std::string& best) {
    REQUIRE_FALSE(best.empty());
    nlohmann::json reply = {{"source", best}, {"rationale", "same as the best"}};
    return reply.dump();
  });
  CHECK(run.status == "completed");
  REQUIRE(run.source_decisions.size() == 1);
  const auto& decision = run.source_decisions.front();
  CHECK_MESSAGE(decision.proposer == "llm:src-model", decision.rationale);
  CHECK(decision.evidence["kernel"]["status"] == "ok");
  const auto kernel = decision.evidence["kernel"]["name"].get<std::string>();
  bool found = false;
  for (const auto& t : run.trials)
    if (t.variant == kernel) {
      found = true;
      CHECK(t.status == Outcome::ok);
      CHECK(t.decision_seq == decision.seq);
      CHECK(t.verification.is_object());
      CHECK(t.metric("latency_s").has_value());
    }
  CHECK(found);
  bool accepted = false;
  for (const auto& call : run.calls)
    accepted = accepted || (call.accepted && call.response.find("AUTOTUNE_USER_KERNEL") != std::string::npos);
  CHECK(accepted);
}

TEST_CASE("an LLM kernel source that does not compile, or is not a source, is rejected with the reason") {
  const auto broken =
      run_with([](const std::string& best) { return "```cpp\n" + best + "\nthis is not C++;\n```"; });
  CHECK(broken.status == "completed");
  REQUIRE(broken.source_decisions.size() == 1);
  CHECK(broken.source_decisions.front().proposer == "rules");
  CHECK(broken.source_decisions.front().rationale.find("does not build") != std::string::npos);
  // A failed candidate like any other: a trial holding the compiler's message, named in the decision's
  // outcome.
  std::vector<store::Trial> failed;
  for (const auto& t : broken.trials)
    if (t.decision_seq == broken.source_decisions.front().seq) failed.push_back(t);
  REQUIRE(failed.size() == 1);
  CHECK(failed.front().status == Outcome::failed);
  CHECK(failed.front().error.starts_with("compilation failed: "));
  CHECK(failed.front().error.find("error") != std::string::npos);
  CHECK(failed.front().error.find('\n') != std::string::npos);  // the compiler's message follows the reason
  CHECK(broken.source_decisions.front().outcome ==
        "rejected; recorded as failed trial " + std::to_string(failed.front().id));
  CHECK(broken.source_decisions.front().evidence["kernel"]["status"] == "failed");

  const auto prose = run_with([](const std::string&) { return "Use bigger tiles."; });
  REQUIRE(prose.source_decisions.size() == 1);
  CHECK(prose.source_decisions.front().rationale.find("holds no kernel source") != std::string::npos);
  bool logged = false;
  for (const auto& call : prose.calls)
    logged = logged || call.reject_reason.find("holds no kernel source") != std::string::npos;
  CHECK(logged);
}
