#pragma once
// BenchmarkRunner: measures candidates on a MeasurementTarget, in parallel on
// a Boost.Asio thread pool, and commits every result to the store.
//
// Contract:
//  - measure(requests) returns one trial per request, in request order,
//    whatever order the workers finish in (so what the strategies are told is
//    independent of timing and a run replays from its seed).
//  - A candidate already measured in this run is not measured again: its
//    earlier trial is returned with `fresh` false and no new trial is stored.
//  - After resume(committed), candidates of those trials are served from them
//    (fresh: they count as the evaluations they were), never re-measured: a
//    candidate's trials in commit order, so a measurement again committed
//    before the resume serves the replay's `remeasure_of` request.
//  - Otherwise the cross-run cache is asked (store.cached_trial by a key of the
//    target's cache identity and the candidate); a hit is stored as a new
//    trial with cache_hit set (status `cached` for an ok measurement).
//  - Otherwise the target measures it on a worker, with a per-candidate
//    timeout: a candidate running longer is recorded as `timeout` and the run
//    goes on (an in-process target cannot be interrupted; its late result is
//    discarded).
//  - With options.queue, those candidates are queued in the store instead,
//    measured by whoever claims them (this runner's jobs, workers on other
//    hosts) and committed here as they come back; a candidate queued by an
//    earlier life of the run is not queued again, and its result, if one is
//    waiting, is used as it is. The claimer enforces the timeout.
//  - A request with `remeasure_of` measures its candidate again although it
//    was measured (a noisy win that must be confirmed): never served from
//    this run, the cache or the queue's first row; the new trial holds both
//    measurements combined by the target (MeasurementTarget::combine) and
//    metrics["remeasured"] = {of_trial, first, again}, and stands for the
//    candidate from then on.
//  - Trials are committed as they finish, in batches (one transaction per
//    batch: whenever `commit_every` results are waiting, or `commit_interval_s`
//    passed, and at the end of measure()). Profiles are saved right after.
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "skills/measurement_target.hpp"
#include "skills/skill.hpp"
#include "store/store.hpp"

namespace autotune::skills {

// The error of a measurement the run's wall-time budget (RunnerOptions::
// stop_at) stopped before it finished (status timeout): a configuration never
// fully measured, which says nothing about the configuration itself.
inline constexpr const char* kBudgetCutError = "the run's wall-time budget ran out during this measurement";

struct RunnerOptions {
  // Local measuring threads. With `queue`, they claim this run's queued
  // candidates alongside remote workers; 0 leaves all measuring to workers.
  int jobs = 1;
  // The goal's timeout_s; the limit of a measurement is
  // candidate_time_limit(target, timeout_s) (measurement_target.hpp).
  double timeout_s = 120;
  // No local measurement runs past this time (a goal's wall-time budget):
  // one that starts with less than its limit left gets what is left. A
  // queued candidate still unmeasured then is recorded as cut by the budget.
  std::optional<std::chrono::steady_clock::time_point> stop_at;
  int commit_every = 0;  // 0: the number of jobs
  double commit_interval_s = 0.5;
  bool use_cache = true;
  // Called before each commit of trials (the run's lease check): a throw
  // stops the measuring without writing.
  std::function<void()> before_commit;
  // Measure through the store's shared queue (skills/measurement_queue.hpp):
  // candidates are queued, claimed by this runner's jobs and by `autotune
  // worker` processes on any host, and committed here as trials.
  bool queue = false;
};

struct TrialRequest {
  Candidate candidate;
  int iteration = 0;
  std::optional<int64_t> decision_seq;
  std::optional<store::Trial> remeasure_of;  // the earlier trial of the candidate, to measure again
};

struct MeasuredTrial {
  store::Trial trial;
  Json profile;        // summary; null when none
  bool fresh = false;  // a new evaluation of this run (counts against the budget)
};

struct RunnerCounters {
  int64_t evaluations = 0;          // fresh trials
  int64_t measured = 0;             // measured on the target in this process
  int64_t cache_hits = 0;           // served from the cross-run cache
  int64_t resumed = 0;              // served from trials committed before a resume
  int64_t commits = 0;              // transactions
  double target_seconds = 0;        // wall time spent inside target.measure(), summed over workers
  double commit_seconds = 0;        // wall time spent committing
  int64_t measured_by_workers = 0;  // with a queue: measured by other processes
  int64_t active_workers = 0;       // with a queue: workers seen heartbeating at the last look
};

// Called on the caller's thread as each result is known (for progress).
using ResultCallback = std::function<void(const MeasuredTrial&)>;

class BenchmarkRunner {
 public:
  BenchmarkRunner(MeasurementTarget& target, store::Store& store, int64_t run, RunnerOptions options);
  ~BenchmarkRunner();
  BenchmarkRunner(const BenchmarkRunner&) = delete;
  BenchmarkRunner& operator=(const BenchmarkRunner&) = delete;

  // Trials of this run committed before it was interrupted.
  void resume(const std::vector<store::Trial>& committed);

  SkillResult<std::vector<MeasuredTrial>> measure(const std::vector<TrialRequest>& requests,
                                                  const ResultCallback& on_result = {});

  // The profile of a trial of this run (from memory or the store); null when none.
  Json profile_of(const store::Trial& trial);
  // A trial of this run by candidate, if measured.
  std::optional<MeasuredTrial> find(const Candidate& candidate) const;

  const RunnerCounters& counters() const { return counters_; }
  const RunnerOptions& options() const { return options_; }
  std::string cache_key(const Candidate& candidate) const;
  static std::string config_hash(const Candidate& candidate);

 private:
  struct Shared;
  class Batch;
  // With a queue: one of this runner's jobs, claiming and measuring queued
  // candidates of the run until the batch stops claiming.
  void claim_until_stopped(Shared& shared, const std::map<int64_t, std::size_t>& index_of_row);
  // With a queue: picks up results other processes stored for `open`
  // candidates (every 200 ms) and heartbeats this runner's claims.
  void poll_queue(const std::set<std::size_t>& open, const std::vector<std::optional<int64_t>>& queue_ids,
                  Shared& shared, std::chrono::steady_clock::time_point& last_poll,
                  std::chrono::steady_clock::time_point& last_heartbeat);

  MeasurementTarget& target_;
  store::Store& store_;
  int64_t run_;
  RunnerOptions options_;
  TimeLimit limit_;  // of each measurement: candidate_time_limit(target_, options_.timeout_s)
  std::unique_ptr<boost::asio::thread_pool> pool_;
  std::map<std::string, MeasuredTrial> measured_;  // config hash -> trial measured in this process
  // Config hash -> the trials committed before a resume, in commit order (a
  // candidate measured again has one per measurement).
  std::map<std::string, std::deque<store::Trial>> resumable_;
  std::map<int64_t, Json> profiles_;  // trial id -> profile summary
  RunnerCounters counters_;
  std::string claimer_;  // this process's claimer id on the queue
  int64_t batches_ = 0;  // measure() calls so far: the next trial's Trial::batch
};

}  // namespace autotune::skills
