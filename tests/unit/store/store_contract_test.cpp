// The Store contract (store/store.hpp), run against every implementation:
// SQLite on a file and in memory here, PostgreSQL in the postgres_store tests.
#include <doctest/doctest.h>

#include <set>
#include <thread>

#include "core/error.hpp"
#include "store_fixtures.hpp"

using namespace autotune;
using namespace autotune::store;
using namespace autotune::store::testing;

// The PostgreSQL build of this file (tests/CMakeLists.txt) defines its own.
#ifndef STORE_FIXTURES
#define STORE_FIXTURES FileStoreFixture, MemoryStoreFixture
#else
#include "postgres_fixture.hpp"
#endif

TEST_CASE_TEMPLATE("contract: runs round-trip every field and update in place", Fixture, STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  Run run = sample_run();
  run.seed = 0xFEDCBA9876543210ULL;  // above INT64_MAX: stored as its bit pattern
  run.summary = {{"note", "ünïcode"}, {"nested", {{"a", Json::array({1, 2.5, nullptr})}}}};
  const int64_t id = store.create_run(run);
  CHECK(id > 0);

  auto loaded = store.run(id);
  REQUIRE(loaded);
  CHECK(loaded->id == id);
  CHECK(loaded->goal_yaml == run.goal_yaml);
  CHECK(loaded->goal_name == "gemm-article");
  CHECK(loaded->seed == run.seed);
  CHECK(loaded->status == RunStatus::running);
  CHECK(loaded->summary == run.summary);
  CHECK_FALSE(loaded->best_trial);
  CHECK(loaded->created.size() == 24);  // 2026-11-22T05:03:28.123Z
  CHECK(loaded->created.back() == 'Z');

  std::vector<Trial> trials{sample_trial(id, std::nullopt, "tiled", 32, Outcome::ok, 1e-3)};
  store.commit_trials(trials);
  loaded->status = RunStatus::interrupted;
  loaded->stop_reason = "killed";
  loaded->best_trial = trials[0].id;
  loaded->goal_met = true;
  store.update_run(*loaded);
  auto updated = store.run(id);
  REQUIRE(updated);
  CHECK(updated->status == RunStatus::interrupted);
  CHECK(updated->stop_reason == "killed");
  CHECK(updated->best_trial == trials[0].id);
  CHECK(updated->goal_met);
  CHECK(updated->created == loaded->created);
  CHECK(updated->updated >= loaded->updated);

  const int64_t second = store.create_run(sample_run("exp"));
  auto all = store.runs();
  REQUIRE(all.size() == 2);
  CHECK(all[0].id == id);
  CHECK(all[1].id == second);
  CHECK_FALSE(store.run(second + 100));

  Run ghost = sample_run();
  ghost.id = second + 100;
  CHECK_THROWS_AS(store.update_run(ghost), InternalError);
}

TEST_CASE_TEMPLATE("contract: decision seq is assigned per run, 1-based and dense", Fixture, STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t a = store.create_run(sample_run("a"));
  const int64_t b = store.create_run(sample_run("b"));
  CHECK(store.last_decision_seq(a) == 0);

  auto append = [&](int64_t run, const std::string& skill) {
    Decision decision{.run = run, .iteration = 1, .skill = skill, .action = "act", .proposer = "rules"};
    const int64_t seq = store.append_decision(decision);
    CHECK(decision.seq == seq);
    CHECK_FALSE(decision.created.empty());
    return seq;
  };
  CHECK(append(a, "profile_analyzer") == 1);
  CHECK(append(a, "kernel_generator") == 2);
  CHECK(append(b, "profile_analyzer") == 1);
  CHECK(append(a, "profile_analyzer") == 3);
  CHECK(store.last_decision_seq(a) == 3);
  CHECK(store.last_decision_seq(b) == 1);

  auto analyzer = store.decisions(a, std::string("profile_analyzer"));
  REQUIRE(analyzer.size() == 2);
  CHECK(analyzer[0].seq == 1);
  CHECK(analyzer[1].seq == 3);
  CHECK(store.decisions(a).size() == 3);
  CHECK(store.decisions(a, std::string("nobody")).empty());

  store.set_decision_outcome(a, 2, "2 variants proposed");
  auto second = store.decision(a, 2);
  REQUIRE(second);
  CHECK(second->outcome == "2 variants proposed");
  CHECK_FALSE(store.decision(a, 4));
  CHECK_THROWS_AS(store.set_decision_outcome(a, 9, "x"), InternalError);

  Decision orphan{.run = b + 10, .skill = "orchestrator", .action = "x", .proposer = "rules"};
  CHECK_THROWS_AS(store.append_decision(orphan), InternalError);  // no such run
}

