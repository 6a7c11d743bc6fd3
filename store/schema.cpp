#include "store/schema.hpp"

#include "core/error.hpp"

namespace autotune::store::schema {
namespace {

// Version 1: the tables of DESIGN.md and the indexes behind Store's lookups.
constexpr const char* kTables = R"sql(
CREATE TABLE runs (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  created           TEXT NOT NULL,
  updated           TEXT NOT NULL,
  goal_name         TEXT NOT NULL,
  goal_yaml         TEXT NOT NULL,
  kernel            TEXT NOT NULL,
  target            TEXT NOT NULL,
  seed              INTEGER NOT NULL,
  simulator_version TEXT NOT NULL,
  status            TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'interrupted')),
  stop_reason       TEXT NOT NULL DEFAULT '',
  goal_met          INTEGER NOT NULL DEFAULT 0 CHECK (goal_met IN (0, 1)),
  baseline_trial    INTEGER REFERENCES trials(id),
  best_trial        INTEGER REFERENCES trials(id),
  summary           TEXT
);

CREATE TABLE decisions (
  run          INTEGER NOT NULL REFERENCES runs(id),
  seq          INTEGER NOT NULL CHECK (seq >= 1),
  iteration    INTEGER NOT NULL,
  skill        TEXT NOT NULL,
  action       TEXT NOT NULL,
  proposer     TEXT NOT NULL,
  inputs       TEXT,
  evidence     TEXT,
  alternatives TEXT,
  rationale    TEXT NOT NULL DEFAULT '',
  outcome      TEXT NOT NULL DEFAULT '',
  duration_ms  REAL NOT NULL DEFAULT 0,
  created      TEXT NOT NULL,
  PRIMARY KEY (run, seq)
);

CREATE TABLE trials (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  run          INTEGER NOT NULL REFERENCES runs(id),
  iteration    INTEGER NOT NULL,
  decision_seq INTEGER,
  variant      TEXT NOT NULL,
  params       TEXT,
  config_hash  TEXT NOT NULL,
  cache_key    TEXT NOT NULL,
  status       TEXT NOT NULL
               CHECK (status IN ('ok', 'invalid', 'wrong_answer', 'failed', 'timeout', 'cached')),
  metrics      TEXT,
  repeats      TEXT,
  error        TEXT NOT NULL DEFAULT '',
  verification TEXT,
  cache_hit    INTEGER NOT NULL DEFAULT 0 CHECK (cache_hit IN (0, 1)),
  created      TEXT NOT NULL,
  duration_ms  REAL NOT NULL DEFAULT 0,
  FOREIGN KEY (run, decision_seq) REFERENCES decisions(run, seq)
);
CREATE INDEX trials_by_run_decision ON trials(run, decision_seq);
CREATE INDEX trials_by_cache_key ON trials(cache_key);

CREATE TABLE profiles (
  trial    INTEGER PRIMARY KEY REFERENCES trials(id),
  summary  TEXT,
  timeline TEXT,
  created  TEXT NOT NULL
);

CREATE TABLE llm_calls (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  run               INTEGER NOT NULL REFERENCES runs(id),
  created           TEXT NOT NULL,
  prompt_hash       TEXT NOT NULL,
  model             TEXT NOT NULL,
  latency_ms        REAL NOT NULL DEFAULT 0,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  request           TEXT,
  response          TEXT NOT NULL DEFAULT '',
  accepted          INTEGER NOT NULL DEFAULT 0 CHECK (accepted IN (0, 1)),
  reject_reason     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX llm_calls_by_run ON llm_calls(run);
CREATE INDEX llm_calls_by_prompt ON llm_calls(prompt_hash);
)sql";

// Version 2: views for the sqlite3 shell (documented in docs/store.md).
// Latencies are metrics.latency_s of measured trials (ok, cached);
// speedup = baseline latency / latency (1.25 means 1.25x faster). A run's
// improvement is the one the orchestrator recorded for its objective
// (summary.improvement), else the fraction of baseline latency removed.
constexpr const char* kViews = R"sql(
CREATE VIEW measured_trials AS
SELECT run, id AS trial, json_extract(metrics, '$.latency_s') AS latency_s
FROM trials
WHERE status IN ('ok', 'cached') AND json_type(metrics, '$.latency_s') IN ('real', 'integer');

CREATE VIEW run_baseline AS
SELECT r.id AS run,
       COALESCE(r.baseline_trial, (SELECT MIN(m.trial) FROM measured_trials m WHERE m.run = r.id))
         AS baseline_trial,
       COALESCE((SELECT m.latency_s FROM measured_trials m WHERE m.trial = r.baseline_trial),
                (SELECT m.latency_s FROM measured_trials m WHERE m.run = r.id ORDER BY m.trial LIMIT 1))
         AS baseline_latency_s
FROM runs r;

CREATE VIEW run_overview AS
SELECT o.*, o.baseline_latency_s / o.best_latency_s AS speedup,
       COALESCE(json_extract(o.summary, '$.improvement'), 1.0 - o.best_latency_s / o.baseline_latency_s)
         AS improvement
