// What only the SQLite file can show: schema versions and migrations, WAL,
// readers in another connection while a writer is busy, opening rules.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "store/schema.hpp"
#include "store_fixtures.hpp"

using namespace autotune;
using namespace autotune::store;
using namespace autotune::store::testing;

namespace {

std::set<std::string> schema_objects(sqlite::Connection& connection, const std::string& type) {
  sqlite::Statement select(connection,
                           "SELECT name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%'");
  select.bind(1, type);
  std::set<std::string> names;
  while (select.step()) names.insert(select.text(0));
  return names;
}

}  // namespace

TEST_CASE("sqlite: a new file is migrated to the latest schema version") {
  TempDir dir;
  const std::string path = dir.file("new.db");
  {
    SqliteStore store(path);
    CHECK(store.schema_version() == schema::latest_version());
    CHECK(store.journal_mode() == "wal");
  }
  sqlite::Connection connection(path, false);
  CHECK(connection.query_int("PRAGMA user_version") == schema::latest_version());
  CHECK(connection.query_text("PRAGMA journal_mode") == "wal");  // persistent in the file
  const auto tables = schema_objects(connection, "table");
  for (const char* table : {"runs", "decisions", "trials", "profiles", "llm_calls"}) {
    CHECK_MESSAGE(tables.count(table) == 1, table);
  }
  const auto views = schema_objects(connection, "view");
  for (const char* view :
       {"run_overview", "trial_summary", "decision_log", "run_baseline", "measured_trials"}) {
    CHECK_MESSAGE(views.count(view) == 1, view);
  }
  const auto indexes = schema_objects(connection, "index");
  CHECK(indexes.count("trials_by_cache_key") == 1);
  CHECK(indexes.count("llm_calls_by_prompt") == 1);
}

TEST_CASE("sqlite: migrations are ordered, each step bumps user_version, and old files are upgraded") {
  const auto& list = schema::migrations();
  REQUIRE_FALSE(list.empty());
  for (std::size_t i = 0; i < list.size(); ++i) CHECK(list[i].version == static_cast<int>(i + 1));

  TempDir dir;
  const std::string path = dir.file("old.db");
  {
    sqlite::Connection connection(path, true);
    schema::migrate(connection, 1);
    CHECK(connection.query_int("PRAGMA user_version") == 1);
    CHECK(schema_objects(connection, "view").empty());
    connection.execute(
        "INSERT INTO runs (created, updated, goal_name, goal_yaml, kernel, target, seed, simulator_version, "
        "status) VALUES ('2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 'old', 'k: v', 'gemm', "
        "'trn1', 1, 'sim-0', 'completed')");
  }
  SqliteStore store(path, OpenMode::existing);
  CHECK(store.schema_version() == schema::latest_version());
  auto runs = store.runs();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].goal_name == "old");
  CHECK(runs[0].status == RunStatus::completed);
}

TEST_CASE("sqlite: a database newer than this build is refused with one clear line") {
  TempDir dir;
  const std::string path = dir.file("future.db");
  { SqliteStore store(path); }
  {
    sqlite::Connection connection(path, false);
    connection.execute("PRAGMA user_version = " + std::to_string(schema::latest_version() + 1));
  }
  const std::string expected =
      "database " + path + " has schema version " + std::to_string(schema::latest_version() + 1) +
      ", newer than this autotune supports (" + std::to_string(schema::latest_version()) +
      "); use a newer autotune or another --db";
  CHECK_THROWS_WITH_AS(open_store(path, OpenMode::existing), expected.c_str(), UserError);
  CHECK_THROWS_AS(open_store(path), UserError);
}

TEST_CASE("sqlite: files that are not autotune databases are refused") {
  TempDir dir;
  const std::string foreign = dir.file("foreign.db");
  {
    sqlite::Connection connection(foreign, true);
    connection.execute("CREATE TABLE unrelated (x)");
  }
  CHECK_THROWS_WITH_AS(open_store(foreign),
                       (foreign + " is not an autotune database (it has tables but no "
                                  "schema version)")
                           .c_str(),
                       UserError);

  const std::string text = dir.file("notes.txt");
  std::ofstream(text) << "this is not a database, just some text that is long enough to be checked\n";
  CHECK_THROWS_AS(open_store(text, OpenMode::existing), UserError);
}