TEST_CASE_TEMPLATE("contract: decisions round-trip their JSON fields", Fixture, STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  Decision decision{.run = run,
                    .iteration = 2,
                    .skill = "plugin-tiler",
                    .action = "propose",
                    .proposer = "plugin:tiler",
                    .inputs = {{"findings", Json::array({{{"kind", "memory"}, {"headroom", 0.31}}})}},
                    .evidence = {{"dma_active_pct", 97.25}, {"small_transfers", 1024}, {"flag", true}},
                    .alternatives = Json::array({{{"variant", "a"}, {"score", -1.5e-9}}, "b"}),
                    .rationale = "quotes ' and \" survive",
                    .outcome = "",
                    .duration_ms = 12.5};
  store.append_decision(decision);
  auto loaded = store.decision(run, decision.seq);
  REQUIRE(loaded);
  CHECK(loaded->inputs == decision.inputs);
  CHECK(loaded->evidence == decision.evidence);
  CHECK(loaded->alternatives == decision.alternatives);
  CHECK(loaded->rationale == decision.rationale);
  CHECK(loaded->proposer == "plugin:tiler");
  CHECK(loaded->iteration == 2);
  CHECK(loaded->duration_ms == 12.5);
  CHECK(loaded->created == decision.created);

  Decision empty{.run = run, .skill = "orchestrator", .action = "stop", .proposer = "rules"};
  store.append_decision(empty);
  auto loaded_empty = store.decision(run, empty.seq);
  REQUIRE(loaded_empty);
  CHECK(loaded_empty->inputs.is_null());
  CHECK(loaded_empty->evidence.is_null());
}

TEST_CASE_TEMPLATE("contract: trial batches get ids, keep their order and round-trip", Fixture,
                   STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  Decision proposal{
      .run = run, .iteration = 1, .skill = "param_explorer", .action = "batch", .proposer = "rules"};
  store.append_decision(proposal);

  std::vector<Trial> batch{sample_trial(run, proposal.seq, "tiled", 64, Outcome::ok, 1.2345678901234567e-4),
                           sample_trial(run, proposal.seq, "tiled", 512, Outcome::invalid, std::nullopt)};
  batch[0].verification = {{"max_rel_error", 3.1e-7}, {"mse", 2.2e-15}, {"cosine", 0.9999999999}};
  batch[0].duration_ms = 3.25;
  batch[0].batch = 7;
  batch[1].cache_hit = true;
  store.commit_trials(batch);
  CHECK(batch[0].id > 0);
  CHECK(batch[1].id > batch[0].id);
  CHECK_FALSE(batch[0].created.empty());

  auto loaded = store.trials(run);
  REQUIRE(loaded.size() == 2);
  CHECK(loaded[0].id == batch[0].id);
  CHECK(loaded[0].decision_seq == proposal.seq);
  CHECK(loaded[0].params == batch[0].params);
  CHECK(loaded[0].metrics == batch[0].metrics);
  CHECK(loaded[0].metric("latency_s") == 1.2345678901234567e-4);  // exact: JSON keeps round-trip digits
  CHECK(loaded[0].repeats == batch[0].repeats);
  CHECK(loaded[0].verification == batch[0].verification);
  CHECK(loaded[0].duration_ms == 3.25);
  CHECK(loaded[0].batch == 7);
  CHECK_FALSE(loaded[1].batch);
  CHECK(loaded[0].config_hash == batch[0].config_hash);
  CHECK(loaded[0].cache_key == batch[0].cache_key);
  CHECK(loaded[1].status == Outcome::invalid);
  CHECK(loaded[1].error == batch[1].error);
  CHECK(loaded[1].cache_hit);
  CHECK(loaded[1].metrics.is_null());

  auto one = store.trial(run, batch[1].id);
  REQUIRE(one);
  CHECK(one->variant == "tiled");
  const int64_t other_run = store.create_run(sample_run("other"));
  CHECK_FALSE(store.trial(other_run, batch[1].id));  // a trial id belongs to one run
  CHECK(store.trials(other_run).empty());
}