FROM (
  SELECT r.id AS run, r.created, r.updated, r.goal_name, r.kernel, r.target, r.seed, r.simulator_version,
         r.status, r.stop_reason, r.goal_met, r.summary,
         (SELECT COUNT(*) FROM trials t WHERE t.run = r.id) AS evaluations,
         (SELECT COUNT(*) FROM trials t WHERE t.run = r.id AND t.cache_hit) AS cache_hits,
         b.baseline_trial,
         b.baseline_latency_s,
         COALESCE(r.best_trial,
                  (SELECT m.trial FROM measured_trials m WHERE m.run = r.id ORDER BY m.latency_s, m.trial LIMIT 1))
           AS best_trial,
         COALESCE((SELECT m.latency_s FROM measured_trials m WHERE m.trial = r.best_trial),
                  (SELECT MIN(m.latency_s) FROM measured_trials m WHERE m.run = r.id))
           AS best_latency_s
  FROM runs r JOIN run_baseline b ON b.run = r.id
) o;

CREATE VIEW trial_summary AS
SELECT t.run, t.id AS trial, t.iteration, t.decision_seq, t.variant, t.params, t.status,
       json_extract(t.metrics, '$.latency_s') AS latency_s,
       CASE WHEN t.status IN ('ok', 'cached')
            THEN b.baseline_latency_s / json_extract(t.metrics, '$.latency_s') END AS speedup,
       t.cache_hit, t.error, t.duration_ms, t.created
FROM trials t JOIN run_baseline b ON b.run = t.run;

CREATE VIEW decision_log AS
SELECT d.run, d.seq, d.iteration, d.skill, d.proposer, d.action, d.evidence, d.rationale, d.outcome,
       (SELECT COUNT(*) FROM trials t WHERE t.run = d.run AND t.decision_seq = d.seq) AS trials_proposed,
       d.duration_ms, d.created
FROM decisions d;
)sql";

// Version 5: the shared measurement queue (docs/distributed.md).
constexpr const char* kQueue = R"sql(
CREATE TABLE measurement_contexts (
  run       INTEGER PRIMARY KEY REFERENCES runs(id),
  goal_yaml TEXT NOT NULL,
  goal_file TEXT NOT NULL,
  timeout_s REAL NOT NULL,
  created   TEXT NOT NULL
);

CREATE TABLE measurement_queue (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  run         INTEGER NOT NULL REFERENCES runs(id),
  config_hash TEXT NOT NULL,
  candidate   TEXT NOT NULL,
  state       TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'claimed', 'done', 'committed')),
  worker      TEXT NOT NULL DEFAULT '',
  attempts    INTEGER NOT NULL DEFAULT 0,
  heartbeat   REAL,  -- the claimer's last heartbeat, seconds since the Unix epoch
  result      TEXT,
  created     TEXT NOT NULL,
  finished    TEXT,
  UNIQUE (run, config_hash)
);
CREATE INDEX measurement_queue_by_state ON measurement_queue(state, id);

CREATE TABLE workers (
  id        TEXT PRIMARY KEY,
  host      TEXT NOT NULL,
  jobs      INTEGER NOT NULL,
  measured  INTEGER NOT NULL DEFAULT 0,
  started   TEXT NOT NULL,
  heartbeat REAL NOT NULL
);
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list{
      {1, "tables runs, decisions, trials, profiles, llm_calls and their indexes", kTables},
      {2, "views measured_trials, run_baseline, run_overview, trial_summary, decision_log", kViews},
      {3, "trials.batch: the Benchmark Runner batch a trial was proposed in",
       "ALTER TABLE trials ADD COLUMN batch INTEGER;"},
      {4, "run_leases: which process runs a run, with its heartbeat",
       "CREATE TABLE run_leases (\n"
       "  run       INTEGER PRIMARY KEY REFERENCES runs(id),\n"
       "  host      TEXT NOT NULL,\n"
       "  pid       INTEGER NOT NULL,\n"
       "  acquired  TEXT NOT NULL,\n"
       "  heartbeat REAL NOT NULL  -- seconds since the Unix epoch\n"
       ");"},
      {5, "measurement_queue, measurement_contexts, workers: measuring shared with workers on other hosts",
       kQueue},
  };
  return list;
}

int latest_version() { return migrations().back().version; }

void migrate(sqlite::Connection& connection, std::optional<int> target) {
  const int wanted = target.value_or(latest_version());
  AUTOTUNE_CHECK(wanted >= 0 && wanted <= latest_version(), "migration target out of range");
  const auto current = connection.query_int("PRAGMA user_version");
  if (current < 0)
    throw UserError("database " + connection.path() + " has schema version " + std::to_string(current) +
                    ", which no autotune writes: it is not an autotune database");
  if (current > latest_version()) {
    throw UserError("database " + connection.path() + " has schema version " + std::to_string(current) +
                    ", newer than this autotune supports (" + std::to_string(latest_version()) +
                    "); use a newer autotune or another --db");
  }
  if (current >= wanted) return;
  for (const Migration& migration : migrations()) {
    if (migration.version > wanted) break;
    // Re-read the version under the write lock: another process may have
    // migrated the same file since we looked.
    sqlite::Transaction transaction(connection);
    const auto now = connection.query_int("PRAGMA user_version");
    if (now >= migration.version) continue;
    if (now == 0 && connection.query_int("SELECT COUNT(*) FROM sqlite_master") > 0) {
      throw UserError(connection.path() +
                      " is not an autotune database (it has tables but no schema version)");
    }
    connection.execute(migration.sql);
    connection.execute("PRAGMA user_version = " + std::to_string(migration.version));
    transaction.commit();
  }
}

}  // namespace autotune::store::schema
