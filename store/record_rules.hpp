#pragma once
// What both store implementations share: the column lists of each table, the
// readers that turn a result row into a record, and the rules every backend
// applies before writing (credentials redacted, timestamps filled in) and when
// judging a lease. A Row is any type with the column accessors of
// sqlite::Statement: int64, real, text, json, optional_int64 (0-based).
#include <cstdint>
#include <string>

#include "store/records.hpp"

namespace autotune::store::detail {

inline constexpr const char* kRunColumns =
    "id, created, updated, goal_name, goal_yaml, kernel, target, seed, simulator_version, status, "
    "stop_reason, goal_met, baseline_trial, best_trial, summary";

template <class Row>
Run read_run(const Row& row) {
  Run run;
  run.id = row.int64(0);
  run.created = row.text(1);
  run.updated = row.text(2);
  run.goal_name = row.text(3);
  run.goal_yaml = row.text(4);
  run.kernel = row.text(5);
  run.target = row.text(6);
  run.seed = static_cast<uint64_t>(row.int64(7));
  run.simulator_version = row.text(8);
  run.status = parse_run_status(row.text(9));
  run.stop_reason = row.text(10);
  run.goal_met = row.int64(11) != 0;
  run.baseline_trial = row.optional_int64(12);
  run.best_trial = row.optional_int64(13);
  run.summary = row.json(14);
  return run;
}

inline constexpr const char* kDecisionColumns =
    "run, seq, iteration, skill, action, proposer, inputs, evidence, alternatives, rationale, outcome, "
    "duration_ms, created";

template <class Row>
Decision read_decision(const Row& row) {
  Decision decision;
  decision.run = row.int64(0);
  decision.seq = row.int64(1);
  decision.iteration = static_cast<int>(row.int64(2));
  decision.skill = row.text(3);
  decision.action = row.text(4);
  decision.proposer = row.text(5);
  decision.inputs = row.json(6);
  decision.evidence = row.json(7);
  decision.alternatives = row.json(8);
  decision.rationale = row.text(9);
  decision.outcome = row.text(10);
  decision.duration_ms = row.real(11);
  decision.created = row.text(12);
  return decision;
}

inline constexpr const char* kTrialColumns =
    "id, run, iteration, decision_seq, variant, params, config_hash, cache_key, status, metrics, repeats, "
    "error, verification, cache_hit, created, duration_ms, batch";

template <class Row>
Trial read_trial(const Row& row) {
  Trial trial;
  trial.id = row.int64(0);
  trial.run = row.int64(1);
  trial.iteration = static_cast<int>(row.int64(2));
  trial.decision_seq = row.optional_int64(3);
  trial.variant = row.text(4);
  trial.params = row.json(5);
  trial.config_hash = row.text(6);
  trial.cache_key = row.text(7);
  trial.status = parse_trial_status(row.text(8));
  trial.metrics = row.json(9);
  trial.repeats = row.json(10);
  trial.error = row.text(11);
  trial.verification = row.json(12);
  trial.cache_hit = row.int64(13) != 0;
  trial.created = row.text(14);
  trial.duration_ms = row.real(15);
  trial.batch = row.optional_int64(16);
  return trial;
}

inline constexpr const char* kLlmCallColumns =
    "id, run, created, prompt_hash, model, latency_ms, prompt_tokens, completion_tokens, request, response, "
    "accepted, reject_reason";

template <class Row>
LlmCall read_llm_call(const Row& row) {
  LlmCall call;
  call.id = row.int64(0);
  call.run = row.int64(1);
  call.created = row.text(2);
  call.prompt_hash = row.text(3);
  call.model = row.text(4);
  call.latency_ms = row.real(5);
  call.prompt_tokens = row.int64(6);
  call.completion_tokens = row.int64(7);
  call.request = row.json(8);
  call.response = row.text(9);
  call.accepted = row.int64(10) != 0;
  call.reject_reason = row.text(11);
  return call;
}

inline constexpr const char* kQueueColumns =
    "id, run, config_hash, candidate, state, worker, attempts, result";

template <class Row>
QueuedMeasurement read_queued_measurement(const Row& row) {
  QueuedMeasurement item;
  item.id = row.int64(0);
  item.run = row.int64(1);
  item.config_hash = row.text(2);
  item.candidate = row.json(3);
  item.state = parse_queue_state(row.text(4));
  item.worker = row.text(5);
  item.attempts = static_cast<int>(row.int64(6));
  item.result = row.json(7);
  return item;
}

// The ranking metric as a checked plain name: letters, digits and '_' only, so
// a metric from a goal file can never reach into SQL text or a nested path.
// UserError otherwise.
const std::string& plain_metric_name(const std::string& metric);

// The request with every credential-looking key's value replaced by
// "<redacted>" and URL credentials redacted in every string.
Json redact_credentials(const Json& value);

// `timestamp`, or now when it is empty.
std::string or_now(const std::string& timestamp);
// Seconds since the Unix epoch.
double unix_now();
std::string this_host();
int64_t this_pid();
// Whether a lease's holder is gone: its heartbeat is older than
// `stale_after_s`, or it ran on this host and its process no longer exists.
bool lease_holder_dead(const LeaseHolder& holder, double stale_after_s);

}  // namespace autotune::store::detail
