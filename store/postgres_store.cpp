#include "store/postgres_store.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <pqxx/pqxx>
#include <regex>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"
#include "store/postgres_schema.hpp"
#include "store/record_rules.hpp"

namespace autotune::store {

struct PostgresStore::Connection {
  explicit Connection(const std::string& url) : connection(url) {}
  pqxx::connection connection;
};

namespace {

using namespace detail;

std::string sql(std::initializer_list<std::string_view> parts) {
  std::string text;
  for (auto part : parts) text += part;
  return text;
}

// libpq's messages span lines ("connection to server ... failed: ...\n\tIs the
// server running ...?"); a UserError is one line.
std::string one_line(std::string message) {
  for (char& c : message)
    if (c == '\n' || c == '\t') c = ' ';
  while (!message.empty() && message.back() == ' ') message.pop_back();
  return std::regex_replace(message, std::regex("  +"), " ");
}

// PostgreSQL text must be valid UTF-8 without NUL bytes; what plugins, LLMs
// and commands write need not be. Invalid sequences and NULs become U+FFFD.
std::string storable_text(std::string_view text) {
  bool clean = text.find('\0') == std::string_view::npos;
  std::string out;
  if (clean) {
    try {
      (void)Json(std::string(text)).dump();
      return std::string(text);
    } catch (const Json::type_error&) {
      // invalid UTF-8: repaired below
    }
  }
  out = Json::parse(Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace))
            .get<std::string>();
  std::string repaired;
  repaired.reserve(out.size());
  for (char c : out) repaired += c == '\0' ? std::string("\xEF\xBF\xBD") : std::string(1, c);
  return repaired;
}

// Positional parameters ($1, $2, ...) for one statement; a value left out
// (std::nullopt, a null Json) is SQL NULL.
class Params {
 public:
  Params& add(std::string_view text) {
    values_.emplace_back(storable_text(text));
    return *this;
  }
  Params& add(const std::string& text) { return add(std::string_view(text)); }
  Params& add(const char* text) { return add(std::string_view(text)); }
  Params& add(int64_t value) {
    values_.emplace_back(std::to_string(value));
    return *this;
  }
  Params& add(int value) { return add(static_cast<int64_t>(value)); }
  Params& add(double value) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", value);
    values_.emplace_back(text);
    return *this;
  }
  Params& add(bool value) { return add(static_cast<int64_t>(value ? 1 : 0)); }
  Params& add(const Json& value) {
    if (value.is_null()) {
      values_.emplace_back(std::nullopt);
    } else {
      values_.emplace_back(value.dump(-1, ' ', false, Json::error_handler_t::replace));
    }
    return *this;
  }
  Params& add(const std::optional<int64_t>& value) {
    if (value) return add(*value);
    values_.emplace_back(std::nullopt);
    return *this;
  }

  pqxx::result exec(pqxx::transaction_base& txn, const std::string& statement) const {
    std::vector<const char*> pointers;
    pointers.reserve(values_.size());
    for (const auto& value : values_) pointers.push_back(value ? value->c_str() : nullptr);
    return txn.exec_params(statement, pqxx::prepare::make_dynamic_params(pointers));
  }

 private:
  std::vector<std::optional<std::string>> values_;
};

// A result row with the accessors the shared readers expect.
class Row {
 public:
  explicit Row(const pqxx::row& row) : row_(row) {}
  bool is_null(int column) const { return row_[column].is_null(); }
  int64_t int64(int column) const { return row_[column].as<int64_t>(); }
  double real(int column) const { return row_[column].as<double>(); }
  std::string text(int column) const { return is_null(column) ? std::string() : row_[column].c_str(); }
  std::optional<int64_t> optional_int64(int column) const {
    if (is_null(column)) return std::nullopt;
    return int64(column);
  }
  Json json(int column) const {
    if (is_null(column)) return Json();
    Json value = Json::parse(row_[column].c_str(), nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) {
      throw UserError("the PostgreSQL store holds invalid JSON in column " +
                      std::string(row_[column].name()));
    }
    return value;
  }

 private:
  const pqxx::row& row_;
};

// A PostgreSQL array literal of ids, for "= ANY($1::BIGINT[])".
std::string id_array(const std::vector<int64_t>& ids) {
  std::string list = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) list += (i ? "," : "") + std::to_string(ids[i]);
  return list + "}";
}

template <class Record, class Reader>
std::vector<Record> read_all(const pqxx::result& rows, Reader read) {
  std::vector<Record> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(read(Row(row)));
  return out;
}

template <class Record, class Reader>
std::optional<Record> read_first(const pqxx::result& rows, Reader read) {
  if (rows.empty()) return std::nullopt;
  return read(Row(rows[0]));
}

