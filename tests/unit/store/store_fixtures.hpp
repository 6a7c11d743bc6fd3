#pragma once
// Fixtures for the store tests: a temporary directory, the two store
// implementations behind one interface, and a small seeded run.
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "store/sqlite_store.hpp"

// Records are built with designated initializers, leaving the other fields at
// their defaults on purpose; GCC 12 warns about that under -Wextra.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace autotune::store::testing {

class TempDir {
 public:
  TempDir() {
    std::random_device entropy;
    path_ = std::filesystem::temp_directory_path() / ("autotune-store-" + std::to_string(entropy()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// The contract tests run once per fixture type.
struct FileStoreFixture {
  TempDir dir;
  std::unique_ptr<Store> store = open_store(dir.file("contract.db"));
};

struct MemoryStoreFixture {
  std::unique_ptr<Store> store = open_store(":memory:");
};

inline Run sample_run(const std::string& goal_name = "gemm-article") {
  Run run;
  run.goal_name = goal_name;
  run.goal_yaml = "kernel: gemm\ntarget: trn1\n";
  run.kernel = "gemm";
  run.target = "trn1";
  run.seed = 7;
  run.simulator_version = "sim-1";
  return run;
}

inline Trial sample_trial(int64_t run, std::optional<int64_t> decision_seq, const std::string& variant,
                          int tile, Outcome status, std::optional<double> latency_s) {
  Trial trial;
  trial.run = run;
  trial.iteration = 1;
  trial.decision_seq = decision_seq;
  trial.variant = variant;
  trial.params = {{"tile", tile}, {"unroll", 2}};
  trial.config_hash = variant + "/tile=" + std::to_string(tile);
  trial.cache_key = "gemm/" + trial.config_hash + "/trn1/sim-1";
  trial.status = status;
  if (latency_s) {
    trial.metrics = {{"latency_s", *latency_s}, {"throughput", 1.0 / *latency_s}};
    trial.repeats = Json::array({*latency_s, *latency_s * 1.01});
  }
  if (status == Outcome::invalid) trial.error = "SBUF overflow: tile needs 48 MiB\nsecond line";
  return trial;
}

// A finished run as the orchestrator would leave it: a baseline, a profile
// analysis, proposals with mixed outcomes, and a best trial.
struct SeededRun {
  int64_t run = 0;
  int64_t baseline = 0;
  int64_t best = 0;
  int64_t invalid = 0;
  int64_t slower = 0;
};

inline SeededRun seed_sample_run(Store& store) {
  SeededRun seeded;
  seeded.run = store.create_run(sample_run());

  Decision baseline_decision{.run = seeded.run,
                             .iteration = 0,
                             .skill = "orchestrator",
                             .action = "measure_baseline",
                             .proposer = "rules",
                             .evidence = {{"variant", "tiled"}},
                             .rationale = "every run starts from the family's default"};
  store.append_decision(baseline_decision);
  std::vector<Trial> baseline{
      sample_trial(seeded.run, baseline_decision.seq, "tiled", 32, Outcome::ok, 4e-3)};
  baseline[0].iteration = 0;
  baseline[0].verification = {{"max_rel_error", 1e-6}, {"mse", 1e-12}, {"cosine", 0.999999}};
  store.commit_trials(baseline);
  seeded.baseline = baseline[0].id;

  Decision analysis{.run = seeded.run,
                    .iteration = 1,
                    .skill = "profile_analyzer",
                    .action = "analyse",
                    .proposer = "rules",
                    .evidence = {{"bound", "memory"}, {"dma_active_pct", 92.5}, {"overlap_pct", 3.0}},
                    .rationale = "DMA-bound with no overlap",
                    .outcome = "finding: raise pipeline depth"};
  store.append_decision(analysis);

  Decision explore{.run = seeded.run,
                   .iteration = 1,
                   .skill = "param_explorer",
                   .action = "propose_batch",
                   .proposer = "rules",
                   .inputs = {{"strategy", "grid"}},
                   .evidence = {{"finding", "memory bound"}, {"best_latency_s", 4e-3}},
                   .alternatives = Json::array({"random", "bayes"}),
                   .rationale = "DMA-bound: larger tiles amortise transfers"};
  store.append_decision(explore);
  std::vector<Trial> batch{
      sample_trial(seeded.run, explore.seq, "pipelined", 64, Outcome::ok, 3e-3),
      sample_trial(seeded.run, explore.seq, "pipelined", 256, Outcome::invalid, std::nullopt),
      sample_trial(seeded.run, explore.seq, "pipelined", 16, Outcome::ok, 5e-3),
  };
  store.commit_trials(batch);
  seeded.best = batch[0].id;
  seeded.invalid = batch[1].id;
  seeded.slower = batch[2].id;
  store.set_decision_outcome(seeded.run, explore.seq, "1 of 3 improved; best 3 ms");

  Run finished = *store.run(seeded.run);
  finished.status = RunStatus::completed;
  finished.stop_reason = "goal met";
  finished.goal_met = true;
  finished.baseline_trial = seeded.baseline;
  finished.best_trial = seeded.best;
  store.update_run(finished);
  return seeded;
}

}  // namespace autotune::store::testing
