#pragma once
// A fresh PostgreSQL database per test, on the throwaway cluster that
// tests/support/postgres_cluster.py started (CTest fixture "postgres"; the
// environment variable AUTOTUNE_TEST_POSTGRES names its state file).
#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <random>
#include <stdexcept>
#include <string>

#include "store/postgres_store.hpp"

namespace autotune::store::testing {

class PostgresDatabase {
 public:
  PostgresDatabase() {
    std::random_device entropy;
    static std::atomic<int> counter{0};
    name_ = "autotune_test_" + std::to_string(entropy()) + "_" + std::to_string(counter++);
    pqxx::nontransaction(admin()).exec("CREATE DATABASE " + name_);
  }
  ~PostgresDatabase() {
    try {
      pqxx::nontransaction(admin()).exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (const std::exception&) {
      // The cluster is removed after the tests anyway.
    }
  }
  PostgresDatabase(const PostgresDatabase&) = delete;
  PostgresDatabase& operator=(const PostgresDatabase&) = delete;

  const std::string& name() const { return name_; }
  std::string url() const { return url_of(name_); }

  // The cluster's state file (what postgres_cluster.py wrote).
  static nlohmann::json cluster() {
    const char* path = std::getenv("AUTOTUNE_TEST_POSTGRES");
    if (path == nullptr)
      throw std::runtime_error("AUTOTUNE_TEST_POSTGRES is not set (run the tests through ctest)");
    std::ifstream in(path);
    if (!in) throw std::runtime_error(std::string("no PostgreSQL test cluster state in ") + path);
    return nlohmann::json::parse(in);
  }
  static std::string url_of(const std::string& database) {
    std::string url = cluster()["url"].get<std::string>();
    return url.replace(url.find("%s"), 2, database);
  }
  // A connection to the maintenance database, for administration.
  static pqxx::connection& admin() {
    static pqxx::connection connection(url_of("postgres"));
    return connection;
  }

 private:
  std::string name_;
};

struct PostgresStoreFixture {
  PostgresDatabase database;
  std::unique_ptr<Store> store = open_store(database.url());
};

}  // namespace autotune::store::testing