TEST_CASE("sqlite: reading a missing database is an error and creates nothing") {
  TempDir dir;
  const std::string path = dir.file("missing.db");
  CHECK_THROWS_WITH_AS(
      open_store(path, OpenMode::existing),
      ("database " + path + " does not exist (use --db or AUTOTUNE_DB to choose another)").c_str(),
      UserError);
  CHECK_FALSE(std::filesystem::exists(path));
  open_store(path, OpenMode::create);
  CHECK(std::filesystem::exists(path));
}

TEST_CASE("sqlite: the in-memory twin is private per store and not WAL") {
  SqliteStore first(":memory:");
  MemoryStore second;
  first.create_run(sample_run());
  CHECK(first.runs().size() == 1);
  CHECK(second.runs().empty());
  CHECK(second.journal_mode() == "memory");
  CHECK(second.location() == ":memory:");
  CHECK(second.schema_version() == schema::latest_version());
}

TEST_CASE("sqlite: a reader sees committed data while a writer holds an open transaction") {
  TempDir dir;
  const std::string path = dir.file("shared.db");
  SqliteStore writer(path);
  const SeededRun seeded = seed_sample_run(writer);
  SqliteStore reader(path, OpenMode::existing);

  // Another process in the middle of a batch: the write lock is taken and
  // rows are written but not committed.
  sqlite::Connection other(path, false);
  other.execute("PRAGMA foreign_keys = ON");
  sqlite::Transaction open_batch(other);
  other.execute(
      "INSERT INTO trials (run, iteration, variant, params, config_hash, cache_key, status, created) "
      "VALUES (" +
      std::to_string(seeded.run) + ", 9, 'pending', '{}', 'h', 'k', 'ok', 'now')");

  // Readers neither block nor see the uncommitted row.
  CHECK(reader.trials(seeded.run).size() == 4);
  CHECK(reader.decisions(seeded.run).size() == 3);
  CHECK(reader.runs().size() == 1);
  CHECK(reader.trial_counts(seeded.run).total == 4);
  SqliteStore late_reader(path, OpenMode::existing);  // opening does not need the write lock either
  CHECK(late_reader.trials(seeded.run).size() == 4);

  open_batch.commit();
  auto after = reader.trials(seeded.run);
  REQUIRE(after.size() == 5);
  CHECK(after.back().variant == "pending");
}

TEST_CASE("sqlite: two stores writing one file interleave without losing or repeating a seq") {
  TempDir dir;
  const std::string path = dir.file("two-writers.db");
  SqliteStore first(path);
  SqliteStore second(path, OpenMode::existing);
  const int64_t run = first.create_run(sample_run());
  for (int i = 0; i < 6; ++i) {
    SqliteStore& writer = i % 2 == 0 ? first : second;
    Decision decision{
        .run = run, .iteration = i, .skill = "orchestrator", .action = "step", .proposer = "rules"};
    CHECK(writer.append_decision(decision) == i + 1);
    std::vector<Trial> batch{sample_trial(run, decision.seq, "v", i, Outcome::ok, 1e-3 * (i + 1))};
    writer.commit_trials(batch);
  }
  CHECK(first.trials(run).size() == 6);
  CHECK(second.last_decision_seq(run) == 6);
  CHECK(second.best_trial(run)->params["tile"] == 0);
}

