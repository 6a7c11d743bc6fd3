#pragma once
// The decision store on a PostgreSQL database (docs/store.md, docs/distributed.md):
// the same tables, views and contract as SqliteStore, so that runs, sweeps
// and workers on many hosts share one store.
//
// One connection per PostgresStore, guarded by a mutex like SqliteStore's.
// Every call is one transaction (READ COMMITTED). When the connection breaks
// (the server restarted, a proxy dropped it, an outage), the call reconnects
// with back-off (0.1 s doubling to 2 s, the lock released meanwhile) and runs
// its transaction again, for up to the store's outage wait; past it, one
// UserError line. A break while COMMIT was in flight leaves the outcome
// unknown: calls that would store a record twice asked for their
// transaction id first, and look its fate up (txid_status) once the server
// is back: committed, the call is done; aborted, it runs again; only when the
// server cannot say (or does not come back in time) is it a UserError
// (resume the run). The others run again.
// Credentials come from the URL or libpq's conventions (PGPASSWORD,
// ~/.pgpass); the store never writes them anywhere and location() hides them.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "store/store.hpp"

namespace pqxx {
class transaction_base;
}  // namespace pqxx

namespace autotune::store {

class PostgresStore : public Store {
 public:
  // How long a call waits for an unreachable server: commands that write
  // (run, sweep, worker: an outage must not end a long run) and those that
  // only read. AUTOTUNE_DB_OUTAGE_S overrides both (open_store).
  static constexpr std::chrono::seconds kWriterOutageWait{600};
  static constexpr std::chrono::seconds kReaderOutageWait{60};

  // Connects to `url` (a libpq connection URI) and migrates the database to
  // the latest schema. The database must exist (CREATE DATABASE is the
  // administrator's); a connection failure is a UserError naming the
  // redacted URL and libpq's reason (the first connection is not waited for).
  explicit PostgresStore(const std::string& url, std::chrono::seconds outage_wait = kReaderOutageWait);
  ~PostgresStore() override;

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

  int schema_version();
  // How many times this store reconnected after a broken connection.
  int reconnects() const;

 private:
  // Whether running a transaction again is harmless when a broken connection
  // left unknown whether its COMMIT went through: retry for updates, upserts
  // and claims (a claim that did commit is found by its claimer's heartbeat);
  // look_up for inserts whose repetition would store a record twice.
  enum class InDoubt { retry, look_up };
  // Runs `work` in one transaction, reconnecting and running it again after
  // a broken connection for up to `wait` (the store's outage wait when
  // absent; see the class comment). `doing` names the call in errors.
  void with_transaction(const char* doing, const std::function<void(pqxx::transaction_base&)>& work,
                        InDoubt in_doubt = InDoubt::retry,
                        std::optional<std::chrono::seconds> wait = std::nullopt);
  void connect();
  // `text` (a libpq or server message) on one line, without the URL's
  // password: libpq repeats the whole URL in some of its errors.
  std::string scrubbed(const std::string& text) const;

  mutable std::mutex mutex_;
  std::chrono::seconds outage_wait_;
  std::string url_;
  std::string redacted_url_;
  struct Connection;  // the pqxx connection, absent while broken
  std::unique_ptr<Connection> connection_;
  int reconnects_ = 0;
};

}  // namespace autotune::store
