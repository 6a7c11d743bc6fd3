#include "store/sqlite_store.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/error.hpp"
#include "store/record_rules.hpp"
#include "store/schema.hpp"

namespace autotune::store {
namespace {

using sqlite::Statement;
using namespace detail;

std::string sql(std::initializer_list<std::string_view> parts) {
  std::string text;
  for (auto part : parts) text += part;
  return text;
}

}  // namespace

SqliteStore::SqliteStore(const std::string& path, OpenMode mode)
    : connection_(path, mode == OpenMode::create) {
  connection_.execute("PRAGMA busy_timeout = " + std::to_string(kBusyTimeoutMs));
  connection_.execute("PRAGMA foreign_keys = ON");
  // A reading command never writes into a file autotune did not make: one
  // without a schema version (an empty file, another program's database) is
  // refused before WAL mode or a schema would be written into it.
  if (mode == OpenMode::existing && connection_.path() != ":memory:" &&
      connection_.query_int("PRAGMA user_version") == 0) {
    const bool empty = connection_.query_int("SELECT COUNT(*) FROM sqlite_master") == 0;
    throw UserError(
        connection_.path() + " is not an autotune database (" +
        (empty ? std::string("it is empty") : std::string("it has tables but no schema version")) +
        "; a command that writes, such as run or sweep, creates one)");
  }
  // Changing to WAL (the mode is persistent in the file) takes an exclusive
  // lock from a shared one, which SQLite refuses at once rather than wait
  // when another opener is doing the same; so several processes opening a
  // new database together retry here, for as long as the busy timeout.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (int attempt = 1;; ++attempt) {
    try {
      const std::string journal = connection_.query_text("PRAGMA journal_mode = WAL");
      AUTOTUNE_CHECK(journal == "wal" || journal == "memory",
                     "database " + connection_.path() + " refused WAL mode (journal_mode=" + journal + ")");
      connection_.execute("PRAGMA synchronous = NORMAL");
      schema::migrate(connection_);
      return;
    } catch (const sqlite::DatabaseBusy&) {
      if (std::chrono::steady_clock::now() >= deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(5 * attempt, 50)));
    }
  }
}

std::string SqliteStore::location() const { return connection_.path(); }

std::string SqliteStore::journal_mode() {
  std::lock_guard lock(mutex_);
  return connection_.query_text("PRAGMA journal_mode");
}

int SqliteStore::schema_version() {
  std::lock_guard lock(mutex_);
  return static_cast<int>(connection_.query_int("PRAGMA user_version"));
}

// ---- runs

