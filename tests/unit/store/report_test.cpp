// The text and JSON that `autotune runs | trials | log` print.
#include "store/report.hpp"

#include <doctest/doctest.h>

#include "core/error.hpp"
#include "store_fixtures.hpp"

using namespace autotune;
using namespace autotune::store;
using namespace autotune::store::testing;
namespace report = autotune::store::report;

TEST_CASE("report: seconds, improvements and compact JSON are human-readable") {
  CHECK(report::format_seconds(3e-3) == "3.000 ms");
  CHECK(report::format_seconds(1.5) == "1.500 s");
  CHECK(report::format_seconds(2.5e-6) == "2.500 us");
  CHECK(report::format_seconds(812e-9) == "812.000 ns");
  CHECK(report::format_seconds(0.0) == "0.000 ns");
  // A value no kernel takes (stored by another tool) is three digits and an exponent, not a line of digits.
  CHECK(report::format_seconds(1e300) == "1e+300 s");
  CHECK(report::format_speedup(2.5e60) == "2.5e+60x");
  CHECK(report::format_improvement(-1e58) == "-1e+60%");
  CHECK(report::format_improvement(0.25) == "+25.0%");
  CHECK(report::format_improvement(1.0 / 3.0) == "+33.3%");
  CHECK(report::format_improvement(-0.2) == "-20.0%");

  CHECK(report::compact(Json{{"tile", 64}, {"unroll", 2}, {"name", "a b"}}) == "name=a b tile=64 unroll=2");
  CHECK(report::compact(Json{{"x", 0.1234567}}) == "x=0.1235");
  CHECK(report::compact(Json{{"list", Json::array({1, 2})}}) == "list=[1,2]");
  CHECK(report::compact(nullptr).empty());
  CHECK(report::compact("line one\nline two") == "line one line two");
  CHECK(report::compact(Json{{"key", std::string(100, 'v')}}, 20) == "key=vvvvvvvvvvvvv...");
}

TEST_CASE("report: a run overview uses the recorded baseline and best") {
  MemoryStore store;
  const SeededRun seeded = seed_sample_run(store);
  const auto overview = report::overview(store, *store.run(seeded.run));
  REQUIRE(overview.baseline);
  REQUIRE(overview.best);
  CHECK(overview.baseline->id == seeded.baseline);
  CHECK(overview.best->id == seeded.best);
  CHECK(*overview.baseline_latency_s == doctest::Approx(4e-3));
  CHECK(*overview.best_latency_s == doctest::Approx(3e-3));
  CHECK(*overview.speedup == doctest::Approx(4.0 / 3.0));
  CHECK(*overview.improvement == doctest::Approx(0.25));  // a quarter of the latency removed
  CHECK(overview.counts.total == 4);
}

TEST_CASE("report: without a recorded baseline and best, the first measured and the fastest trial stand in") {
  MemoryStore store;
  const int64_t run = store.create_run(sample_run());
  std::vector<Trial> batch{sample_trial(run, std::nullopt, "v", 1, Outcome::failed, std::nullopt),
                           sample_trial(run, std::nullopt, "v", 2, Outcome::ok, 8e-3),
                           sample_trial(run, std::nullopt, "v", 3, Outcome::ok, 2e-3)};
  store.commit_trials(batch);
  const auto overview = report::overview(store, *store.run(run));
  REQUIRE(overview.baseline);
  CHECK(overview.baseline->id == batch[1].id);
  REQUIRE(overview.best);
  CHECK(overview.best->id == batch[2].id);
  CHECK(*overview.speedup == doctest::Approx(4.0));
  CHECK(*overview.improvement == doctest::Approx(0.75));

  const int64_t empty = store.create_run(sample_run("empty"));
  const auto nothing = report::overview(store, *store.run(empty));
  CHECK_FALSE(nothing.baseline);
  CHECK_FALSE(nothing.improvement);
  CHECK_FALSE(nothing.speedup);
  CHECK(report::format_runs({nothing}).find("  -  ") != std::string::npos);
}

