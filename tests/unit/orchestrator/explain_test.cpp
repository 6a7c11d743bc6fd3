// `autotune explain`: a trial traced back through the decision log to the
// idea and finding behind it, compared with the baseline and the best before
// it, and its outcome.
#include "orchestrator/explain.hpp"

#include <doctest/doctest.h>

#include "core/error.hpp"
#include "tests/unit/store/store_fixtures.hpp"

using namespace autotune;
using namespace autotune::store;
using namespace autotune::store::testing;
using autotune::orchestrator::explain;
using autotune::orchestrator::explanation_json;
using autotune::orchestrator::format_explanation;
namespace report = autotune::store::report;

TEST_CASE("explain: explain names the proposing decision, the comparison, and the outcome") {
  MemoryStore store;
  const SeededRun seeded = seed_sample_run(store);

  const auto best = explain(store, seeded.run, seeded.best);
  REQUIRE(best.proposal);
  CHECK(best.proposal->skill == "param_explorer");
  REQUIRE(best.best_before);
  CHECK(best.best_before->id == seeded.baseline);  // its batch-mates were not known when it was proposed
  CHECK(*best.speedup_vs_baseline == doctest::Approx(4.0 / 3.0));
  CHECK(*best.speedup_vs_best_before == doctest::Approx(4.0 / 3.0));
  CHECK(best.became_best);
  CHECK(best.is_run_best);
  const std::string text = format_explanation(best);
  CHECK(text.find("  decision      #3 (iteration 1): param_explorer / propose_batch, by rules\n") !=
        std::string::npos);
  CHECK(text.find("  rationale     DMA-bound: larger tiles amortise transfers\n") != std::string::npos);
  CHECK(text.find("  baseline      trial 1 tiled {tile=32 unroll=2}: 4.000 ms\n") != std::string::npos);
  CHECK(text.find("  latency       3.000 ms, 1.33x vs baseline, 1.33x vs best before\n") !=
        std::string::npos);
  CHECK(text.find("  result        became the best so far; it is the run's best trial\n") !=
        std::string::npos);

  const auto slower = explain(store, seeded.run, seeded.slower);
  CHECK_FALSE(slower.became_best);
  CHECK_FALSE(slower.is_run_best);
  CHECK(*slower.speedup_vs_baseline == doctest::Approx(0.8));
  CHECK(format_explanation(slower).find("did not beat the best so far; the run's best is trial 2") !=
        std::string::npos);

  const auto invalid = explain(store, seeded.run, seeded.invalid);
  CHECK_FALSE(invalid.became_best);
  CHECK_FALSE(invalid.speedup_vs_baseline);
  CHECK(format_explanation(invalid).find("  error         SBUF overflow: tile needs 48 MiB\n") !=
        std::string::npos);

  const auto baseline = explain(store, seeded.run, seeded.baseline);
  CHECK_FALSE(baseline.best_before);
  CHECK(baseline.became_best);
  CHECK(format_explanation(baseline).find("first measured trial of the run") != std::string::npos);

  const Json json = explanation_json(best);
  CHECK(json["proposed_by"]["seq"] == 3);
  CHECK(json["best_before"]["id"] == seeded.baseline);
  CHECK(json["became_best"] == true);
  CHECK(json["trial"]["verification"].is_null());
  CHECK(json["speedup_vs_baseline"].get<double>() == doctest::Approx(4.0 / 3.0));
}

TEST_CASE("explain: explain compares a trial with the best of earlier batches, its own decision's included") {
  MemoryStore store;
  const int64_t run = store.create_run(sample_run());
  Decision search{
      .run = run, .iteration = 1, .skill = "param_explorer", .action = "search:bayes", .proposer = "rules"};
  store.append_decision(search);
  // One search over three batches: 4 ms; then 3 ms and 2 ms together; then 2.5 ms.
  std::vector<Trial> trials{sample_trial(run, search.seq, "tiled", 32, Outcome::ok, 4e-3),
                            sample_trial(run, search.seq, "tiled", 64, Outcome::ok, 3e-3),
                            sample_trial(run, search.seq, "tiled", 128, Outcome::ok, 2e-3),
                            sample_trial(run, search.seq, "tiled", 256, Outcome::ok, 2.5e-3)};
  for (std::size_t i = 0; i < trials.size(); ++i) trials[i].batch = i == 0 ? 1 : i < 3 ? 2 : 3;
  store.commit_trials(trials);

  const auto batch_mate = explain(store, run, trials[2].id);
  REQUIRE(batch_mate.best_before);
  CHECK(batch_mate.best_before->id == trials[0].id);  // not the 3 ms trial proposed beside it
  CHECK(batch_mate.became_best);

  const auto later = explain(store, run, trials[3].id);
  REQUIRE(later.best_before);
  CHECK(later.best_before->id == trials[2].id);  // same decision, an earlier batch
  CHECK_FALSE(later.became_best);
}