TEST_CASE_TEMPLATE("contract: a batch is all or nothing", Fixture, STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  std::vector<Trial> batch{sample_trial(run, std::nullopt, "tiled", 32, Outcome::ok, 1e-3),
                           sample_trial(run, /*decision_seq=*/42, "tiled", 64, Outcome::ok, 2e-3)};
  CHECK_THROWS_AS(store.commit_trials(batch), InternalError);  // decision 42 does not exist
  CHECK(store.trials(run).empty());
  CHECK(batch[0].id == 0);
  CHECK(batch[0].created.empty());

  batch.pop_back();
  store.commit_trials(batch);  // the store is usable after a failed batch
  CHECK(store.trials(run).size() == 1);
}

TEST_CASE_TEMPLATE("contract: top-k ranks measured trials by a metric, best first", Fixture, STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  std::vector<Trial> batch{
      sample_trial(run, std::nullopt, "v", 1, Outcome::ok, 5e-3),
      sample_trial(run, std::nullopt, "v", 2, Outcome::invalid, std::nullopt),
      sample_trial(run, std::nullopt, "v", 3, Outcome::ok, 2e-3),
      sample_trial(run, std::nullopt, "v", 4, Outcome::wrong_answer,
                   1e-4),  // fast but wrong: never ranks
      sample_trial(run, std::nullopt, "v", 5, Outcome::cached, 3e-3),
      sample_trial(run, std::nullopt, "v", 6, Outcome::ok, 2e-3),  // tie with tile 3: later loses
      sample_trial(run, std::nullopt, "v", 7, Outcome::ok, std::nullopt),
  };
  store.commit_trials(batch);

  auto top = store.trials(run, 3, Ranking{});
  REQUIRE(top.size() == 3);
  CHECK(top[0].id == batch[2].id);
  CHECK(top[1].id == batch[5].id);
  CHECK(top[2].id == batch[4].id);
  CHECK(store.trials(run, 100, Ranking{}).size() == 4);
  CHECK(store.trials(run, 0, Ranking{}).empty());

  auto best = store.best_trial(run);
  REQUIRE(best);
  CHECK(best->id == batch[2].id);

  auto by_throughput = store.trials(run, 1, Ranking{.metric = "throughput", .lower_is_better = false});
  REQUIRE(by_throughput.size() == 1);
  CHECK(by_throughput[0].id == batch[2].id);
  auto worst = store.trials(run, 1, Ranking{.metric = "latency_s", .lower_is_better = false});
  REQUIRE(worst.size() == 1);
  CHECK(worst[0].id == batch[0].id);

  CHECK(store.trials(run, 5, Ranking{.metric = "mfu"}).empty());
  CHECK_THROWS_AS(store.trials(run, 5, Ranking{.metric = "latency_s') --"}), UserError);
  CHECK_FALSE(store.best_trial(store.create_run(sample_run("empty"))));
}

