#include "store/records.hpp"

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <utility>

#include "core/error.hpp"
#include "core/text.hpp"

namespace autotune::store {
namespace {

constexpr std::array<std::pair<RunStatus, std::string_view>, 4> kRunStatusNames{{
    {RunStatus::running, "running"},
    {RunStatus::completed, "completed"},
    {RunStatus::failed, "failed"},
    {RunStatus::interrupted, "interrupted"},
}};

// The outcomes a trial row may hold (the schema's CHECK on trials.status).
constexpr std::array<std::pair<Outcome, std::string_view>, 6> kTrialStatusNames{{
    {Outcome::ok, "ok"},
    {Outcome::invalid, "invalid"},
    {Outcome::wrong_answer, "wrong_answer"},
    {Outcome::failed, "failed"},
    {Outcome::timeout, "timeout"},
    {Outcome::cached, "cached"},
}};

constexpr std::array<std::pair<QueueState, std::string_view>, 4> kQueueStateNames{{
    {QueueState::queued, "queued"},
    {QueueState::claimed, "claimed"},
    {QueueState::done, "done"},
    {QueueState::committed, "committed"},
}};

template <class Enum, std::size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& names, Enum value) {
  for (const auto& [candidate, name] : names) {
    if (candidate == value) return name;
  }
  AUTOTUNE_CHECK(false, "enum value without a name");
}

template <class Enum, std::size_t N>
Enum parse_name(const std::array<std::pair<Enum, std::string_view>, N>& names, std::string_view name,
                std::string_view what) {
  for (const auto& [value, candidate] : names)
    if (candidate == name) return value;
  throw UserError("unknown " + std::string(what) + " '" + std::string(name) + "'; accepted: " +
                  join(names, ", ", [](const auto& entry) { return std::string(entry.second); }));
}

}  // namespace

std::string_view to_string(RunStatus status) { return name_of(kRunStatusNames, status); }
RunStatus parse_run_status(std::string_view name) { return parse_name(kRunStatusNames, name, "run status"); }
Outcome parse_trial_status(std::string_view name) {
  return parse_name(kTrialStatusNames, name, "trial status");
}

std::string_view to_string(QueueState state) { return name_of(kQueueStateNames, state); }
QueueState parse_queue_state(std::string_view name) {
  return parse_name(kQueueStateNames, name, "queue state");
}

std::optional<double> Trial::metric(const std::string& name) const {
  if (!metrics.is_object()) return std::nullopt;
  auto found = metrics.find(name);
  if (found == metrics.end() || !found->is_number()) return std::nullopt;
  return found->get<double>();
}

std::string utc_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t seconds = system_clock::to_time_t(now);
  const auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  return text;
}

namespace {
Json optional_id(const std::optional<int64_t>& id) { return id ? Json(*id) : Json(nullptr); }
}  // namespace

void to_json(Json& out, const Run& run) {
  out = Json{{"id", run.id},
             {"created", run.created},
             {"updated", run.updated},
             {"goal_name", run.goal_name},
             {"kernel", run.kernel},
             {"target", run.target},
             {"seed", run.seed},
             {"simulator_version", run.simulator_version},
             {"status", to_string(run.status)},
             {"stop_reason", run.stop_reason},
             {"goal_met", run.goal_met},
             {"baseline_trial", optional_id(run.baseline_trial)},
             {"best_trial", optional_id(run.best_trial)},
             {"summary", run.summary},
             {"goal_yaml", run.goal_yaml}};
}

Json run_listing_json(const Run& run) {
  Json out = run;
  out.erase("summary");
  out.erase("goal_yaml");
  return out;
}

void to_json(Json& out, const Decision& decision) {
  out = Json{{"run", decision.run},
             {"seq", decision.seq},
             {"iteration", decision.iteration},
             {"skill", decision.skill},
             {"action", decision.action},
             {"proposer", decision.proposer},
             {"inputs", decision.inputs},
             {"evidence", decision.evidence},
             {"alternatives", decision.alternatives},
             {"rationale", decision.rationale},
             {"outcome", decision.outcome},
             {"duration_ms", decision.duration_ms},
             {"created", decision.created}};
}

void to_json(Json& out, const Trial& trial) {
  out = Json{{"id", trial.id},
             {"run", trial.run},
             {"iteration", trial.iteration},
             {"decision_seq", optional_id(trial.decision_seq)},
             {"variant", trial.variant},
             {"params", trial.params},
             {"config_hash", trial.config_hash},
             {"cache_key", trial.cache_key},
             {"status", to_string(trial.status)},
             {"metrics", trial.metrics},
             {"repeats", trial.repeats},
             {"error", trial.error},
             {"verification", trial.verification},
             {"cache_hit", trial.cache_hit},
             {"created", trial.created},
             {"duration_ms", trial.duration_ms},
             {"batch", optional_id(trial.batch)}};
}

void to_json(Json& out, const Profile& profile) {
  out = Json{{"trial", profile.trial},
             {"summary", profile.summary},
             {"timeline", profile.timeline ? *profile.timeline : Json(nullptr)},
             {"created", profile.created}};
}

void to_json(Json& out, const LlmCall& call) {
  out = Json{{"id", call.id},
             {"run", call.run},
             {"created", call.created},
             {"prompt_hash", call.prompt_hash},
             {"model", call.model},
             {"latency_ms", call.latency_ms},
             {"prompt_tokens", call.prompt_tokens},
             {"completion_tokens", call.completion_tokens},
             {"request", call.request},
             {"response", call.response},
             {"accepted", call.accepted},
             {"reject_reason", call.reject_reason}};
}

}  // namespace autotune::store
