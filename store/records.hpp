#pragma once
// The records of the decision store (DESIGN.md, "Decision store"): plain
// structs, one per table. JSON-valued fields hold nlohmann::json; a null JSON
// value is stored as SQL NULL and reads back as null.
//
// Timestamps are ISO-8601 UTC strings with milliseconds
// ("2026-11-22T05:03:28.123Z"), so they sort as text. The store fills an empty
// `created`/`updated` with the current time.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/outcome.hpp"

namespace autotune::store {

using Json = nlohmann::json;

enum class RunStatus { running, completed, failed, interrupted };

// What happened to one evaluated candidate.
//  ok           measured and verified; its metrics are trustworthy.
//  invalid      does not fit the target (SBUF overflow, tile limits); not run.
//  wrong_answer ran, but its output did not match the host reference.
//  failed       crashed or could not be built/run (may be transient).
//  timeout      exceeded the per-candidate time limit (may be transient).
//  cached       re-used an earlier `ok` measurement (cache_hit is true); ranks
//               like `ok`. A cache hit of an invalid or wrong answer keeps
//               that status and sets cache_hit.

std::string_view to_string(RunStatus status);
// Throw UserError naming the accepted values on an unknown name.
RunStatus parse_run_status(std::string_view name);
// A stored trial's outcome (never implausible: a target records that as failed).
Outcome parse_trial_status(std::string_view name);

struct Run {
  int64_t id = 0;  // assigned by Store::create_run
  std::string created;
  std::string updated;
  std::string goal_yaml;  // the resolved goal (defaults filled in), as YAML text
  std::string goal_name;
  std::string kernel;
  std::string target;
  uint64_t seed = 0;
  std::string simulator_version;
  RunStatus status = RunStatus::running;
  std::string stop_reason;
  bool goal_met = false;
  // The trial every improvement is measured against. When unset, readers use
  // the run's first measured trial.
  std::optional<int64_t> baseline_trial;
  std::optional<int64_t> best_trial;
  Json summary;  // free-form final summary written by the orchestrator
};

struct Decision {
  int64_t run = 0;
  int64_t seq = 0;  // 1-based per run, assigned by Store::append_decision
  int iteration = 0;
  // "profile_analyzer", "kernel_generator", "param_explorer",
  // "benchmark_runner", "orchestrator", or a plugin's name.
  std::string skill;
  std::string action;
  std::string proposer;  // "rules", "llm", "plugin:<name>", "user"
  Json inputs;
  Json evidence;
  Json alternatives;
  std::string rationale;
  std::string outcome;  // may be filled later with Store::set_decision_outcome
  double duration_ms = 0;
  std::string created;
};

struct Trial {
  int64_t id = 0;  // unique across runs, assigned by Store::commit_trials
  int64_t run = 0;
  int iteration = 0;
  // The decision (same run) that proposed this trial; it must exist.
  std::optional<int64_t> decision_seq;
  std::string variant;
  Json params;
  std::string config_hash;  // stable key of (variant, params) within a run
  std::string cache_key;    // key of the measurement across runs (see cached_trial)
  Outcome status = Outcome::ok;
  Json metrics;  // {"latency_s": ..., ...}
  Json repeats;  // every repeat kept, e.g. [latency_s, ...]
  std::string error;
  Json verification;  // {"max_rel_error": ..., "mse": ..., "cosine": ...}
  bool cache_hit = false;
  std::string created;
  double duration_ms = 0;
  // The Benchmark Runner's batch within the run (1, 2, ...): trials of one
  // batch were proposed together, so none of them was known when another
  // was proposed. Absent in databases written before schema version 3.
  std::optional<int64_t> batch;

  // metrics[name] as a number, if present and numeric.
  std::optional<double> metric(const std::string& name) const;
};

struct Profile {
  int64_t trial = 0;
  Json summary;
  std::optional<Json> timeline;  // large; only stored when the caller asks for it
  std::string created;
};

struct LlmCall {
  int64_t id = 0;  // assigned by Store::append_llm_call
  int64_t run = 0;
  std::string created;
  // The cache key of the call; it should cover the model and the whole
  // request, since cached_llm_response matches on it alone.
  std::string prompt_hash;
  std::string model;
  double latency_ms = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  // The request body. Keys that carry credentials (authorization, api_key,
  // ...) are redacted by the store before writing, as a second line of defence.
  Json request;
  std::string response;  // empty when the endpoint gave no answer
  bool accepted = false;
  std::string reject_reason;
};

// ISO-8601 UTC with milliseconds, e.g. "2026-11-22T05:03:28.123Z".
std::string utc_now();

// The process that holds a run's lease (Store::acquire_lease).
struct LeaseHolder {
  std::string host;
  int64_t pid = 0;
  double heartbeat_age_s = 0;  // since its last heartbeat
};

// The shared measurement queue (docs/distributed.md): candidates a run or
// sweep wants measured, claimed by workers on any host.
enum class QueueState { queued, claimed, done, committed };
std::string_view to_string(QueueState state);
QueueState parse_queue_state(std::string_view name);

struct QueuedMeasurement {
  int64_t id = 0;  // assigned by Store::enqueue_measurements
  int64_t run = 0;
  std::string config_hash;  // unique per run: a candidate is queued once
  Json candidate;           // {"variant": ..., "params": {...}}
  QueueState state = QueueState::queued;
  std::string worker;  // the claimer ("host:pid:n"), "" while queued
  int attempts = 0;    // claims so far (more than 1: a claimer died or lost its lease)
  Json result;         // the measurement, once done
};

// What a worker needs to measure a run's candidates: the resolved goal (paths
// made absolute) and where the goal file was, for paths relative to it.
struct MeasurementContext {
  int64_t run = 0;
  std::string goal_yaml;
  std::string goal_file;
  double timeout_s = 120;
};

// JSON views of the records (used by --json output and by plugins).
void to_json(Json& out, const Run& run);
// A run as listings show it: its JSON without the long texts (summary,
// goal_yaml). `runs --json`, the report and the dashboard's index start from it.
Json run_listing_json(const Run& run);
void to_json(Json& out, const Decision& decision);
void to_json(Json& out, const Trial& trial);
void to_json(Json& out, const Profile& profile);
void to_json(Json& out, const LlmCall& call);

}  // namespace autotune::store