TEST_CASE_TEMPLATE("contract: trial counts by status", Fixture, STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  CHECK(store.trial_counts(run).total == 0);
  std::vector<Trial> batch{
      sample_trial(run, std::nullopt, "v", 1, Outcome::ok, 1e-3),
      sample_trial(run, std::nullopt, "v", 2, Outcome::cached, 1e-3),
      sample_trial(run, std::nullopt, "v", 3, Outcome::invalid, std::nullopt),
      sample_trial(run, std::nullopt, "v", 4, Outcome::timeout, std::nullopt),
      sample_trial(run, std::nullopt, "v", 5, Outcome::failed, std::nullopt),
      sample_trial(run, std::nullopt, "v", 6, Outcome::wrong_answer, 1e-3),
  };
  batch[1].cache_hit = true;
  batch[2].cache_hit = true;
  store.commit_trials(batch);
  const TrialCounts counts = store.trial_counts(run);
  CHECK(counts.total == 6);
  CHECK(counts.ok == 2);
  CHECK(counts.invalid == 1);
  CHECK(counts.timeout == 1);
  CHECK(counts.failed == 1);
  CHECK(counts.wrong_answer == 1);
  CHECK(counts.cache_hits == 2);
}

TEST_CASE_TEMPLATE("contract: cached_trial serves the latest re-usable measurement across runs", Fixture,
                   STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t first = store.create_run(sample_run("first"));
  const int64_t second = store.create_run(sample_run("second"));
  auto keyed = [](Trial trial, const std::string& key) {
    trial.cache_key = key;
    return trial;
  };
  std::vector<Trial> older{
      keyed(sample_trial(first, std::nullopt, "v", 1, Outcome::ok, 4e-3), "k-ok"),
      keyed(sample_trial(first, std::nullopt, "v", 2, Outcome::invalid, {}), "k-invalid"),
      keyed(sample_trial(first, std::nullopt, "v", 3, Outcome::timeout, {}), "k-timeout"),
      keyed(sample_trial(first, std::nullopt, "v", 4, Outcome::ok, 9e-3), "k-flaky")};
  store.commit_trials(older);
  std::vector<Trial> newer{
      keyed(sample_trial(second, std::nullopt, "v", 1, Outcome::ok, 3e-3), "k-ok"),
      keyed(sample_trial(second, std::nullopt, "v", 4, Outcome::failed, {}), "k-flaky"),
      keyed(sample_trial(second, std::nullopt, "v", 5, Outcome::wrong_answer, 1e-3), "k-wrong")};
  store.commit_trials(newer);

  auto ok = store.cached_trial("k-ok");
  REQUIRE(ok);
  CHECK(ok->id == newer[0].id);
  CHECK(ok->run == second);
  CHECK(ok->metric("latency_s") == 3e-3);
  auto invalid = store.cached_trial("k-invalid");
  REQUIRE(invalid);
  CHECK(invalid->status == Outcome::invalid);
  auto wrong = store.cached_trial("k-wrong");
  REQUIRE(wrong);
  CHECK(wrong->status == Outcome::wrong_answer);
  CHECK_FALSE(store.cached_trial("k-timeout"));  // transient: measure again
  auto flaky = store.cached_trial("k-flaky");    // the later failure does not hide the earlier measurement
  REQUIRE(flaky);
  CHECK(flaky->id == older[3].id);
  CHECK_FALSE(store.cached_trial("k-unknown"));
}