int64_t SqliteStore::create_run(const Run& run) {
  std::lock_guard lock(mutex_);
  const std::string created = or_now(run.created);
  Statement insert(connection_,
                   "INSERT INTO runs (created, updated, goal_name, goal_yaml, kernel, target, seed, "
                   "simulator_version, status, stop_reason, goal_met, baseline_trial, best_trial, summary) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  insert.bind(1, created)
      .bind(2, run.updated.empty() ? created : run.updated)
      .bind(3, run.goal_name)
      .bind(4, redact_url_credentials(run.goal_yaml))
      .bind(5, run.kernel)
      .bind(6, run.target)
      .bind(7, static_cast<int64_t>(run.seed))
      .bind(8, run.simulator_version)
      .bind(9, to_string(run.status))
      .bind(10, run.stop_reason)
      .bind(11, run.goal_met)
      .bind(12, run.baseline_trial)
      .bind(13, run.best_trial)
      .bind(14, run.summary);
  insert.run();
  return connection_.last_insert_id();
}

void SqliteStore::update_run(const Run& run) {
  std::lock_guard lock(mutex_);
  Statement update(
      connection_,
      "UPDATE runs SET updated = ?, goal_name = ?, goal_yaml = ?, kernel = ?, target = ?, seed = ?, "
      "simulator_version = ?, status = ?, stop_reason = ?, goal_met = ?, baseline_trial = ?, "
      "best_trial = ?, summary = ? WHERE id = ?");
  update.bind(1, utc_now())
      .bind(2, run.goal_name)
      .bind(3, redact_url_credentials(run.goal_yaml))
      .bind(4, run.kernel)
      .bind(5, run.target)
      .bind(6, static_cast<int64_t>(run.seed))
      .bind(7, run.simulator_version)
      .bind(8, to_string(run.status))
      .bind(9, run.stop_reason)
      .bind(10, run.goal_met)
      .bind(11, run.baseline_trial)
      .bind(12, run.best_trial)
      .bind(13, run.summary)
      .bind(14, run.id);
  update.run();
  AUTOTUNE_CHECK(connection_.changes() == 1, "update_run: no run " + std::to_string(run.id));
}

bool SqliteStore::freeze_interrupted(int64_t id, const std::string& reason) {
  freeze();
  Statement update(connection_,
                   "UPDATE runs SET updated = ?, status = 'interrupted', stop_reason = ? "
                   "WHERE id = ? AND status = 'running'");
  update.bind(1, utc_now()).bind(2, reason).bind(3, id);
  update.run();
  return connection_.changes() == 1;
}

void SqliteStore::freeze() {
  mutex_.lock();  // never released: the process exits holding it
}

std::optional<LeaseHolder> SqliteStore::acquire_lease(int64_t id, double stale_after_s) {
  std::lock_guard lock(mutex_);
  sqlite::Transaction transaction(connection_);  // BEGIN IMMEDIATE: one acquirer at a time
  const std::string host = this_host();
  const int64_t pid = this_pid();
  const double now = unix_now();
  Statement select(connection_, "SELECT host, pid, heartbeat FROM run_leases WHERE run = ?");
  select.bind(1, id);
  if (select.step()) {
    LeaseHolder holder{select.text(0), select.int64(1), now - select.real(2)};
    const bool mine = holder.host == host && holder.pid == pid;
    if (!mine && !lease_holder_dead(holder, stale_after_s)) return holder;
  }
  Statement upsert(connection_,
                   "INSERT INTO run_leases (run, host, pid, acquired, heartbeat) VALUES (?, ?, ?, ?, ?) "
                   "ON CONFLICT(run) DO UPDATE SET host = excluded.host, pid = excluded.pid, "
                   "acquired = excluded.acquired, heartbeat = excluded.heartbeat");
  upsert.bind(1, id).bind(2, host).bind(3, pid).bind(4, utc_now()).bind(5, now);
  upsert.run();
  transaction.commit();
  return std::nullopt;
}

bool SqliteStore::renew_lease(int64_t id) {
  std::lock_guard lock(mutex_);
  Statement update(connection_, "UPDATE run_leases SET heartbeat = ? WHERE run = ? AND host = ? AND pid = ?");
  update.bind(1, unix_now()).bind(2, id).bind(3, this_host()).bind(4, this_pid());
  update.run();
  return connection_.changes() > 0;
}

void SqliteStore::release_lease(int64_t id) {
  std::lock_guard lock(mutex_);
  Statement remove(connection_, "DELETE FROM run_leases WHERE run = ? AND host = ? AND pid = ?");
  remove.bind(1, id).bind(2, this_host()).bind(3, this_pid());
  remove.run();
}

std::optional<Run> SqliteStore::run(int64_t id) {
  std::lock_guard lock(mutex_);
  Statement select(connection_, sql({"SELECT ", kRunColumns, " FROM runs WHERE id = ?"}));
  select.bind(1, id);
  if (!select.step()) return std::nullopt;
  return read_run(select);
}

std::vector<Run> SqliteStore::runs() {
  std::lock_guard lock(mutex_);
  Statement select(connection_, sql({"SELECT ", kRunColumns, " FROM runs ORDER BY id"}));
  std::vector<Run> out;
  while (select.step()) out.push_back(read_run(select));
  return out;
}

// ---- decisions

int64_t SqliteStore::append_decision(Decision& decision) {
  std::lock_guard lock(mutex_);
  const std::string created = or_now(decision.created);
  // The seq is computed inside the INSERT, which is atomic under SQLite's
  // write lock, so two writers can never take the same number.
  Statement insert(connection_,
                   "INSERT INTO decisions (run, seq, iteration, skill, action, proposer, inputs, evidence, "
                   "alternatives, rationale, outcome, duration_ms, created) "
                   "VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM decisions WHERE run = ?1), "
                   "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING seq");
  insert.bind(1, decision.run)
      .bind(2, decision.iteration)
      .bind(3, decision.skill)
      .bind(4, decision.action)
      .bind(5, decision.proposer)
      .bind(6, decision.inputs)
      .bind(7, decision.evidence)
      .bind(8, decision.alternatives)
      .bind(9, decision.rationale)
      .bind(10, decision.outcome)
      .bind(11, decision.duration_ms)
      .bind(12, created);
  AUTOTUNE_CHECK(insert.step(), "INSERT ... RETURNING gave no row");
  const int64_t seq = insert.int64(0);
  insert.run();
  decision.seq = seq;
  decision.created = created;
  return seq;
}

void SqliteStore::set_decision_outcome(int64_t run, int64_t seq, const std::string& outcome) {
  std::lock_guard lock(mutex_);
  Statement update(connection_, "UPDATE decisions SET outcome = ? WHERE run = ? AND seq = ?");
  update.bind(1, outcome).bind(2, run).bind(3, seq);
  update.run();
  AUTOTUNE_CHECK(connection_.changes() == 1, "set_decision_outcome: no decision " + std::to_string(seq) +
                                                 " in run " + std::to_string(run));
}

std::vector<Decision> SqliteStore::decisions(int64_t run, const std::optional<std::string>& skill) {
  std::lock_guard lock(mutex_);
  Statement select(connection_,
                   sql({"SELECT ", kDecisionColumns,
                        " FROM decisions WHERE run = ?1 AND (?2 IS NULL OR skill = ?2) ORDER BY seq"}));
  select.bind(1, run);
  if (skill) select.bind(2, *skill);
  std::vector<Decision> out;
  while (select.step()) out.push_back(read_decision(select));
  return out;
}

std::optional<Decision> SqliteStore::decision(int64_t run, int64_t seq) {
  std::lock_guard lock(mutex_);
  Statement select(connection_,
                   sql({"SELECT ", kDecisionColumns, " FROM decisions WHERE run = ? AND seq = ?"}));
  select.bind(1, run).bind(2, seq);
  if (!select.step()) return std::nullopt;
  return read_decision(select);
}

int64_t SqliteStore::last_decision_seq(int64_t run) {
  std::lock_guard lock(mutex_);
  Statement select(connection_, "SELECT COALESCE(MAX(seq), 0) FROM decisions WHERE run = ?");
  select.bind(1, run);
  AUTOTUNE_CHECK(select.step(), "aggregate gave no row");
  return select.int64(0);
}

// ---- trials

void SqliteStore::commit_trials(std::vector<Trial>& trials) {
  if (trials.empty()) return;
  std::lock_guard lock(mutex_);
  std::vector<std::pair<int64_t, std::string>> assigned;  // written back only after COMMIT
  assigned.reserve(trials.size());
  sqlite::Transaction transaction(connection_);
  Statement insert(
      connection_,
      "INSERT INTO trials (run, iteration, decision_seq, variant, params, config_hash, cache_key, "
      "status, metrics, repeats, error, verification, cache_hit, created, duration_ms, batch) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const Trial& trial : trials) {
    const std::string created = or_now(trial.created);
    insert.reset();
    insert.bind(1, trial.run)
        .bind(2, trial.iteration)
        .bind(3, trial.decision_seq)
        .bind(4, trial.variant)
        .bind(5, trial.params)
        .bind(6, trial.config_hash)
        .bind(7, trial.cache_key)
        .bind(8, to_string(trial.status))
        .bind(9, trial.metrics)
        .bind(10, trial.repeats)
        .bind(11, trial.error)
        .bind(12, trial.verification)
        .bind(13, trial.cache_hit)
        .bind(14, created)
        .bind(15, trial.duration_ms)
        .bind(16, trial.batch);
    insert.run();
    assigned.emplace_back(connection_.last_insert_id(), created);
  }
  transaction.commit();
  for (std::size_t i = 0; i < trials.size(); ++i) {
    trials[i].id = assigned[i].first;
    trials[i].created = assigned[i].second;
  }
}

std::vector<Trial> SqliteStore::trials(int64_t run, std::optional<int> top_k, const Ranking& ranking) {
  std::lock_guard lock(mutex_);
  std::vector<Trial> out;
  if (!top_k) {
    Statement select(connection_, sql({"SELECT ", kTrialColumns, " FROM trials WHERE run = ? ORDER BY id"}));
    select.bind(1, run);
    while (select.step()) out.push_back(read_trial(select));
    return out;
  }
  AUTOTUNE_CHECK(*top_k >= 0, "top_k must not be negative");
  const std::string path = "$." + plain_metric_name(ranking.metric);
  Statement select(
      connection_,
      sql({"SELECT ", kTrialColumns,
           " FROM trials WHERE run = ?1 AND status IN ('ok', 'cached') "
           "AND json_type(metrics, ?2) IN ('integer', 'real') ORDER BY json_extract(metrics, ?2) ",
           ranking.lower_is_better ? "ASC" : "DESC", ", id LIMIT ?3"}));
  select.bind(1, run).bind(2, path).bind(3, *top_k);
  while (select.step()) out.push_back(read_trial(select));
  return out;
}

std::optional<Trial> SqliteStore::trial(int64_t run, int64_t trial_id) {
  std::lock_guard lock(mutex_);
  Statement select(connection_, sql({"SELECT ", kTrialColumns, " FROM trials WHERE id = ? AND run = ?"}));
  select.bind(1, trial_id).bind(2, run);
  if (!select.step()) return std::nullopt;
  return read_trial(select);
}

TrialCounts SqliteStore::trial_counts(int64_t run) {
  std::lock_guard lock(mutex_);
  Statement select(connection_,
                   "SELECT COUNT(*), "
                   "COALESCE(SUM(status IN ('ok', 'cached')), 0), COALESCE(SUM(status = 'invalid'), 0), "
                   "COALESCE(SUM(status = 'wrong_answer'), 0), COALESCE(SUM(status = 'failed'), 0), "
                   "COALESCE(SUM(status = 'timeout'), 0), COALESCE(SUM(cache_hit), 0) "
                   "FROM trials WHERE run = ?");
  select.bind(1, run);
  AUTOTUNE_CHECK(select.step(), "aggregate gave no row");
  return TrialCounts{select.int64(0), select.int64(1), select.int64(2), select.int64(3),
                     select.int64(4), select.int64(5), select.int64(6)};
}

std::optional<Trial> SqliteStore::cached_trial(const std::string& cache_key) {
  std::lock_guard lock(mutex_);
  Statement select(connection_,
                   sql({"SELECT ", kTrialColumns,
                        " FROM trials WHERE cache_key = ? AND status IN ('ok', 'invalid', 'wrong_answer') "
                        "ORDER BY id DESC LIMIT 1"}));
  select.bind(1, cache_key);
  if (!select.step()) return std::nullopt;
  return read_trial(select);
}

// ---- profiles

void SqliteStore::save_profile(const Profile& profile) {
  std::lock_guard lock(mutex_);
  Statement upsert(
      connection_,
      "INSERT INTO profiles (trial, summary, timeline, created) VALUES (?, ?, ?, ?) "
      "ON CONFLICT (trial) DO UPDATE SET summary = excluded.summary, timeline = excluded.timeline, "
      "created = excluded.created");
  upsert.bind(1, profile.trial).bind(2, profile.summary).bind(4, or_now(profile.created));
  if (profile.timeline) {
    // A present timeline is stored even when it is JSON null.
    upsert.bind(3, std::string_view(profile.timeline->dump(-1, ' ', false, Json::error_handler_t::replace)));
  } else {
    upsert.bind_null(3);
  }
  upsert.run();
}

std::optional<Profile> SqliteStore::profile(int64_t trial) {
  std::lock_guard lock(mutex_);
  Statement select(connection_, "SELECT trial, summary, timeline, created FROM profiles WHERE trial = ?");
  select.bind(1, trial);
  if (!select.step()) return std::nullopt;
  Profile profile;
  profile.trial = select.int64(0);
  profile.summary = select.json(1);
  if (!select.is_null(2)) profile.timeline = select.json(2);
  profile.created = select.text(3);
  return profile;
}

// ---- LLM calls

int64_t SqliteStore::append_llm_call(const LlmCall& call) {
  std::lock_guard lock(mutex_);
  Statement insert(connection_,
                   "INSERT INTO llm_calls (run, created, prompt_hash, model, latency_ms, prompt_tokens, "
                   "completion_tokens, request, response, accepted, reject_reason) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  insert.bind(1, call.run)
      .bind(2, or_now(call.created))
      .bind(3, call.prompt_hash)
      .bind(4, call.model)
      .bind(5, call.latency_ms)
      .bind(6, call.prompt_tokens)
      .bind(7, call.completion_tokens)
      .bind(8, redact_credentials(call.request))
      .bind(9, call.response)
      .bind(10, call.accepted)
      .bind(11, redact_url_credentials(call.reject_reason));
  insert.run();
  return connection_.last_insert_id();
}

std::vector<LlmCall> SqliteStore::llm_calls(int64_t run) {
  std::lock_guard lock(mutex_);
  Statement select(connection_,
                   sql({"SELECT ", kLlmCallColumns, " FROM llm_calls WHERE run = ? ORDER BY id"}));
  select.bind(1, run);
  std::vector<LlmCall> out;
  while (select.step()) out.push_back(read_llm_call(select));
  return out;
}

std::optional<LlmCall> SqliteStore::cached_llm_response(const std::string& prompt_hash) {
  std::lock_guard lock(mutex_);
  Statement select(connection_, sql({"SELECT ", kLlmCallColumns,
                                     " FROM llm_calls WHERE prompt_hash = ? AND response <> '' "
                                     "ORDER BY id DESC LIMIT 1"}));
  select.bind(1, prompt_hash);
  if (!select.step()) return std::nullopt;
  return read_llm_call(select);
}

}  // namespace autotune::store

namespace autotune::store {

// ---- the measurement queue

void SqliteStore::set_measurement_context(const MeasurementContext& context) {
  std::lock_guard lock(mutex_);
  Statement upsert(connection_,
                   "INSERT INTO measurement_contexts (run, goal_yaml, goal_file, timeout_s, created) "
                   "VALUES (?, ?, ?, ?, ?) ON CONFLICT (run) DO UPDATE SET goal_yaml = excluded.goal_yaml, "
                   "goal_file = excluded.goal_file, timeout_s = excluded.timeout_s");
  upsert.bind(1, context.run)
      .bind(2, redact_url_credentials(context.goal_yaml))
      .bind(3, context.goal_file)
      .bind(4, context.timeout_s)
      .bind(5, utc_now());
  upsert.run();
}

std::optional<MeasurementContext> SqliteStore::measurement_context(int64_t run) {
  std::lock_guard lock(mutex_);
  Statement select(connection_,
                   "SELECT run, goal_yaml, goal_file, timeout_s FROM measurement_contexts WHERE run = ?");
  select.bind(1, run);
  if (!select.step()) return std::nullopt;
  return MeasurementContext{select.int64(0), select.text(1), select.text(2), select.real(3)};
}

std::vector<QueuedMeasurement> SqliteStore::enqueue_measurements(
    int64_t run, const std::vector<std::pair<std::string, Json>>& items) {
  std::lock_guard lock(mutex_);
  sqlite::Transaction transaction(connection_);
  Statement insert(connection_,
                   "INSERT INTO measurement_queue (run, config_hash, candidate, created) VALUES (?, ?, ?, ?) "
                   "ON CONFLICT (run, config_hash) DO NOTHING");
  Statement select(connection_, sql({"SELECT ", kQueueColumns,
                                     " FROM measurement_queue WHERE run = ? AND config_hash = ?"}));
  const std::string now = utc_now();
  std::vector<QueuedMeasurement> out;
  out.reserve(items.size());
  for (const auto& [config_hash, candidate] : items) {
    insert.reset();
    insert.bind(1, run).bind(2, config_hash).bind(3, candidate).bind(4, now);
    insert.run();
    select.reset();
    select.bind(1, run).bind(2, config_hash);
    AUTOTUNE_CHECK(select.step(), "a queued measurement vanished inside its transaction");
    out.push_back(read_queued_measurement(select));
  }
  transaction.commit();
  return out;
}

std::optional<QueuedMeasurement> SqliteStore::claim_measurement(const std::string& worker,
                                                                double stale_after_s,
                                                                std::optional<int64_t> only_run) {
  std::lock_guard lock(mutex_);
  sqlite::Transaction transaction(connection_);  // BEGIN IMMEDIATE: one claimer at a time
  const double now = unix_now();
  Statement pick(connection_,
                 "SELECT q.id FROM measurement_queue q JOIN runs r ON r.id = q.run "
                 "WHERE (q.state = 'queued' OR (q.state = 'claimed' AND q.heartbeat < ?1)) "
                 "AND (?2 IS NULL OR q.run = ?2) AND (?2 IS NOT NULL OR r.status = 'running') "
                 "ORDER BY q.id LIMIT 1");
  pick.bind(1, now - stale_after_s).bind(2, only_run);
  if (!pick.step()) return std::nullopt;
  const int64_t id = pick.int64(0);
  Statement claim(connection_,
                  sql({"UPDATE measurement_queue SET state = 'claimed', worker = ?, heartbeat = ?, "
                       "attempts = attempts + 1 WHERE id = ? RETURNING ",
                       kQueueColumns}));
  claim.bind(1, worker).bind(2, now).bind(3, id);
  AUTOTUNE_CHECK(claim.step(), "the picked queue row vanished inside its transaction");
  QueuedMeasurement item = read_queued_measurement(claim);
  claim.run();
  transaction.commit();
  return item;
}

std::vector<int64_t> SqliteStore::heartbeat_worker(const std::string& worker, const std::string& host,
                                                   int jobs, int64_t measured) {
  std::lock_guard lock(mutex_);
  sqlite::Transaction transaction(connection_);
  const double now = unix_now();
  Statement upsert(
      connection_,
      "INSERT INTO workers (id, host, jobs, measured, started, heartbeat) VALUES (?, ?, ?, ?, ?, ?) "
      "ON CONFLICT (id) DO UPDATE SET measured = excluded.measured, heartbeat = excluded.heartbeat");
  upsert.bind(1, worker).bind(2, host).bind(3, jobs).bind(4, measured).bind(5, utc_now()).bind(6, now);
  upsert.run();
  Statement renew(
      connection_,
      "UPDATE measurement_queue SET heartbeat = ? WHERE state = 'claimed' AND worker = ? RETURNING id");
  renew.bind(1, now).bind(2, worker);
  std::vector<int64_t> held;
  while (renew.step()) held.push_back(renew.int64(0));
  transaction.commit();
  std::sort(held.begin(), held.end());
  return held;
}

bool SqliteStore::complete_measurement(int64_t id, const std::string& worker, const Json& result) {
  std::lock_guard lock(mutex_);
  Statement update(connection_,
                   "UPDATE measurement_queue SET state = 'done', result = ?, finished = ? "
                   "WHERE id = ? AND worker = ? AND state = 'claimed'");
  update.bind(1, result).bind(2, utc_now()).bind(3, id).bind(4, worker);
  update.run();
  return connection_.changes() == 1;
}

std::vector<QueuedMeasurement> SqliteStore::queued_measurements(const std::vector<int64_t>& ids) {
  std::lock_guard lock(mutex_);
  std::vector<QueuedMeasurement> out;
  Statement select(connection_, sql({"SELECT ", kQueueColumns, " FROM measurement_queue WHERE id = ?"}));
  for (int64_t id : ids) {
    select.reset();
    select.bind(1, id);
    if (select.step()) out.push_back(read_queued_measurement(select));
  }
  return out;
}

void SqliteStore::mark_measurements_committed(const std::vector<int64_t>& ids) {
  if (ids.empty()) return;
  std::lock_guard lock(mutex_);
  sqlite::Transaction transaction(connection_);
  Statement update(connection_, "UPDATE measurement_queue SET state = 'committed' WHERE id = ?");
  for (int64_t id : ids) {
    update.reset();
    update.bind(1, id);
    update.run();
  }
  transaction.commit();
}

int64_t SqliteStore::active_workers(double fresh_s) {
  std::lock_guard lock(mutex_);
  Statement select(connection_, "SELECT COUNT(*) FROM workers WHERE heartbeat >= ? AND jobs > 0");
  select.bind(1, unix_now() - fresh_s);
  AUTOTUNE_CHECK(select.step(), "aggregate gave no row");
  return select.int64(0);
}

}  // namespace autotune::store