// The URL as it may be shown and stored: the password is dropped from the
// user information (the user name stays, so the URL still works with
// ~/.pgpass or PGPASSWORD) and secret query parameters are redacted.
std::string displayable_url(const std::string& url) {
  static const std::regex user_password(R"(^(postgres(?:ql)?://[^:/@?#]*):[^@/?#]*@)");
  static const std::regex password_parameter(R"(([?&]password=)[^&#]*)", std::regex::icase);
  return std::regex_replace(std::regex_replace(url, user_password, "$1@"), password_parameter,
                            "$1<redacted>");
}

// The secrets of a libpq URL: the password of its user information and of a
// password= parameter, as written and percent-decoded.
std::vector<std::string> url_secrets(const std::string& url) {
  static const std::regex user_password(R"(^postgres(?:ql)?://[^:/@?#]*:([^@/?#]*)@)");
  static const std::regex password_parameter(R"([?&]password=([^&#]*))", std::regex::icase);
  std::vector<std::string> secrets;
  auto add = [&](const std::string& secret) {
    if (secret.empty()) return;
    secrets.push_back(secret);
    std::string decoded;
    for (std::size_t i = 0; i < secret.size(); ++i) {
      if (secret[i] == '%' && i + 2 < secret.size() &&
          std::isxdigit(static_cast<unsigned char>(secret[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(secret[i + 2]))) {
        decoded += static_cast<char>(std::stoi(secret.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += secret[i];
      }
    }
    if (decoded != secret) secrets.push_back(decoded);
  };
  std::smatch m;
  if (std::regex_search(url, m, user_password)) add(m[1]);
  for (auto it = std::sregex_iterator(url.begin(), url.end(), password_parameter);
       it != std::sregex_iterator(); ++it)
    add((*it)[1]);
  // Longest first, so that no shorter secret leaves part of a longer one.
  std::sort(secrets.begin(), secrets.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return secrets;
}

}  // namespace

std::string PostgresStore::scrubbed(const std::string& text) const {
  std::string out = text;
  for (const std::string& secret : url_secrets(url_))
    for (std::size_t at = 0; (at = out.find(secret, at)) != std::string::npos; at += 10)
      out.replace(at, secret.size(), "<redacted>");
  return one_line(redact_url_credentials(out));
}

PostgresStore::PostgresStore(const std::string& url, std::chrono::seconds outage_wait)
    : outage_wait_(outage_wait), url_(url), redacted_url_(displayable_url(url)) {
  try {
    std::lock_guard lock(mutex_);
    connect();
  } catch (const std::exception& error) {
    // A malformed URL or a refused connection: libpq's message may quote the URL.
    throw UserError("cannot connect to PostgreSQL database " + redacted_url_ + ": " + scrubbed(error.what()));
  }
  postgres_schema::migrate(redacted_url_, [this](const auto& work) { with_transaction("migrate", work); });
}

PostgresStore::~PostgresStore() = default;

void PostgresStore::connect() { connection_ = std::make_unique<Connection>(url_); }

void PostgresStore::with_transaction(const char* doing,
                                     const std::function<void(pqxx::transaction_base&)>& work,
                                     InDoubt in_doubt, std::optional<std::chrono::seconds> wait) {
  using Clock = std::chrono::steady_clock;
  const auto allowed = wait.value_or(outage_wait_);
  const auto started = Clock::now();
  const auto deadline = started + allowed;
  std::unique_lock lock(mutex_);
  // Back-off between attempts, with the lock released: other threads' calls
  // take their turn (and a process being interrupted can freeze the store).
  auto delay = std::chrono::milliseconds(100);
  bool warned = false;
  auto back_off = [&] {
    if (!warned && Clock::now() - started >= std::chrono::seconds(10) && allowed > std::chrono::seconds(10)) {
      warned = true;
      log::warn("PostgreSQL database " + redacted_url_ + " unreachable (" + doing + "); waiting up to " +
                std::to_string(allowed.count()) + " s for it (AUTOTUNE_DB_OUTAGE_S)");
    }
    lock.unlock();
    std::this_thread::sleep_for(delay);
    delay = std::min(2 * delay, std::chrono::milliseconds(2000));
    lock.lock();
  };
  const auto unknown = [&] {
    return UserError(std::string("the connection to PostgreSQL database ") + redacted_url_ + " broke while " +
                     doing +
                     " was committing; whether it was stored is unknown (resume the run to continue)");
  };
  const auto unreachable = [&](const std::exception& error) {
    return UserError("lost the connection to PostgreSQL database " + redacted_url_ + " (" + doing +
                     ") and could not reconnect for " + std::to_string(allowed.count()) +
                     " s: " + scrubbed(error.what()));
  };
  // The fate of transaction `xid`, asked once the server answers again:
  // true when it committed, false when it did not (run it again).
  auto committed = [&](int64_t xid) -> bool {
    for (;;) {
      try {
        if (!connection_) {
          connect();
          ++reconnects_;
        }
        pqxx::work txn(connection_->connection);
        const auto status = Params().add(xid).exec(txn, "SELECT txid_status($1)")[0][0];
        txn.commit();
        if (status.is_null()) throw unknown();  // too old for the server to remember
        const std::string fate = status.c_str();
        if (fate == "committed") return true;
        if (fate == "aborted") return false;
        // "in progress": the server has not finished with the broken session yet.
      } catch (const pqxx::broken_connection&) {
        connection_.reset();
      } catch (const pqxx::in_doubt_error&) {
        connection_.reset();
      }
      if (Clock::now() >= deadline) throw unknown();
      back_off();
    }
  };
  for (;;) {
    std::optional<int64_t> xid;
    try {
      if (!connection_) {
        connect();
        ++reconnects_;
      }
      pqxx::work txn(connection_->connection);
      if (in_doubt == InDoubt::look_up) xid = txn.exec1("SELECT txid_current()")[0].as<int64_t>();
      work(txn);
      txn.commit();
      return;
    } catch (const pqxx::in_doubt_error&) {
      connection_.reset();
      if (xid) {
        if (committed(*xid)) return;
      } else if (in_doubt == InDoubt::look_up || Clock::now() >= deadline) {
        throw unknown();
      }
    } catch (const pqxx::broken_connection& error) {
      // The server restarted or the connection was dropped: nothing of this
      // transaction was committed, so reconnect and run it again.
      connection_.reset();
      if (Clock::now() >= deadline) throw unreachable(error);
    } catch (const pqxx::transaction_rollback& error) {
      // A serialization failure or deadlock: nothing was stored; run it again.
      if (Clock::now() >= deadline) {
        throw UserError("PostgreSQL database " + redacted_url_ + " kept rolling back " + doing + ": " +
                        scrubbed(error.what()));
      }
    } catch (const pqxx::insufficient_resources& error) {
      throw UserError("PostgreSQL database " + redacted_url_ + " refused " + doing + ": " +
                      scrubbed(error.what()));
    } catch (const pqxx::insufficient_privilege& error) {
      throw UserError("PostgreSQL database " + redacted_url_ + " refused " + doing + ": " +
                      scrubbed(error.what()) +
                      " (autotune needs a role that may create, read and write its tables: the database's "
                      "owner, or a role granted them)");
    } catch (const pqxx::undefined_column& error) {
      throw UserError("PostgreSQL database " + redacted_url_ + " does not have the tables autotune writes (" +
                      doing + ": " + scrubbed(error.what()) + "); was it changed outside autotune?");
    } catch (const pqxx::undefined_table& error) {
      throw UserError("PostgreSQL database " + redacted_url_ + " does not have the tables autotune writes (" +
                      doing + ": " + scrubbed(error.what()) + "); was it changed outside autotune?");
    } catch (const pqxx::sql_error& error) {
      AUTOTUNE_CHECK(false, std::string("PostgreSQL store, ") + doing + ": " + scrubbed(error.what()));
    }
    back_off();
  }
}

std::string PostgresStore::location() const { return redacted_url_; }

int PostgresStore::reconnects() const {
  std::lock_guard lock(mutex_);
  return reconnects_;
}

int PostgresStore::schema_version() {
  int version = 0;
  with_transaction("read the schema version", [&](pqxx::transaction_base& txn) {
    version = postgres_schema::version(txn, redacted_url_);
  });
  return version;
}

// ---- runs

int64_t PostgresStore::create_run(const Run& run) {
  const std::string created = or_now(run.created);
  Params params;
  params.add(created)
      .add(run.updated.empty() ? created : run.updated)
      .add(run.goal_name)
      .add(redact_url_credentials(run.goal_yaml))
      .add(run.kernel)
      .add(run.target)
      .add(static_cast<int64_t>(run.seed))
      .add(run.simulator_version)
      .add(to_string(run.status))
      .add(run.stop_reason)
      .add(run.goal_met)
      .add(run.baseline_trial)
      .add(run.best_trial)
      .add(run.summary);
  int64_t id = 0;
  with_transaction(
      "create_run",
      [&](pqxx::transaction_base& txn) {
        id =
            params
                .exec(
                    txn,
                    "INSERT INTO runs (created, updated, goal_name, goal_yaml, kernel, target, seed, "
                    "simulator_version, status, stop_reason, goal_met, baseline_trial, best_trial, summary) "
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id")[0][0]
                .as<int64_t>();
      },
      InDoubt::look_up);
  return id;
}

void PostgresStore::update_run(const Run& run) {
  Params params;
  params.add(utc_now())
      .add(run.goal_name)
      .add(redact_url_credentials(run.goal_yaml))
      .add(run.kernel)
      .add(run.target)
      .add(static_cast<int64_t>(run.seed))
      .add(run.simulator_version)
      .add(to_string(run.status))
      .add(run.stop_reason)
      .add(run.goal_met)
      .add(run.baseline_trial)
      .add(run.best_trial)
      .add(run.summary)
      .add(run.id);
  with_transaction("update_run", [&](pqxx::transaction_base& txn) {
    const auto result = params.exec(
        txn,
        "UPDATE runs SET updated = $1, goal_name = $2, goal_yaml = $3, kernel = $4, target = $5, seed = $6, "
        "simulator_version = $7, status = $8, stop_reason = $9, goal_met = $10, baseline_trial = $11, "
        "best_trial = $12, summary = $13 WHERE id = $14");
    AUTOTUNE_CHECK(result.affected_rows() == 1, "update_run: no run " + std::to_string(run.id));
  });
}

bool PostgresStore::freeze_interrupted(int64_t id, const std::string& reason) {
  bool marked = false;
  Params params;
  params.add(utc_now()).add(reason).add(id);
  try {
    // A few seconds at most: an interruption during an outage must not wait for the server.
    with_transaction(
        "freeze_interrupted",
        [&](pqxx::transaction_base& txn) {
          marked = params
                       .exec(txn,
                             "UPDATE runs SET updated = $1, status = 'interrupted', stop_reason = $2 "
                             "WHERE id = $3 AND status = 'running'")
                       .affected_rows() == 1;
        },
        InDoubt::retry, std::chrono::seconds(5));
  } catch (const std::exception&) {
    // The process is exiting on an interruption; an unreachable server must not stop it.
  }
  freeze();
  return marked;
}

void PostgresStore::freeze() {
  mutex_.lock();  // never released: the process exits holding it
}

std::optional<LeaseHolder> PostgresStore::acquire_lease(int64_t id, double stale_after_s) {
  std::optional<LeaseHolder> holder_found;
  with_transaction("acquire_lease", [&](pqxx::transaction_base& txn) {
    holder_found.reset();
    // The run's row lock makes acquirers on every host take turns.
    Params().add(id).exec(txn, "SELECT id FROM runs WHERE id = $1 FOR UPDATE");
    const double now = unix_now();
    const auto rows =
        Params().add(id).exec(txn, "SELECT host, pid, heartbeat FROM run_leases WHERE run = $1");
    if (!rows.empty()) {
      const Row row(rows[0]);
      LeaseHolder holder{row.text(0), row.int64(1), now - row.real(2)};
      const bool mine = holder.host == this_host() && holder.pid == this_pid();
      if (!mine && !lease_holder_dead(holder, stale_after_s)) {
        holder_found = holder;
        return;
      }
    }
    Params()
        .add(id)
        .add(this_host())
        .add(this_pid())
        .add(utc_now())
        .add(now)
        .exec(txn,
              "INSERT INTO run_leases (run, host, pid, acquired, heartbeat) VALUES ($1, $2, $3, $4, $5) "
              "ON CONFLICT (run) DO UPDATE SET host = excluded.host, pid = excluded.pid, "
              "acquired = excluded.acquired, heartbeat = excluded.heartbeat");
  });
  return holder_found;
}

bool PostgresStore::renew_lease(int64_t id) {
  bool held = false;
  with_transaction("renew_lease", [&](pqxx::transaction_base& txn) {
    held = Params()
               .add(unix_now())
               .add(id)
               .add(this_host())
               .add(this_pid())
               .exec(txn, "UPDATE run_leases SET heartbeat = $1 WHERE run = $2 AND host = $3 AND pid = $4")
               .affected_rows() > 0;
  });
  return held;
}

void PostgresStore::release_lease(int64_t id) {
  with_transaction("release_lease", [&](pqxx::transaction_base& txn) {
    Params()
        .add(id)
        .add(this_host())
        .add(this_pid())
        .exec(txn, "DELETE FROM run_leases WHERE run = $1 AND host = $2 AND pid = $3");
  });
}

std::optional<Run> PostgresStore::run(int64_t id) {
  std::optional<Run> out;
  with_transaction("read a run", [&](pqxx::transaction_base& txn) {
    out = read_first<Run>(
        Params().add(id).exec(txn, sql({"SELECT ", kRunColumns, " FROM runs WHERE id = $1"})), read_run<Row>);
  });
  return out;
}

std::vector<Run> PostgresStore::runs() {
  std::vector<Run> out;
  with_transaction("read the runs", [&](pqxx::transaction_base& txn) {
    out = read_all<Run>(txn.exec(sql({"SELECT ", kRunColumns, " FROM runs ORDER BY id"})), read_run<Row>);
  });
  return out;
}

// ---- decisions

int64_t PostgresStore::append_decision(Decision& decision) {
  const std::string created = or_now(decision.created);
  Params params;
  params.add(decision.run)
      .add(decision.iteration)
      .add(decision.skill)
      .add(decision.action)
      .add(decision.proposer)
      .add(decision.inputs)
      .add(decision.evidence)
      .add(decision.alternatives)
      .add(decision.rationale)
      .add(decision.outcome)
      .add(decision.duration_ms)
      .add(created);
  int64_t seq = 0;
  with_transaction(
      "append_decision",
      [&](pqxx::transaction_base& txn) {
        // Writers of one run's decisions take turns on the run's row, so the
        // MAX(seq) + 1 below can never be taken twice.
        const auto locked =
            Params().add(decision.run).exec(txn, "SELECT id FROM runs WHERE id = $1 FOR UPDATE");
        AUTOTUNE_CHECK(!locked.empty(), "append_decision: no run " + std::to_string(decision.run));
        seq =
            params
                .exec(
                    txn,
                    "INSERT INTO decisions (run, seq, iteration, skill, action, proposer, inputs, evidence, "
                    "alternatives, rationale, outcome, duration_ms, created) "
                    "VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM decisions WHERE run = $1), "
                    "$2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING seq")[0][0]
                .as<int64_t>();
      },
      InDoubt::look_up);
  decision.seq = seq;
  decision.created = created;
  return seq;
}

void PostgresStore::set_decision_outcome(int64_t run, int64_t seq, const std::string& outcome) {
  with_transaction("set_decision_outcome", [&](pqxx::transaction_base& txn) {
    const auto result = Params().add(outcome).add(run).add(seq).exec(
        txn, "UPDATE decisions SET outcome = $1 WHERE run = $2 AND seq = $3");
    AUTOTUNE_CHECK(result.affected_rows() == 1, "set_decision_outcome: no decision " + std::to_string(seq) +
                                                    " in run " + std::to_string(run));
  });
}

std::vector<Decision> PostgresStore::decisions(int64_t run, const std::optional<std::string>& skill) {
  std::vector<Decision> out;
  with_transaction("read decisions", [&](pqxx::transaction_base& txn) {
    Params params;
    params.add(run);
    if (skill) params.add(*skill);
    out = read_all<Decision>(
        params.exec(txn, sql({"SELECT ", kDecisionColumns, " FROM decisions WHERE run = $1",
                              skill ? " AND skill = $2" : "", " ORDER BY seq"})),
        read_decision<Row>);
  });
  return out;
}

std::optional<Decision> PostgresStore::decision(int64_t run, int64_t seq) {
  std::optional<Decision> out;
  with_transaction("read a decision", [&](pqxx::transaction_base& txn) {
    out = read_first<Decision>(
        Params().add(run).add(seq).exec(
            txn, sql({"SELECT ", kDecisionColumns, " FROM decisions WHERE run = $1 AND seq = $2"})),
        read_decision<Row>);
  });
  return out;
}

int64_t PostgresStore::last_decision_seq(int64_t run) {
  int64_t seq = 0;
  with_transaction("read the last decision", [&](pqxx::transaction_base& txn) {
    seq = Params()
              .add(run)
              .exec(txn, "SELECT COALESCE(MAX(seq), 0) FROM decisions WHERE run = $1")[0][0]
              .as<int64_t>();
  });
  return seq;
}

// ---- trials

void PostgresStore::commit_trials(std::vector<Trial>& trials) {
  if (trials.empty()) return;
  std::vector<Params> rows;
  std::vector<std::string> created;
  rows.reserve(trials.size());
  for (const Trial& trial : trials) {
    created.push_back(or_now(trial.created));
    Params params;
    params.add(trial.run)
        .add(trial.iteration)
        .add(trial.decision_seq)
        .add(trial.variant)
        .add(trial.params)
        .add(trial.config_hash)
        .add(trial.cache_key)
        .add(to_string(trial.status))
        .add(trial.metrics)
        .add(trial.repeats)
        .add(trial.error)
        .add(trial.verification)
        .add(trial.cache_hit)
        .add(created.back())
        .add(trial.duration_ms)
        .add(trial.batch);
    rows.push_back(std::move(params));
  }
  std::vector<int64_t> ids;
  with_transaction(
      "commit_trials",
      [&](pqxx::transaction_base& txn) {
        ids.clear();
        for (const Params& row : rows) {
          ids.push_back(
              row.exec(txn,
                       "INSERT INTO trials (run, iteration, decision_seq, variant, params, config_hash, "
                       "cache_key, status, metrics, repeats, error, verification, cache_hit, created, "
                       "duration_ms, batch) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
                       "$13, $14, $15, $16) RETURNING id")[0][0]
                  .as<int64_t>());
        }
      },
      InDoubt::look_up);
  for (std::size_t i = 0; i < trials.size(); ++i) {
    trials[i].id = ids[i];
    trials[i].created = created[i];
  }
}

std::vector<Trial> PostgresStore::trials(int64_t run, std::optional<int> top_k, const Ranking& ranking) {
  std::vector<Trial> out;
  if (!top_k) {
    with_transaction("read trials", [&](pqxx::transaction_base& txn) {
      out = read_all<Trial>(Params().add(run).exec(txn, sql({"SELECT ", kTrialColumns,
                                                             " FROM trials WHERE run = $1 ORDER BY id"})),
                            read_trial<Row>);
    });
    return out;
  }
  AUTOTUNE_CHECK(*top_k >= 0, "top_k must not be negative");
  const std::string& metric = plain_metric_name(ranking.metric);
  with_transaction("rank trials", [&](pqxx::transaction_base& txn) {
    out = read_all<Trial>(Params()
                              .add(run)
                              .add(metric)
                              .add(static_cast<int64_t>(*top_k))
                              .exec(txn, sql({"SELECT ", kTrialColumns,
                                              " FROM trials WHERE run = $1 AND status IN ('ok', 'cached') "
                                              "AND autotune_json_number(metrics, $2) IS NOT NULL "
                                              "ORDER BY autotune_json_number(metrics, $2) ",
                                              ranking.lower_is_better ? "ASC" : "DESC", ", id LIMIT $3"})),
                          read_trial<Row>);
  });
  return out;
}

std::optional<Trial> PostgresStore::trial(int64_t run, int64_t trial_id) {
  std::optional<Trial> out;
  with_transaction("read a trial", [&](pqxx::transaction_base& txn) {
    out = read_first<Trial>(
        Params().add(trial_id).add(run).exec(
            txn, sql({"SELECT ", kTrialColumns, " FROM trials WHERE id = $1 AND run = $2"})),
        read_trial<Row>);
  });
  return out;
}

TrialCounts PostgresStore::trial_counts(int64_t run) {
  TrialCounts counts;
  with_transaction("count trials", [&](pqxx::transaction_base& txn) {
    const pqxx::result rows = Params().add(run).exec(
        txn,
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE status IN ('ok', 'cached')), "
        "COUNT(*) FILTER (WHERE status = 'invalid'), COUNT(*) FILTER (WHERE status = 'wrong_answer'), "
        "COUNT(*) FILTER (WHERE status = 'failed'), COUNT(*) FILTER (WHERE status = 'timeout'), "
        "COUNT(*) FILTER (WHERE cache_hit = 1) FROM trials WHERE run = $1");
    const Row row(rows[0]);
    counts = TrialCounts{row.int64(0), row.int64(1), row.int64(2), row.int64(3),
                         row.int64(4), row.int64(5), row.int64(6)};
  });
  return counts;
}

std::optional<Trial> PostgresStore::cached_trial(const std::string& cache_key) {
  std::optional<Trial> out;
  with_transaction("look up the cache", [&](pqxx::transaction_base& txn) {
    out = read_first<Trial>(
        Params().add(cache_key).exec(
            txn, sql({"SELECT ", kTrialColumns,
                      " FROM trials WHERE cache_key = $1 AND status IN ('ok', 'invalid', 'wrong_answer') "
                      "ORDER BY id DESC LIMIT 1"})),
        read_trial<Row>);
  });
  return out;
}

// ---- profiles

void PostgresStore::save_profile(const Profile& profile) {
  Params params;
  params.add(profile.trial).add(profile.summary);
  // A present timeline is stored even when it is JSON null.
  if (profile.timeline) {
    params.add(std::string_view(profile.timeline->dump(-1, ' ', false, Json::error_handler_t::replace)));
  } else {
    params.add(Json());
  }
  params.add(or_now(profile.created));
  with_transaction("save_profile", [&](pqxx::transaction_base& txn) {
    params.exec(txn,
                "INSERT INTO profiles (trial, summary, timeline, created) VALUES ($1, $2, $3, $4) "
                "ON CONFLICT (trial) DO UPDATE SET summary = excluded.summary, timeline = excluded.timeline, "
                "created = excluded.created");
  });
}

std::optional<Profile> PostgresStore::profile(int64_t trial) {
  std::optional<Profile> out;
  with_transaction("read a profile", [&](pqxx::transaction_base& txn) {
    const auto rows = Params().add(trial).exec(
        txn, "SELECT trial, summary, timeline, created FROM profiles WHERE trial = $1");
    if (rows.empty()) return;
    const Row row(rows[0]);
    Profile profile;
    profile.trial = row.int64(0);
    profile.summary = row.json(1);
    if (!row.is_null(2)) profile.timeline = row.json(2);
    profile.created = row.text(3);
    out = std::move(profile);
  });
  return out;
}

// ---- the measurement queue

void PostgresStore::set_measurement_context(const MeasurementContext& context) {
  Params params;
  params.add(context.run)
      .add(redact_url_credentials(context.goal_yaml))
      .add(context.goal_file)
      .add(context.timeout_s)
      .add(utc_now());
  with_transaction("set_measurement_context", [&](pqxx::transaction_base& txn) {
    params.exec(txn,
                "INSERT INTO measurement_contexts (run, goal_yaml, goal_file, timeout_s, created) "
                "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run) DO UPDATE SET goal_yaml = excluded.goal_yaml, "
                "goal_file = excluded.goal_file, timeout_s = excluded.timeout_s");
  });
}

std::optional<MeasurementContext> PostgresStore::measurement_context(int64_t run) {
  std::optional<MeasurementContext> out;
  with_transaction("read a measurement context", [&](pqxx::transaction_base& txn) {
    const auto rows = Params().add(run).exec(
        txn, "SELECT run, goal_yaml, goal_file, timeout_s FROM measurement_contexts WHERE run = $1");
    if (rows.empty()) return;
    const Row row(rows[0]);
    out = MeasurementContext{row.int64(0), row.text(1), row.text(2), row.real(3)};
  });
  return out;
}

std::vector<QueuedMeasurement> PostgresStore::enqueue_measurements(
    int64_t run, const std::vector<std::pair<std::string, Json>>& items) {
  std::vector<Params> inserts;
  const std::string now = utc_now();
  for (const auto& [config_hash, candidate] : items) {
    Params params;
    params.add(run).add(config_hash).add(candidate).add(now);
    inserts.push_back(std::move(params));
  }
  std::vector<QueuedMeasurement> out;
  with_transaction("enqueue_measurements", [&](pqxx::transaction_base& txn) {
    out.clear();
    for (std::size_t i = 0; i < items.size(); ++i) {
      inserts[i].exec(txn,
                      "INSERT INTO measurement_queue (run, config_hash, candidate, created) "
                      "VALUES ($1, $2, $3, $4) ON CONFLICT (run, config_hash) DO NOTHING");
      const auto rows = Params()
                            .add(run)
                            .add(items[i].first)
                            .exec(txn, sql({"SELECT ", kQueueColumns,
                                            " FROM measurement_queue WHERE run = $1 AND config_hash = $2"}));
      AUTOTUNE_CHECK(!rows.empty(), "a queued measurement vanished inside its transaction");
      out.push_back(read_queued_measurement(Row(rows[0])));
    }
  });
  return out;
}

std::optional<QueuedMeasurement> PostgresStore::claim_measurement(const std::string& worker,
                                                                  double stale_after_s,
                                                                  std::optional<int64_t> only_run) {
  std::optional<QueuedMeasurement> out;
  with_transaction("claim_measurement", [&](pqxx::transaction_base& txn) {
    out.reset();
    const double now = unix_now();
    // SKIP LOCKED: claimers on every host pass over the rows another is
    // claiming right now instead of queueing behind its lock.
    const auto rows =
        Params()
            .add(worker)
            .add(now)
            .add(now - stale_after_s)
            .add(only_run)
            .exec(txn, sql({"UPDATE measurement_queue SET state = 'claimed', worker = $1, heartbeat = $2, "
                            "attempts = attempts + 1 WHERE id = ("
                            "SELECT q.id FROM measurement_queue q JOIN runs r ON r.id = q.run "
                            "WHERE (q.state = 'queued' OR (q.state = 'claimed' AND q.heartbeat < $3)) "
                            "AND ($4::BIGINT IS NULL OR q.run = $4) AND ($4::BIGINT IS NOT NULL OR "
                            "r.status = 'running') ORDER BY q.id LIMIT 1 FOR UPDATE OF q SKIP LOCKED) "
                            "RETURNING ",
                            kQueueColumns}));
    if (!rows.empty()) out = read_queued_measurement(Row(rows[0]));
  });
  return out;
}

std::vector<int64_t> PostgresStore::heartbeat_worker(const std::string& worker, const std::string& host,
                                                     int jobs, int64_t measured) {
  std::vector<int64_t> held;
  with_transaction("heartbeat_worker", [&](pqxx::transaction_base& txn) {
    held.clear();
    const double now = unix_now();
    Params().add(worker).add(host).add(jobs).add(measured).add(utc_now()).add(now).exec(
        txn,
        "INSERT INTO workers (id, host, jobs, measured, started, heartbeat) VALUES ($1, $2, $3, $4, $5, $6) "
        "ON CONFLICT (id) DO UPDATE SET measured = excluded.measured, heartbeat = excluded.heartbeat");
    for (const auto& row :
         Params().add(now).add(worker).exec(txn,
                                            "UPDATE measurement_queue SET heartbeat = $1 WHERE state = "
                                            "'claimed' AND worker = $2 RETURNING id"))
      held.push_back(row[0].as<int64_t>());
  });
  std::sort(held.begin(), held.end());
  return held;
}

bool PostgresStore::complete_measurement(int64_t id, const std::string& worker, const Json& result) {
  bool stored = false;
  Params params;
  params.add(result).add(utc_now()).add(id).add(worker);
  with_transaction("complete_measurement", [&](pqxx::transaction_base& txn) {
    stored = params
                 .exec(txn,
                       "UPDATE measurement_queue SET state = 'done', result = $1, finished = $2 "
                       "WHERE id = $3 AND worker = $4 AND state = 'claimed'")
                 .affected_rows() == 1;
  });
  return stored;
}

std::vector<QueuedMeasurement> PostgresStore::queued_measurements(const std::vector<int64_t>& ids) {
  const std::string list = id_array(ids);
  std::vector<QueuedMeasurement> out;
  with_transaction("read queued measurements", [&](pqxx::transaction_base& txn) {
    out = read_all<QueuedMeasurement>(
        Params().add(list).exec(txn,
                                sql({"SELECT ", kQueueColumns,
                                     " FROM measurement_queue WHERE id = ANY($1::BIGINT[]) ORDER BY id"})),
        read_queued_measurement<Row>);
  });
  return out;
}

void PostgresStore::mark_measurements_committed(const std::vector<int64_t>& ids) {
  if (ids.empty()) return;
  const std::string list = id_array(ids);
  with_transaction("mark_measurements_committed", [&](pqxx::transaction_base& txn) {
    Params().add(list).exec(txn,
                            "UPDATE measurement_queue SET state = 'committed' WHERE id = ANY($1::BIGINT[])");
  });
}

int64_t PostgresStore::active_workers(double fresh_s) {
  int64_t count = 0;
  with_transaction("count workers", [&](pqxx::transaction_base& txn) {
    count = Params()
                .add(unix_now() - fresh_s)
                .exec(txn, "SELECT COUNT(*) FROM workers WHERE heartbeat >= $1 AND jobs > 0")[0][0]
                .as<int64_t>();
  });
  return count;
}

// ---- LLM calls

int64_t PostgresStore::append_llm_call(const LlmCall& call) {
  Params params;
  params.add(call.run)
      .add(or_now(call.created))
      .add(call.prompt_hash)
      .add(call.model)
      .add(call.latency_ms)
      .add(call.prompt_tokens)
      .add(call.completion_tokens)
      .add(redact_credentials(call.request))
      .add(call.response)
      .add(call.accepted)
      .add(redact_url_credentials(call.reject_reason));
  int64_t id = 0;
  with_transaction(
      "append_llm_call",
      [&](pqxx::transaction_base& txn) {
        id = params
                 .exec(txn,
                       "INSERT INTO llm_calls (run, created, prompt_hash, model, latency_ms, prompt_tokens, "
                       "completion_tokens, request, response, accepted, reject_reason) "
                       "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id")[0][0]
                 .as<int64_t>();
      },
      InDoubt::look_up);
  return id;
}

std::vector<LlmCall> PostgresStore::llm_calls(int64_t run) {
  std::vector<LlmCall> out;
  with_transaction("read LLM calls", [&](pqxx::transaction_base& txn) {
    out = read_all<LlmCall>(Params().add(run).exec(txn, sql({"SELECT ", kLlmCallColumns,
                                                             " FROM llm_calls WHERE run = $1 ORDER BY id"})),
                            read_llm_call<Row>);
  });
  return out;
}

std::optional<LlmCall> PostgresStore::cached_llm_response(const std::string& prompt_hash) {
  std::optional<LlmCall> out;
  with_transaction("look up an LLM response", [&](pqxx::transaction_base& txn) {
    out = read_first<LlmCall>(Params()
                                  .add(prompt_hash)
                                  .exec(txn, sql({"SELECT ", kLlmCallColumns,
                                                  " FROM llm_calls WHERE prompt_hash = $1 AND response <> '' "
                                                  "ORDER BY id DESC LIMIT 1"})),
                              read_llm_call<Row>);
  });
  return out;
}

}  // namespace autotune::store