TEST_CASE_TEMPLATE("contract: profiles are saved per trial, the timeline only on demand", Fixture,
                   STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  std::vector<Trial> batch{sample_trial(run, std::nullopt, "v", 1, Outcome::ok, 1e-3)};
  store.commit_trials(batch);
  const int64_t trial = batch[0].id;
  CHECK_FALSE(store.profile(trial));

  store.save_profile(Profile{.trial = trial, .summary = {{"bound", "memory"}, {"pe_active_pct", 12.5}}});
  auto summary_only = store.profile(trial);
  REQUIRE(summary_only);
  CHECK(summary_only->summary["bound"] == "memory");
  CHECK_FALSE(summary_only->timeline);

  Json timeline = Json::array();
  for (int i = 0; i < 100; ++i) timeline.push_back({{"engine", "pe"}, {"start", i}, {"end", i + 1}});
  store.save_profile(Profile{.trial = trial, .summary = {{"bound", "compute"}}, .timeline = timeline});
  auto full = store.profile(trial);
  REQUIRE(full);
  CHECK(full->summary["bound"] == "compute");
  REQUIRE(full->timeline);
  CHECK(*full->timeline == timeline);

  CHECK_THROWS_AS(store.save_profile(Profile{.trial = trial + 1000}), InternalError);  // no such trial
}

TEST_CASE_TEMPLATE("contract: LLM calls are logged, cached by prompt hash, and never keep credentials",
                   Fixture, STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  LlmCall call{.run = run,
               .prompt_hash = "h1",
               .model = "m",
               .latency_ms = 850,
               .prompt_tokens = 1200,
               .completion_tokens = 300,
               .request = {{"model", "m"},
                           {"max_tokens", 512},
                           {"headers", {{"Authorization", "Bearer sk-secret"}, {"Accept", "json"}}},
                           {"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})},
                           {"api_key", "sk-secret"}},
               .response = "{\"variant\": \"unknown\"}",
               .accepted = false,
               .reject_reason = "names an unknown variant"};
  const int64_t first = store.append_llm_call(call);
  LlmCall down = call;
  down.response = "";
  down.reject_reason = "endpoint timed out";
  store.append_llm_call(down);

  auto calls = store.llm_calls(run);
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].id == first);
  CHECK(calls[0].latency_ms == 850);
  CHECK(calls[0].prompt_tokens == 1200);
  CHECK(calls[0].request["max_tokens"] == 512);
  CHECK(calls[0].request["messages"] == call.request["messages"]);
  CHECK(calls[0].request["headers"]["Accept"] == "json");
  CHECK(calls[0].request.dump().find("sk-secret") == std::string::npos);

  auto cached = store.cached_llm_response("h1");  // the timed-out call has no response to replay
  REQUIRE(cached);
  CHECK(cached->id == first);
  CHECK_FALSE(cached->accepted);
  CHECK(cached->reject_reason == "names an unknown variant");
  CHECK_FALSE(store.cached_llm_response("h2"));
}

TEST_CASE_TEMPLATE("contract: credentials in URLs never reach the database, in goal texts or LLM requests",
                   Fixture, STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  Run run = sample_run();
  run.goal_yaml =
      "llm: {endpoint: 'https://alice:sk-live-1@llm.example/v1?api_key=sk-live-2&model=m', model: m}\n"
      "target: {kind: command, argv: [curl, 'http://bob@bench.example/run?token=t0k3n&n=4']}\n";
  const int64_t id = store.create_run(run);
  const std::string stored = store.run(id)->goal_yaml;
  for (const char* secret : {"sk-live-1", "sk-live-2", "alice", "bob@", "t0k3n"})
    CHECK_MESSAGE(stored.find(secret) == std::string::npos, secret);
  CHECK(stored.find("https://<redacted>@llm.example/v1?api_key=<redacted>&model=m") != std::string::npos);
  CHECK(stored.find("token=<redacted>&n=4") != std::string::npos);
  // Resuming compares the fresh goal text as the store keeps it.
  CHECK(redact_url_credentials(run.goal_yaml) == stored);
  run.id = id;
  store.update_run(run);
  CHECK(store.run(id)->goal_yaml == stored);

  LlmCall call{.run = id, .prompt_hash = "h", .model = "m"};
  call.request = {{"endpoint", "https://alice:sk-live-1@llm.example/v1"}, {"model", "m"}};
  store.append_llm_call(call);
  CHECK(store.llm_calls(id)[0].request.dump().find("sk-live-1") == std::string::npos);
}