TEST_CASE("sqlite: the views summarise runs, trials and decisions for the sqlite3 shell") {
  TempDir dir;
  const std::string path = dir.file("views.db");
  SqliteStore store(path);
  const SeededRun seeded = seed_sample_run(store);

  sqlite::Connection shell(path, false);
  sqlite::Statement overview(
      shell,
      "SELECT evaluations, baseline_latency_s, best_latency_s, best_trial, status, improvement, speedup "
      "FROM run_overview WHERE run = ?");
  overview.bind(1, seeded.run);
  REQUIRE(overview.step());
  CHECK(overview.int64(0) == 4);
  CHECK(overview.real(1) == doctest::Approx(4e-3));
  CHECK(overview.real(2) == doctest::Approx(3e-3));
  CHECK(overview.int64(3) == seeded.best);
  CHECK(overview.text(4) == "completed");
  CHECK(overview.real(5) == doctest::Approx(0.25));  // no recorded improvement: latency removed
  CHECK(overview.real(6) == doctest::Approx(4.0 / 3.0));
  overview.reset();  // a statement left mid-way holds its read snapshot open

  sqlite::Statement summary(shell,
                            "SELECT trial, status, latency_s, speedup FROM trial_summary WHERE run = ? "
                            "ORDER BY trial");
  summary.bind(1, seeded.run);
  std::map<int64_t, std::pair<std::string, std::optional<double>>> rows;
  while (summary.step()) {
    rows[summary.int64(0)] = {summary.text(1),
                              summary.is_null(3) ? std::nullopt : std::optional<double>(summary.real(3))};
  }
  REQUIRE(rows.size() == 4);
  REQUIRE(rows[seeded.baseline].second);
  CHECK(*rows[seeded.baseline].second == doctest::Approx(1.0));
  CHECK(*rows[seeded.best].second == doctest::Approx(4.0 / 3.0));
  CHECK(*rows[seeded.slower].second == doctest::Approx(0.8));
  CHECK(rows[seeded.invalid].first == "invalid");
  CHECK_FALSE(rows[seeded.invalid].second);

  sqlite::Statement log(shell,
                        "SELECT seq, skill, trials_proposed FROM decision_log WHERE run = ? ORDER BY seq");
  log.bind(1, seeded.run);
  std::vector<std::tuple<int64_t, std::string, int64_t>> decisions;
  while (log.step()) decisions.emplace_back(log.int64(0), log.text(1), log.int64(2));
  REQUIRE(decisions.size() == 3);
  CHECK(decisions[0] == std::make_tuple(int64_t{1}, std::string("orchestrator"), int64_t{1}));
  CHECK(decisions[1] == std::make_tuple(int64_t{2}, std::string("profile_analyzer"), int64_t{0}));
  CHECK(decisions[2] == std::make_tuple(int64_t{3}, std::string("param_explorer"), int64_t{3}));

  Run run = *store.run(seeded.run);
  run.summary = {{"improvement", 0.5}};
  store.update_run(run);
  sqlite::Statement recorded(shell, "SELECT improvement FROM run_overview WHERE run = ?");
  recorded.bind(1, seeded.run);
  REQUIRE(recorded.step());
  CHECK(recorded.real(0) == doctest::Approx(0.5));  // the orchestrator's figure wins
}

TEST_CASE("paths: the database path comes from --db, then AUTOTUNE_DB, then ./autotune.db") {
  CHECK(resolve_database_path(std::string("flag.db"), "env.db") == "flag.db");
  CHECK(resolve_database_path(std::nullopt, "env.db") == "env.db");
  CHECK(resolve_database_path(std::nullopt, "") == "autotune.db");
  CHECK(resolve_database_path(std::nullopt, nullptr) == "autotune.db");
}

TEST_CASE("paths: the files of a database that an output must not replace") {
  const auto files = database_files("sqlite:runs.db");
  REQUIRE(files.size() == 4);
  CHECK(files[0].path == "runs.db");
  CHECK(files[1].path == "runs.db-wal");
  CHECK(database_files(":memory:").empty());
  CHECK(database_files("postgresql://host/db").empty());
}

TEST_CASE("paths: how long a PostgreSQL call waits for its server: AUTOTUNE_DB_OUTAGE_S, else by mode") {
  using std::chrono::seconds;
  CHECK(outage_wait(OpenMode::create, nullptr) == seconds(600));
  CHECK(outage_wait(OpenMode::existing, "") == seconds(60));
  CHECK(outage_wait(OpenMode::existing, "900") == seconds(900));
  CHECK(outage_wait(OpenMode::create, "0") == seconds(0));
  for (const char* bad : {"abc", "-1", "1e3", " 5", "86401", "99999999999999999999999"})
    CHECK_THROWS_WITH_AS(outage_wait(OpenMode::create, bad),
                         doctest::Contains("accepted: a whole number of seconds from 0 to 86400"), UserError);
}

TEST_CASE("records: status names round-trip and unknown names list the accepted ones") {
  for (auto status : {Outcome::ok, Outcome::invalid, Outcome::wrong_answer, Outcome::failed, Outcome::timeout,
                      Outcome::cached}) {
    CHECK(parse_trial_status(to_string(status)) == status);
  }
  for (auto status : {RunStatus::running, RunStatus::completed, RunStatus::failed, RunStatus::interrupted}) {
    CHECK(parse_run_status(to_string(status)) == status);
  }
  CHECK_THROWS_WITH_AS(
      parse_trial_status("great"),
      "unknown trial status 'great'; accepted: ok, invalid, wrong_answer, failed, timeout, cached",
      UserError);
  CHECK(is_measured(Outcome::cached));
  CHECK_FALSE(is_measured(Outcome::wrong_answer));
}