TEST_CASE("report: the runs table") {
  MemoryStore store;
  seed_sample_run(store);
  const std::string text = report::format_runs(report::overviews(store));
  CHECK(text.rfind("id  created           goal          kernel  target  status                    best  "
                   "speedup  improvement  evals\n",
                   0) == 0);
  CHECK(text.find(
            "gemm-article  gemm    trn1    completed (goal met)  3.000 ms    1.33x       +25.0%      4\n") !=
        std::string::npos);
  CHECK(report::format_runs({}) == "no runs yet\n");
  // Stored text with a line break (a database written by another tool) stays in its row.
  MemoryStore edited;
  edited.create_run(sample_run("two\nlines"));
  const std::string forged = report::format_runs(report::overviews(edited));
  CHECK(std::count(forged.begin(), forged.end(), '\n') == 2);  // the header and one row
  CHECK(forged.find("two\\x0alines") != std::string::npos);

  const Json json = report::runs_json(report::overviews(store));
  REQUIRE(json.size() == 1);
  CHECK(json[0]["status"] == "completed");
  CHECK(json[0]["evaluations"] == 4);
  CHECK(json[0]["best_latency_s"].get<double>() == doctest::Approx(3e-3));
  CHECK(json[0]["improvement"].get<double>() == doctest::Approx(0.25));
  CHECK(json[0]["speedup"].get<double>() == doctest::Approx(4.0 / 3.0));
}

TEST_CASE(
    "report: a model goal's run counts its kernel runs' evaluations and shows the forward before and after") {
  MemoryStore store;
  Run model_run = sample_run("tiny-model");
  model_run.kernel = "model:tiny";
  const int64_t parent = store.create_run(model_run);
  // Its kernel runs, made while it runs: the seeded one (4 trials) and one with 2.
  const SeededRun first = seed_sample_run(store);
  const int64_t second = store.create_run(sample_run("tiny-model/q_proj"));
  std::vector<Trial> batch{sample_trial(second, std::nullopt, "v", 1, Outcome::ok, 2e-3),
                           sample_trial(second, std::nullopt, "v", 2, Outcome::invalid, std::nullopt)};
  store.commit_trials(batch);
  model_run = *store.run(parent);
  model_run.summary = {{"kernel_runs", {first.run, second}},
                       {"baseline_latency_s", 0.5},
                       {"best_latency_s", 0.2},
                       {"improvement", 0.6}};
  store.update_run(model_run);

  const auto overview = report::overview(store, *store.run(parent));
  CHECK(overview.model);
  CHECK(overview.kernel_runs == std::vector<int64_t>{first.run, second});
  CHECK(overview.counts.total == 6);
  CHECK(overview.counts.ok == 4);
  CHECK(*overview.baseline_latency_s == doctest::Approx(0.5));
  CHECK(*overview.best_latency_s == doctest::Approx(0.2));
  CHECK(*overview.speedup == doctest::Approx(2.5));
  CHECK(*overview.improvement == doctest::Approx(0.6));
  const std::string text = report::format_runs({overview});
  CHECK(text.find("model:tiny (kernel runs 2-3)") != std::string::npos);
  CHECK(text.find("200.000 ms    2.50x       +60.0%      6\n") != std::string::npos);
  const Json json = report::runs_json({overview});
  CHECK(json[0]["evaluations"] == 6);
  CHECK(json[0]["kernel_runs"] == Json::array({first.run, second}));
  CHECK(json[0]["best_latency_s"].get<double>() == doctest::Approx(0.2));
  // A kernel run is an ordinary run.
  CHECK_FALSE(report::overview(store, *store.run(second)).model);
  CHECK(report::id_ranges({2, 3, 4, 7, 9, 10}) == "2-4, 7, 9-10");
}

TEST_CASE("report: a run's improvement is the one the orchestrator recorded for its objective") {
  MemoryStore store;
  const SeededRun seeded = seed_sample_run(store);
  Run run = *store.run(seeded.run);
  run.summary = {{"objective", "throughput"}, {"improvement", 1.0 / 3.0}};
  store.update_run(run);
  const auto overview = report::overview(store, *store.run(seeded.run));
  CHECK(*overview.improvement == doctest::Approx(1.0 / 3.0));
  CHECK(*overview.speedup == doctest::Approx(4.0 / 3.0));
  CHECK(report::format_runs({overview}).find("1.33x       +33.3%") != std::string::npos);
}

TEST_CASE("report: the trials table, in order and best first") {
  MemoryStore store;
  const SeededRun seeded = seed_sample_run(store);
  const auto all = store.trials(seeded.run);
  // The parameter every trial shares is said once; rows show what tells them apart.
  const std::string expected =
      "every trial listed has unroll=2\n"
      "id  iter  variant    params    status    latency  speedup  cache  error\n"
      " 1     0  tiled      tile=32   ok       4.000 ms    1.00x\n"
      " 2     1  pipelined  tile=64   ok       3.000 ms    1.33x\n"
      " 3     1  pipelined  tile=256  invalid         -        -         SBUF overflow: tile needs 48 MiB\n"
      " 4     1  pipelined  tile=16   ok       5.000 ms    0.80x\n";
  CHECK(report::format_trials(all, 4e-3) == expected);

  const auto top = store.trials(seeded.run, 2, Ranking{});
  const std::string top_text = report::format_trials(top, 4e-3);
  CHECK(top_text.find(" 2     1") < top_text.find(" 1     0"));
  CHECK(report::format_trials({}, std::nullopt) == "no trials\n");

  const Json json = report::trials_json(all, 4e-3);
  REQUIRE(json.size() == 4);
  CHECK(json[1]["id"] == seeded.best);
  CHECK(json[1]["params"]["tile"] == 64);
  CHECK(json[1]["speedup"].get<double>() == doctest::Approx(4.0 / 3.0));
  CHECK(json[2]["speedup"].is_null());
  CHECK(json[2]["status"] == "invalid");
}