TEST_CASE_TEMPLATE("contract: concurrent writers from many threads are serialised", Fixture, STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  constexpr int kThreads = 4;
  constexpr int kBatches = 10;
  std::vector<std::thread> workers;
  for (int worker = 0; worker < kThreads; ++worker) {
    workers.emplace_back([&, worker] {
      for (int b = 0; b < kBatches; ++b) {
        Decision decision{
            .run = run, .iteration = b, .skill = "benchmark_runner", .action = "run", .proposer = "rules"};
        store.append_decision(decision);
        std::vector<Trial> batch{sample_trial(run, decision.seq, "v", worker * 100 + b, Outcome::ok, 1e-3),
                                 sample_trial(run, decision.seq, "w", worker * 100 + b, Outcome::ok, 2e-3)};
        store.commit_trials(batch);
        store.trials(run, 1, Ranking{});
      }
    });
  }
  for (auto& worker : workers) worker.join();

  auto decisions = store.decisions(run);
  REQUIRE(decisions.size() == kThreads * kBatches);
  for (std::size_t i = 0; i < decisions.size(); ++i) CHECK(decisions[i].seq == static_cast<int64_t>(i + 1));
  auto trials = store.trials(run);
  CHECK(trials.size() == 2 * kThreads * kBatches);
  std::set<int64_t> ids;
  for (const auto& trial : trials) ids.insert(trial.id);
  CHECK(ids.size() == trials.size());
}

namespace {
Json candidate_json(int tile) { return {{"variant", "tiled"}, {"params", {{"tile", tile}}}}; }
}  // namespace

TEST_CASE_TEMPLATE("contract: the measurement queue keeps one row per candidate of a run", Fixture,
                   STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  const auto first = store.enqueue_measurements(run, {{"a", candidate_json(1)}, {"b", candidate_json(2)}});
  REQUIRE(first.size() == 2);
  CHECK(first[0].config_hash == "a");
  CHECK(first[1].candidate == candidate_json(2));
  CHECK(first[0].state == QueueState::queued);
  CHECK(first[0].id < first[1].id);
  // Queued again (a resumed run): the same rows, plus the new one.
  const auto again = store.enqueue_measurements(run, {{"c", candidate_json(3)}, {"a", candidate_json(1)}});
  REQUIRE(again.size() == 2);
  CHECK(again[1].id == first[0].id);
  CHECK(again[0].id > first[1].id);

  store.set_measurement_context({run, "kernel: gemm\n", "/goals/g.yaml", 30});
  const auto context = store.measurement_context(run);
  REQUIRE(context);
  CHECK(context->goal_file == "/goals/g.yaml");
  CHECK(context->timeout_s == 30);
  CHECK_FALSE(store.measurement_context(run + 1));
}

TEST_CASE_TEMPLATE("contract: claims are exclusive, oldest first, and only of running runs", Fixture,
                   STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  const int64_t finished_run = store.create_run(sample_run());
  const auto queued = store.enqueue_measurements(run, {{"a", candidate_json(1)}, {"b", candidate_json(2)}});
  store.enqueue_measurements(finished_run, {{"z", candidate_json(9)}});
  Run finished = *store.run(finished_run);
  finished.status = RunStatus::completed;
  store.update_run(finished);

  const auto first = store.claim_measurement("w1", 60, std::nullopt);
  const auto second = store.claim_measurement("w2", 60, std::nullopt);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->id == queued[0].id);
  CHECK(second->id == queued[1].id);
  CHECK(first->state == QueueState::claimed);
  CHECK(first->worker == "w1");
  CHECK(first->attempts == 1);
  CHECK_FALSE(store.claim_measurement("w3", 60, std::nullopt));  // the finished run's row is not offered
  const auto of_finished = store.claim_measurement("w3", 60, finished_run);  // unless asked for by run
  REQUIRE(of_finished);
  CHECK(of_finished->config_hash == "z");

  CHECK(store.complete_measurement(first->id, "w1", {{"status", "ok"}}));
  CHECK_FALSE(store.complete_measurement(first->id, "w1", {{"status", "ok"}}));   // once only
  CHECK_FALSE(store.complete_measurement(second->id, "w1", {{"status", "ok"}}));  // not w1's claim
  const auto rows = store.queued_measurements({second->id, first->id});
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows) {
    if (row.id == first->id) {
      CHECK(row.state == QueueState::done);
      CHECK(row.result["status"] == "ok");
    } else {
      CHECK(row.state == QueueState::claimed);
      CHECK(row.result.is_null());
    }
  }
  store.mark_measurements_committed({first->id});
  CHECK(store.queued_measurements({first->id})[0].state == QueueState::committed);
}

