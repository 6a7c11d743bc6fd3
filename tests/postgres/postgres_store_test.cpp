// What only the PostgreSQL store has to show: its schema and views match the
// SQLite store's, it refuses databases it must not touch, text PostgreSQL
// would reject is stored safely, and it survives a dropped connection.
#include <doctest/doctest.h>

#include <pqxx/pqxx>
#include <set>
#include <thread>

#include "core/error.hpp"
#include "postgres_fixture.hpp"
#include "store/postgres_schema.hpp"
#include "store/schema.hpp"
#include "store_fixtures.hpp"

using namespace autotune;
using namespace autotune::store;
using namespace autotune::store::testing;

TEST_CASE("postgres store: a new database is migrated to the latest schema version, once") {
  PostgresDatabase database;
  PostgresStore first(database.url());
  PostgresStore second(database.url());
  CHECK(first.schema_version() == schema::latest_version());
  pqxx::connection connection(database.url());
  pqxx::work txn(connection);
  CHECK(txn.exec("SELECT COUNT(*) FROM autotune_schema")[0][0].as<int>() == 1);
  for (const char* table : {"runs", "decisions", "trials", "profiles", "llm_calls", "run_leases"})
    CHECK(txn.exec(std::string("SELECT to_regclass('") + table + "') IS NOT NULL")[0][0].as<bool>());
  for (const char* view :
       {"measured_trials", "run_baseline", "run_overview", "trial_summary", "decision_log"})
    CHECK(txn.exec(std::string("SELECT to_regclass('") + view + "') IS NOT NULL")[0][0].as<bool>());
}

TEST_CASE("postgres store: a newer schema and a foreign 'runs' table are refused with one line") {
  {
    PostgresDatabase database;
    { PostgresStore store(database.url()); }
    pqxx::connection connection(database.url());
    pqxx::nontransaction(connection).exec("UPDATE autotune_schema SET version = 999");
    const std::string expected = "database " + database.url() + " has schema version 999, newer than this " +
                                 "autotune supports (" + std::to_string(schema::latest_version()) +
                                 "); use a newer autotune or another --db";
    CHECK_THROWS_WITH_AS(PostgresStore{database.url()}, expected.c_str(), UserError);
  }
  {
    PostgresDatabase database;
    pqxx::connection connection(database.url());
    pqxx::nontransaction(connection).exec("CREATE TABLE runs (name TEXT)");
    CHECK_THROWS_WITH_AS(
        PostgresStore{database.url()},
        (database.url() + " is not an autotune database (it has a table 'runs' but no schema "
                          "version)")
            .c_str(),
        UserError);
  }
}