TEST_CASE("report: the trials table shows a noisy trial's interval of the median, only where there is one") {
  MemoryStore store;
  const SeededRun seeded = seed_sample_run(store);
  auto all = store.trials(seeded.run);
  // Without intervals (the simulator): no column for them.
  CHECK(report::format_trials(all, 4e-3).find("interval") == std::string::npos);
  all[0].metrics["intervals"] = {
      {"latency_s", {{"low", 3.9e-3}, {"high", 4.2e-3}, {"confidence", 0.9375}, {"n", 5}}}};
  all[1].metrics["intervals"] = {
      {"latency_s", {{"low", 3e-3}, {"high", 3e-3}, {"confidence", 0.0}, {"n", 1}}}};
  const std::string expected =
      "every trial listed has unroll=2\n"
      "id  iter  variant    params    status    latency  interval of the median           speedup  cache  "
      "error\n"
      " 1     0  tiled      tile=32   ok       4.000 ms  3.900-4.200 ms (93.75%, 5 runs)    1.00x\n"
      " 2     1  pipelined  tile=64   ok       3.000 ms                                     1.33x\n"
      " 3     1  pipelined  tile=256  invalid         -                                         -         "
      "SBUF "
      "overflow: tile needs 48 MiB\n"
      " 4     1  pipelined  tile=16   ok       5.000 ms                                     0.80x\n";
  CHECK(report::format_trials(all, 4e-3) == expected);
  CHECK(report::interval_text(all[0]) == "3.900-4.200 ms (93.75%, 5 runs)");
  CHECK(report::interval_text(all[1]).empty());  // a point is no interval
}

TEST_CASE("report: the decision log, as a table and as JSON") {
  MemoryStore store;
  const SeededRun seeded = seed_sample_run(store);
  const auto decisions = store.decisions(seeded.run);
  // Each decision with its reason and outcome, whole.
  const std::string expected =
      "   1  iter 0   orchestrator / measure_baseline  (rules)\n"
      "      why:     every run starts from the family's default\n"
      "   2  iter 1   profile_analyzer / analyse  (rules)\n"
      "      why:     DMA-bound with no overlap\n"
      "      outcome: finding: raise pipeline depth\n"
      "   3  iter 1   param_explorer / propose_batch  (rules)\n"
      "      why:     DMA-bound: larger tiles amortise transfers\n"
      "      outcome: 1 of 3 improved; best 3 ms\n";
  CHECK(report::format_decisions(decisions) == expected);
  Decision long_one = decisions.front();
  long_one.rationale = std::string(60, 'a') + " " + std::string(60, 'b') + " tail";
  const std::string long_text = report::format_decisions({long_one});
  CHECK(long_text.find(std::string(60, 'b') + " tail") != std::string::npos);  // wrapped, nothing cut
  CHECK(long_text.find("\n               " + std::string(60, 'b')) != std::string::npos);

  const Json json = report::decisions_json(decisions);
  REQUIRE(json.size() == 3);
  for (const char* key :
       {"seq", "iteration", "skill", "action", "proposer", "evidence", "rationale", "outcome"}) {
    CHECK_MESSAGE(json[1].contains(key), key);
  }
  CHECK(json[1]["evidence"]["dma_active_pct"] == 92.5);
  CHECK(json[2]["rationale"] == "DMA-bound: larger tiles amortise transfers");
}

TEST_CASE("report: an unknown run is one clear line") {
  MemoryStore store;
  CHECK_THROWS_WITH_AS(report::require_run(store, 99), "run 99 not found in :memory:", UserError);
}

TEST_CASE("report: a seeded database file reads back through a reading store") {
  TempDir dir;
  const std::string path = dir.file("seeded.db");
  {
    auto writer = open_store(path);
    seed_sample_run(*writer);
  }
  auto reader = open_store(path, OpenMode::existing);
  const auto runs = report::overviews(*reader);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].best);
  CHECK(report::format_trials(reader->trials(runs[0].run.id), runs[0].baseline_latency_s)
            .find("SBUF overflow") != std::string::npos);
}