TEST_CASE_TEMPLATE("contract: a claim whose worker stopped heartbeating is handed over, once", Fixture,
                   STORE_FIXTURES) {
  Fixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  store.enqueue_measurements(run, {{"a", candidate_json(1)}});
  const auto lost = store.claim_measurement("dead", 60, std::nullopt);
  REQUIRE(lost);
  CHECK_FALSE(store.claim_measurement("alive", 60, std::nullopt));  // its lease is fresh
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto taken = store.claim_measurement("alive", 0.001, std::nullopt);  // stale after 1 ms
  REQUIRE(taken);
  CHECK(taken->id == lost->id);
  CHECK(taken->attempts == 2);
  CHECK(taken->worker == "alive");
  CHECK_FALSE(
      store.complete_measurement(lost->id, "dead", {{"status", "ok"}}));  // its late result is discarded
  CHECK(store.complete_measurement(taken->id, "alive", {{"status", "ok"}}));

  // A heartbeat keeps a claim: renewed just now, it is not stale after 10 s.
  store.enqueue_measurements(run, {{"b", candidate_json(2)}});
  const auto kept = store.claim_measurement("busy", 60, std::nullopt);
  REQUIRE(kept);
  // The heartbeat names the rows it renewed: those the store thinks the claimer holds.
  CHECK(store.heartbeat_worker("busy", "host-a", 2, 5) == std::vector<int64_t>{kept->id});
  CHECK_FALSE(store.claim_measurement("thief", 10, std::nullopt));
  CHECK(store.active_workers(10) == 1);
  CHECK(store.heartbeat_worker("other", "host-b", 1, 0).empty());
  CHECK(store.active_workers(10) == 2);
  // A coordinator that measures nothing itself (--jobs 0) heartbeats with no jobs: it is no worker.
  CHECK(store.heartbeat_worker("coordinator", "host-c", 0, 0).empty());
  CHECK(store.active_workers(10) == 2);
}

TEST_CASE("redaction scans texts of any length without exhausting the stack") {
  // A regex recursed once per character here and crashed on a 27 000-character goal name.
  const std::string long_run(200000, 'a');
  CHECK(redact_url_credentials("name: " + long_run) == "name: " + long_run);
  CHECK(redact_url_credentials("https://" + long_run + "@host/x") == "https://<redacted>@host/x");
  CHECK(redact_url_credentials("http://h/p?api_key=" + long_run + "&n=1") ==
        "http://h/p?api_key=<redacted>&n=1");
  CHECK(redact_url_credentials("http://h/p?" + long_run + "=v") == "http://h/p?" + long_run + "=v");
  // What is not a credential stays: no scheme, no '@' before the path, an empty value.
  CHECK(redact_url_credentials("://user@host") == "://user@host");
  CHECK(redact_url_credentials("http://host/a@b") == "http://host/a@b");
  CHECK(redact_url_credentials("1://user@host") == "1://user@host");
  CHECK(redact_url_credentials("x?token=&y") == "x?token=&y");
  CHECK(redact_url_credentials("a+b://u:p@h ?TOKEN=t&Auth_x=s#f") ==
        "a+b://<redacted>@h ?TOKEN=<redacted>&Auth_x=<redacted>#f");
}
