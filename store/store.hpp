#pragma once
// The decision store: everything a run did and why (DESIGN.md, "Decision
// store"). Modelled on TVM MetaSchedule's Database: a narrow interface of
// append-only records, top-k and best; every repeat is kept.
//
// Contract, for every implementation:
//  - Runs are created once and updated in place (status, best, summary).
//  - Decisions are appended; the store assigns `seq` (1, 2, ... per run).
//    Only the outcome may be filled in later (set_decision_outcome).
//  - Trials are committed in batches: one transaction per batch, all or
//    nothing; the store assigns ids (unique across runs) and `created`.
//    A trial's decision_seq, when set, must name a decision of the same run.
//  - Readers see only committed data. Readers in other processes work while a
//    run is writing (SQLite: WAL and a busy timeout).
//  - Thread safety: a Store may be called from many threads at once; calls are
//    serialised internally on one connection. Use one Store per process.
//  - Misuse by the environment (unreadable file, database newer than this
//    build, another writer holding the lock too long) is a UserError; a broken
//    caller invariant (unknown run on update, dangling decision_seq) is an
//    InternalError.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/output_file.hpp"
#include "store/records.hpp"

namespace autotune::store {

// How trials are ranked for top-k and best: by metrics[metric], among the
// trials whose status is measured (ok, cached) and whose metric is a number.
// Ties go to the earlier trial.
struct Ranking {
  std::string metric = "latency_s";  // letters, digits and '_' only
  bool lower_is_better = true;
};

struct TrialCounts {
  int64_t total = 0;
  int64_t ok = 0;  // measured: ok or cached
  int64_t invalid = 0;
  int64_t wrong_answer = 0;
  int64_t failed = 0;
  int64_t timeout = 0;
  int64_t cache_hits = 0;  // cache_hit set, any status
};

// Credentials written into URLs, replaced by "<redacted>": the
// user-information part (scheme://user:secret@host) and query parameters
// whose names mark a secret (?api_key=..., &token=...). Goal texts and LLM
// requests pass through it before they are stored.
std::string redact_url_credentials(const std::string& text);

class Store {
 public:
  virtual ~Store() = default;

  // Where the data lives (a file path, ":memory:", or a PostgreSQL URL
  // without its credentials).
  virtual std::string location() const = 0;

  // Runs. create_run ignores run.id and returns the new id; an empty
  // created/updated is set to now. update_run rewrites every field of the run
  // with that id except `created`, and stamps `updated` with now.
  virtual int64_t create_run(const Run& run) = 0;
  virtual void update_run(const Run& run) = 0;
  // For a process about to exit on an interruption: records run `id` as
  // interrupted with `reason` (when it is still running), then holds the
  // store so that no later write from this process (a failure the
  // interruption itself caused) reaches the database: every other call
  // blocks from then on. Returns whether the run was marked.
  virtual bool freeze_interrupted(int64_t id, const std::string& reason) = 0;
  // The same hold, for a process about to exit on an interruption that
  // records no run (a worker): a measurement the interruption cut short is
  // never stored as its result.
  virtual void freeze() = 0;

  // Leases: one process at a time runs (or resumes) a run. acquire_lease
  // takes run `id` for this process (host and pid) unless a live holder has
  // it, and returns that holder then. A holder is dead when its heartbeat is
  // older than `stale_after_s`, or when it is on this host and its process is
  // gone. The holder renews every few seconds and releases when done.
  virtual std::optional<LeaseHolder> acquire_lease(int64_t id, double stale_after_s) = 0;
  // False when this process no longer holds the lease (another took it over).
  virtual bool renew_lease(int64_t id) = 0;
  virtual void release_lease(int64_t id) = 0;
  virtual std::optional<Run> run(int64_t id) = 0;
  virtual std::vector<Run> runs() = 0;  // oldest first

  // Decisions. Assigns decision.seq (and created when empty) and returns seq.
  virtual int64_t append_decision(Decision& decision) = 0;
  virtual void set_decision_outcome(int64_t run, int64_t seq, const std::string& outcome) = 0;
  // In seq order; only those of `skill` when given.
  virtual std::vector<Decision> decisions(int64_t run, const std::optional<std::string>& skill) = 0;
  std::vector<Decision> decisions(int64_t run) { return decisions(run, std::nullopt); }
  virtual std::optional<Decision> decision(int64_t run, int64_t seq) = 0;
  // The highest seq of the run, 0 when it has none (what a resumed run continues from).
  virtual int64_t last_decision_seq(int64_t run) = 0;

  // Trials. One transaction for the whole batch; on success every trial gets
  // its id (and created when empty); on failure none is stored or changed.
  virtual void commit_trials(std::vector<Trial>& trials) = 0;
  // Without top_k: every trial of the run in commit order (what a resumed run
  // reloads). With top_k: the best k measured trials by `ranking`, best first.
  virtual std::vector<Trial> trials(int64_t run, std::optional<int> top_k, const Ranking& ranking) = 0;
  std::vector<Trial> trials(int64_t run) { return trials(run, std::nullopt, Ranking{}); }
  std::optional<Trial> best_trial(int64_t run, const Ranking& ranking = {});
  // The trial with that id if it belongs to `run`.
  virtual std::optional<Trial> trial(int64_t run, int64_t trial_id) = 0;
  virtual TrialCounts trial_counts(int64_t run) = 0;
  // The latest trial with this cache key, across runs, whose status is a
  // measurement worth re-using: ok, invalid or wrong_answer (failed and
  // timeout may be transient, so they are never served from the cache).
  virtual std::optional<Trial> cached_trial(const std::string& cache_key) = 0;