TEST_CASE("postgres store: an unreachable server or database is one clear line without the password") {
  const std::string url = PostgresDatabase::url_of("no_such_database");
  const std::string with_password = "postgresql://autotune:hunter2@" + url.substr(url.find('@') + 1);
  try {
    PostgresStore store(with_password);
    FAIL("connected to a database that does not exist");
  } catch (const UserError& error) {
    const std::string message = error.what();
    CHECK(message.find("cannot connect to PostgreSQL database postgresql://autotune@/no_such_database") == 0);
    CHECK(message.find("no_such_database") != std::string::npos);
    CHECK(message.find("hunter2") == std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("postgres store: the views give the SQLite store's figures for the same run") {
  PostgresDatabase database;
  auto postgres = open_store(database.url());
  auto sqlite = open_store(":memory:");
  const SeededRun on_postgres = seed_sample_run(*postgres);
  seed_sample_run(*sqlite);
  pqxx::connection connection(database.url());
  pqxx::work txn(connection);
  const auto overview = txn.exec(
      "SELECT evaluations, baseline_trial, best_trial, baseline_latency_s, best_latency_s, speedup, "
      "improvement FROM run_overview WHERE run = " +
      std::to_string(on_postgres.run))[0];
  CHECK(overview[0].as<int>() == 4);
  CHECK(overview[1].as<int64_t>() == on_postgres.baseline);
  CHECK(overview[2].as<int64_t>() == on_postgres.best);
  CHECK(overview[3].as<double>() == doctest::Approx(4e-3));
  CHECK(overview[4].as<double>() == doctest::Approx(3e-3));
  CHECK(overview[5].as<double>() == doctest::Approx(4.0 / 3.0));
  CHECK(overview[6].as<double>() == doctest::Approx(0.25));
  const auto summary = txn.exec("SELECT trial, status, latency_s, speedup FROM trial_summary WHERE run = " +
                                std::to_string(on_postgres.run) + " ORDER BY trial");
  REQUIRE(summary.size() == 4);
  CHECK(summary[2][1].as<std::string>() == "invalid");
  CHECK(summary[2][2].is_null());
  CHECK(summary[2][3].is_null());
  CHECK(summary[3][3].as<double>() == doctest::Approx(0.8));
  CHECK(txn.exec("SELECT trials_proposed FROM decision_log WHERE run = " + std::to_string(on_postgres.run) +
                 " AND seq = 3")[0][0]
            .as<int>() == 3);
}

TEST_CASE("postgres store: text PostgreSQL would reject (invalid UTF-8, NUL) is stored with replacements") {
  PostgresStoreFixture fixture;
  Store& store = *fixture.store;
  const int64_t run = store.create_run(sample_run());
  Decision decision{.run = run,
                    .skill = "plugin",
                    .action = "say",
                    .proposer = "plugin:x",
                    .evidence = {{"note", std::string("bad \xff byte")}},
                    .rationale = std::string("nul \0 and \xc3 here", 16)};
  store.append_decision(decision);
  const Decision back = *store.decision(run, decision.seq);
  CHECK(back.rationale == "nul \xEF\xBF\xBD and \xEF\xBF\xBD here");
  CHECK(back.evidence["note"] == "bad \xEF\xBF\xBD byte");
}

TEST_CASE("postgres store: a dropped connection is re-established and the call goes through") {
  PostgresStoreFixture fixture;
  auto& store = dynamic_cast<PostgresStore&>(*fixture.store);
  const int64_t run = store.create_run(sample_run());
  pqxx::nontransaction(PostgresDatabase::admin())
      .exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" +
            fixture.database.name() + "' AND pid <> pg_backend_pid()");
  Decision decision{.run = run, .skill = "orchestrator", .action = "measure_baseline", .proposer = "rules"};
  CHECK(store.append_decision(decision) == 1);
  CHECK(store.reconnects() == 1);
  CHECK(store.decisions(run).size() == 1);
}

TEST_CASE("postgres store: its location keeps the user and drops the password") {
  PostgresDatabase database;
  const std::string url = database.url();
  const std::string with_password = "postgresql://autotune:hunter2@" + url.substr(url.find('@') + 1);
  PostgresStore store(with_password + "&password=hunter3");
  CHECK(store.location() == url + "&password=<redacted>");
}

TEST_CASE("postgres store: claimers on separate connections take every queued row exactly once") {
  PostgresDatabase database;
  auto coordinator = open_store(database.url());
  const int64_t run = coordinator->create_run(sample_run());
  std::vector<std::pair<std::string, Json>> items;
  constexpr int kRows = 200;
  for (int i = 0; i < kRows; ++i)
    items.emplace_back("c" + std::to_string(i), Json{{"variant", "v"}, {"i", i}});
  coordinator->enqueue_measurements(run, items);

  constexpr int kClaimers = 4;
  std::vector<std::vector<int64_t>> claimed(kClaimers);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClaimers; ++c) {
    threads.emplace_back([&, c] {
      auto store = open_store(database.url());  // its own connection, as on another host
      const std::string worker = "w" + std::to_string(c);
      while (auto item = store->claim_measurement(worker, 60, std::nullopt)) {
        claimed[c].push_back(item->id);
        CHECK(store->complete_measurement(item->id, worker, {{"status", "ok"}}));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<int64_t> all;
  std::size_t total = 0;
  for (const auto& ids : claimed) {
    total += ids.size();
    all.insert(ids.begin(), ids.end());
  }
  CHECK(total == kRows);
  CHECK(all.size() == kRows);
}