TEST_CASE("explain: explain traces a trial back to the policy's idea and the finding behind it") {
  MemoryStore store;
  const int64_t run = store.create_run(sample_run());
  auto append = [&](int iteration, std::string skill, std::string action, Json inputs, Json evidence,
                    Json alternatives) {
    Decision d{.run = run,
               .iteration = iteration,
               .skill = std::move(skill),
               .action = std::move(action),
               .proposer = "rules",
               .inputs = std::move(inputs),
               .evidence = std::move(evidence),
               .alternatives = std::move(alternatives),
               .rationale = "because"};
    return store.append_decision(d);
  };
  const int64_t start = append(0, "orchestrator", "baseline", {}, {}, {});
  std::vector<Trial> baseline{sample_trial(run, start, "tiled", 32, Outcome::ok, 4e-3)};
  baseline[0].iteration = 0;
  store.commit_trials(baseline);

  const Json finding = {{"kind", "small_transfers"},
                        {"summary", "transfers of 652 B per partition"},
                        {"evidence", {{"bytes_per_partition", 652}}}};
  const Json other = {{"kind", "dependency_stalls"}, {"evidence", {{"idle", 0.4}}}};
  append(1, "profile_analyzer", "findings:small_transfers", {{"candidate", "tiled{tile=32}"}}, {},
         Json::array({finding, other}));
  const Json idea = {
      {"id", "raise:tile@tiled"}, {"finding", "small_transfers"}, {"rationale", "raise the tile"}};
  append(1, "kernel_generator", "propose:raise", {}, {{"ideas", Json::array({idea})}}, {});
  // An older run: the policy's choice does not name its idea, the verdict does.
  append(1, "orchestrator", "try:raise", {}, {}, {});
  const int64_t search = append(1, "param_explorer", "search:grid", {}, {}, {});
  append(1, "orchestrator", "rollback", {{"idea", "raise:tile@tiled"}}, {}, {});
  std::vector<Trial> batch{sample_trial(run, search, "tiled", 64, Outcome::ok, 5e-3)};
  store.commit_trials(batch);

  const auto e = explain(store, run, batch[0].id);
  REQUIRE(e.analysis);
  REQUIRE(e.generation);
  REQUIRE(e.choice);
  REQUIRE(e.verdict);
  CHECK(e.choice->action == "try:raise");
  CHECK(e.verdict->action == "rollback");
  CHECK(e.idea["id"] == "raise:tile@tiled");
  REQUIRE(e.findings.size() == 1);  // only the finding the idea answers
  CHECK(e.findings[0]["kind"] == "small_transfers");
  const std::string text = format_explanation(e);
  CHECK(text.find("  analysed      tiled{tile=32} (decision #2, ") != std::string::npos);
  CHECK(text.find("  finding       small_transfers: transfers of 652 B per partition\n"
                  "  evidence      bytes_per_partition=652\n") != std::string::npos);
  CHECK(text.find("  idea          raise:tile@tiled (decision #3, kernel_generator, by rules)\n") !=
        std::string::npos);
  CHECK(text.find("  chosen        decision #4: orchestrator / try:raise, by rules\n") != std::string::npos);
  CHECK(text.find("  change        latency +25.0% against trial " + std::to_string(baseline[0].id) +
                  ", the best before (4.000 ms -> 5.000 ms)\n") != std::string::npos);
  const Json json = explanation_json(e);
  CHECK(json["idea"]["id"] == "raise:tile@tiled");
  CHECK(json["chosen_by"]["seq"] == 4);
  CHECK(json["findings"][0]["kind"] == "small_transfers");

  const auto first = explain(store, run, baseline[0].id);
  CHECK_FALSE(first.choice);
  CHECK(format_explanation(first).find("why\n") == std::string::npos);
}

TEST_CASE("explain: unknown runs and trials are one clear line") {
  MemoryStore store;
  const SeededRun seeded = seed_sample_run(store);
  CHECK_THROWS_WITH_AS(explain(store, seeded.run, 99), "trial 99 not found in run 1 of :memory:", UserError);
  const int64_t other = store.create_run(sample_run("other"));
  CHECK_THROWS_WITH_AS(
      explain(store, other, seeded.best),
      ("trial " + std::to_string(seeded.best) + " is a trial of run 1, not of run 2 (:memory:)").c_str(),
      UserError);
}
