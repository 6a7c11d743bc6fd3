#pragma once
// The decision store on an SQLite file (schema: store/schema.hpp,
// docs/store.md).
//
// One connection per SqliteStore, guarded by a mutex: every call is
// serialised, so the runner may commit from a worker pool. Other processes
// read the same file concurrently: the database is in WAL mode (readers never
// wait for the writer) with a busy timeout for writers, and every write is a
// BEGIN IMMEDIATE transaction. synchronous=NORMAL: a killed process loses
// nothing committed; a power cut may lose the last transactions.
#include <mutex>

#include "store/sqlite_handle.hpp"
#include "store/store.hpp"

namespace autotune::store {

class SqliteStore : public Store {
 public:
  // How long a write waits for another process's write lock.
  static constexpr int kBusyTimeoutMs = 10'000;

  // Opens (OpenMode::create: creating if needed) and migrates to the latest
  // schema. ":memory:" is a private in-memory database.
  explicit SqliteStore(const std::string& path, OpenMode mode = OpenMode::create);

  std::string location() const override;

  int64_t create_run(const Run& run) override;
  void update_run(const Run& run) override;
  bool freeze_interrupted(int64_t id, const std::string& reason) override;
  void freeze() override;
  std::optional<LeaseHolder> acquire_lease(int64_t id, double stale_after_s) override;
  bool renew_lease(int64_t id) override;
  void release_lease(int64_t id) override;
  std::optional<Run> run(int64_t id) override;
  std::vector<Run> runs() override;

  using Store::decisions;
  int64_t append_decision(Decision& decision) override;
  void set_decision_outcome(int64_t run, int64_t seq, const std::string& outcome) override;
  std::vector<Decision> decisions(int64_t run, const std::optional<std::string>& skill) override;
  std::optional<Decision> decision(int64_t run, int64_t seq) override;
  int64_t last_decision_seq(int64_t run) override;

  using Store::trials;
  void commit_trials(std::vector<Trial>& trials) override;
  std::vector<Trial> trials(int64_t run, std::optional<int> top_k, const Ranking& ranking) override;
  std::optional<Trial> trial(int64_t run, int64_t trial_id) override;
  TrialCounts trial_counts(int64_t run) override;
  std::optional<Trial> cached_trial(const std::string& cache_key) override;

  void save_profile(const Profile& profile) override;
  std::optional<Profile> profile(int64_t trial) override;

  void set_measurement_context(const MeasurementContext& context) override;
  std::optional<MeasurementContext> measurement_context(int64_t run) override;
  std::vector<QueuedMeasurement> enqueue_measurements(
      int64_t run, const std::vector<std::pair<std::string, Json>>& items) override;
  std::optional<QueuedMeasurement> claim_measurement(const std::string& worker, double stale_after_s,
                                                     std::optional<int64_t> only_run) override;
  std::vector<int64_t> heartbeat_worker(const std::string& worker, const std::string& host, int jobs,
                                        int64_t measured) override;
  bool complete_measurement(int64_t id, const std::string& worker, const Json& result) override;
  std::vector<QueuedMeasurement> queued_measurements(const std::vector<int64_t>& ids) override;
  void mark_measurements_committed(const std::vector<int64_t>& ids) override;
  int64_t active_workers(double fresh_s) override;

  int64_t append_llm_call(const LlmCall& call) override;
  std::vector<LlmCall> llm_calls(int64_t run) override;
  std::optional<LlmCall> cached_llm_response(const std::string& prompt_hash) override;

  // The journal mode in effect ("wal" for files, "memory" for ":memory:").
  std::string journal_mode();
  int schema_version();

 private:
  std::mutex mutex_;
  sqlite::Connection connection_;
};

// The in-memory twin for tests: SqliteStore on ":memory:". Deliberately not a
// second hand-written implementation: running the very same SQL makes it a
// true twin (ordering, JSON ranking, cache rules, all-or-nothing batches,
// foreign keys), so a test written against it checks production behaviour,
// and there is no second copy of the rules to drift. What it cannot show is
// multi-process behaviour (WAL, locking); the contract tests also run on a
// file for that.
class MemoryStore : public SqliteStore {
 public:
  MemoryStore() : SqliteStore(":memory:") {}
};

}  // namespace autotune::store