  // Profiles, one per trial; saving again replaces it.
  virtual void save_profile(const Profile& profile) = 0;
  virtual std::optional<Profile> profile(int64_t trial) = 0;

  // The shared measurement queue (QueuedMeasurement). Every state change is
  // one transaction; a claim is exclusive (one claimer per row at a time).
  //
  // set_measurement_context records (or replaces) what workers need for a run.
  virtual void set_measurement_context(const MeasurementContext& context) = 0;
  virtual std::optional<MeasurementContext> measurement_context(int64_t run) = 0;
  // Queues each (config_hash, candidate) of `run` not queued before, and
  // returns the row of every item, new or old, in the order given (a resumed
  // run finds what it queued before, done or not).
  virtual std::vector<QueuedMeasurement> enqueue_measurements(
      int64_t run, const std::vector<std::pair<std::string, Json>>& items) = 0;
  // Claims the oldest queued row, or a claimed one whose claimer has not
  // heartbeaten for `stale_after_s` (attempts grows), for `worker`: of run
  // `only_run` when given, else of any run whose status is running.
  virtual std::optional<QueuedMeasurement> claim_measurement(const std::string& worker, double stale_after_s,
                                                             std::optional<int64_t> only_run) = 0;
  // Renews the heartbeat of `worker` (its registration and every row it has
  // claimed) and returns the ids of the rows it renewed: those the store
  // thinks `worker` holds. A claimer holding one it never heard of (a claim
  // whose COMMIT went through while the connection broke) must measure it or
  // stop heartbeating: no one else takes a row under a live heartbeat.
  // `host`, `jobs` and `measured` describe it for `workers`.
  virtual std::vector<int64_t> heartbeat_worker(const std::string& worker, const std::string& host, int jobs,
                                                int64_t measured) = 0;
  // Stores the result of a claimed row; false (nothing written) when
  // `worker` no longer holds the claim, because the row was handed to
  // another worker: the result is then discarded, so no measurement is
  // recorded twice.
  virtual bool complete_measurement(int64_t id, const std::string& worker, const Json& result) = 0;
  // The rows with these ids (any order), to see which are done.
  virtual std::vector<QueuedMeasurement> queued_measurements(const std::vector<int64_t>& ids) = 0;
  // Marks rows whose trials are committed.
  virtual void mark_measurements_committed(const std::vector<int64_t>& ids) = 0;
  // Workers that measure (jobs > 0; a coordinator of --jobs 0 only waits)
  // and heartbeat within `fresh_s` seconds.
  virtual int64_t active_workers(double fresh_s) = 0;

  // LLM calls. append_llm_call returns the new id.
  virtual int64_t append_llm_call(const LlmCall& call) = 0;
  virtual std::vector<LlmCall> llm_calls(int64_t run) = 0;
  // The latest call with this prompt hash that got a response (accepted or
  // not: replaying a rejected answer reproduces the rejection).
  virtual std::optional<LlmCall> cached_llm_response(const std::string& prompt_hash) = 0;
};

enum class OpenMode {
  create,    // create the database if it does not exist (writers)
  existing,  // the file must exist; a missing file is a UserError (readers). An older
             // schema is still upgraded: readers of old files see the current views.
};

// Whether `location` names a PostgreSQL database: postgresql://... or postgres://...
bool is_postgres_url(const std::string& location);

// The store at `location`: a PostgresStore for postgresql://... or
// postgres://... (a libpq URI; the database must exist, in either mode), else
// a SqliteStore on the file (a "sqlite:" prefix is allowed and dropped);
// ":memory:" gives the in-memory twin (MemoryStore).
std::unique_ptr<Store> open_store(const std::string& location, OpenMode mode = OpenMode::create);

// The files of the SQLite database at `location` (the file and its -wal, -shm
// and -journal companions), which an output must not replace; none for
// ":memory:" or a PostgreSQL URL.
std::vector<KeptFile> database_files(const std::string& location);

// How long a PostgreSQL store call waits for an unreachable server:
// `environment` (the value of AUTOTUNE_DB_OUTAGE_S: whole seconds, 0 to
// 86400; anything else is a UserError) if non-empty, else 600 s for a store
// opened to write (runs, sweeps, workers) and 60 s for one opened to read.
std::chrono::seconds outage_wait(OpenMode mode, const char* environment);

// The database a command uses: `flag` (--db) if given, else `environment`
// (the value of AUTOTUNE_DB) if non-empty, else "autotune.db".
std::string resolve_database_path(const std::optional<std::string>& flag, const char* environment);
// The same with the process environment.
std::string resolve_database_path(const std::optional<std::string>& flag);

}  // namespace autotune::store
