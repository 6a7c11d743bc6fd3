#include "skills/benchmark_runner.hpp"

#include <boost/asio/post.hpp>
#include <condition_variable>
#include <thread>

#include "core/error.hpp"
#include "core/log.hpp"
#include "skills/measurement_queue.hpp"

namespace autotune::skills {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

const SkillRegistration registration(
    kBenchmarkRunner,
    {4,
     "measures candidates on the target (sim, replay, command) in parallel with a timeout, verifies them, "
     "caches and commits every trial",
     "none (measure through your own program with target: {kind: command})",
     // Measuring is the runner's own job (verification, cache, isolation); an
     // external measurement is the command target.
     "a benchmark_runner plugin is not supported: to measure through your own program use "
     "target: {kind: command, argv: [...]} (docs/goals.md)"});

}  // namespace

// What the workers share with the caller. Held by shared_ptr so a worker that
// outlives its timeout writes into live memory and is simply ignored.
struct BenchmarkRunner::Shared {
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<std::optional<Measurement>> done;
  std::vector<std::optional<Clock::time_point>> started;
  double target_seconds = 0;
  bool stop_claiming = false;  // with a queue: the batch is complete
};

BenchmarkRunner::BenchmarkRunner(MeasurementTarget& target, store::Store& store, int64_t run,
                                 RunnerOptions options)
    : target_(target), store_(store), run_(run), options_(options) {
  if (options_.jobs < (options_.queue ? 0 : 1))
    throw UserError("--jobs / parallel: must be at least " + std::string(options_.queue ? "0" : "1") +
                    " (got " + std::to_string(options_.jobs) + ")");
  if (options_.commit_every <= 0) options_.commit_every = std::max(options_.jobs, 1);
  pool_ = std::make_unique<boost::asio::thread_pool>(std::size_t(std::max(options_.jobs, 1)));
  if (options_.queue) claimer_ = claimer_id("coordinator");
}

void BenchmarkRunner::poll_queue(const std::set<std::size_t>& open,
                                 const std::vector<std::optional<int64_t>>& queue_ids, Shared& shared,
                                 Clock::time_point& last_poll, Clock::time_point& last_heartbeat) {
  if (seconds_since(last_heartbeat) >= kHeartbeatIntervalS) {
    last_heartbeat = Clock::now();
    store_.heartbeat_worker(claimer_, claimer_id(""), options_.jobs, counters_.measured);
    counters_.active_workers = store_.active_workers(kActiveWorkerS);
  }
  if (seconds_since(last_poll) < 0.2) return;
  last_poll = Clock::now();
  std::vector<int64_t> waiting;
  std::map<int64_t, std::size_t> index_of_row;
  {
    std::lock_guard lock(shared.mutex);
    for (std::size_t i : open)
      if (!shared.done[i] && queue_ids[i]) {
        waiting.push_back(*queue_ids[i]);
        index_of_row[*queue_ids[i]] = i;
      }
  }
  if (waiting.empty()) return;
  const auto rows = store_.queued_measurements(waiting);
  std::lock_guard lock(shared.mutex);
  for (const auto& row : rows) {
    if (row.state != store::QueueState::done && row.state != store::QueueState::committed) continue;
    const std::size_t i = index_of_row.at(row.id);
    if (shared.done[i]) continue;
    shared.done[i] = measurement_from_json(row.result);
    if (row.worker != claimer_) ++counters_.measured_by_workers;
  }
}

BenchmarkRunner::~BenchmarkRunner() {
  pool_->stop();
  pool_->join();
}

std::string BenchmarkRunner::config_hash(const Candidate& candidate) { return stable_hash(candidate.key()); }

std::string BenchmarkRunner::cache_key(const Candidate& candidate) const {
  return stable_hash(target_.cache_identity() + "|" + candidate.key());
}

void BenchmarkRunner::resume(const std::vector<store::Trial>& committed) {
  for (const auto& trial : committed) resumable_[trial.config_hash] = trial;
}

std::optional<MeasuredTrial> BenchmarkRunner::find(const Candidate& candidate) const {
  const auto it = measured_.find(config_hash(candidate));
  if (it == measured_.end()) return std::nullopt;
  return it->second;
}

Json BenchmarkRunner::profile_of(const store::Trial& trial) {
  if (const auto it = profiles_.find(trial.id); it != profiles_.end()) return it->second;
  if (auto stored = store_.profile(trial.id)) return profiles_[trial.id] = stored->summary;
  return nullptr;
}

SkillResult<std::vector<MeasuredTrial>> BenchmarkRunner::measure(const std::vector<TrialRequest>& requests,
                                                                 const ResultCallback& on_result) {
  const std::size_t n = requests.size();
  std::vector<std::optional<MeasuredTrial>> results(n);
  std::vector<std::optional<std::size_t>> duplicate_of(n);
  std::map<std::string, std::size_t> first_in_batch;
  std::vector<std::size_t> pending;                  // indices waiting for a commit
  std::vector<std::optional<int64_t>> queue_ids(n);  // with a queue: each queued candidate's row
  auto last_flush = Clock::now();
  Json statuses = Json::object();
  int64_t reused = 0, resumed = 0, cache_hits = 0, measured = 0;
  const int64_t batch_number = ++batches_;

  auto make_trial = [&](const TrialRequest& request) {
    store::Trial trial;
    trial.run = run_;
    trial.iteration = request.iteration;
    trial.decision_seq = request.decision_seq;
    trial.variant = request.candidate.variant;
    trial.params = request.candidate.params;
    trial.config_hash = config_hash(request.candidate);
    trial.cache_key = cache_key(request.candidate);
    trial.batch = batch_number;
    return trial;
  };

  // Trials are committed in proposal order, so that their ids do not depend
  // on which worker finished first: a flush commits the finished trials
  // proposed before every one still running (`first_running`), and keeps the
  // others pending.
  auto flush = [&](std::size_t first_running) {
    std::sort(pending.begin(), pending.end());
    const auto ready_end = std::lower_bound(pending.begin(), pending.end(), first_running);
    if (ready_end == pending.begin()) return;
    const std::vector<std::size_t> ready(pending.begin(), ready_end);
    pending.erase(pending.begin(), ready_end);
    const auto start = Clock::now();
    std::vector<store::Trial> batch;
    for (std::size_t i : ready) batch.push_back(results[i]->trial);
    store_.commit_trials(batch);
    std::vector<int64_t> queued_rows;
    for (std::size_t i : ready)
      if (queue_ids[i]) queued_rows.push_back(*queue_ids[i]);
    store_.mark_measurements_committed(queued_rows);
    for (std::size_t k = 0; k < ready.size(); ++k) {
      auto& result = *results[ready[k]];
      result.trial = batch[k];
      if (!result.profile.is_null()) {
        store_.save_profile({result.trial.id, result.profile, std::nullopt, ""});
        profiles_[result.trial.id] = result.profile;
      }
      measured_[result.trial.config_hash] = result;
    }
    counters_.commits += 1;
    counters_.commit_seconds += seconds_since(start);
    last_flush = Clock::now();
  };

  auto settle = [&](std::size_t i) {
    statuses[std::string(to_string(results[i]->trial.status))] =
        statuses.value(std::string(to_string(results[i]->trial.status)), 0) + 1;
    if (on_result) on_result(*results[i]);
  };

  auto shared = std::make_shared<Shared>();
  shared->done.resize(n);
  shared->started.resize(n);
  std::vector<std::size_t> running;

  for (std::size_t i = 0; i < n; ++i) {
    const TrialRequest& request = requests[i];
    const std::string hash = config_hash(request.candidate);
    if (auto it = measured_.find(hash); it != measured_.end()) {
      results[i] = it->second;
      results[i]->fresh = false;
      ++reused;
      settle(i);
      continue;
    }
    if (auto it = first_in_batch.find(hash); it != first_in_batch.end()) {
      duplicate_of[i] = it->second;
      continue;
    }
    first_in_batch[hash] = i;
    if (auto it = resumable_.find(hash); it != resumable_.end()) {
      MeasuredTrial result{it->second, profile_of(it->second), true};
      resumable_.erase(it);
      measured_[hash] = result;
      results[i] = result;
      ++resumed;
      ++counters_.resumed;
      ++counters_.evaluations;
      settle(i);
      continue;
    }
    store::Trial trial = make_trial(request);
    if (options_.use_cache) {
      if (auto cached = store_.cached_trial(trial.cache_key)) {
        trial.status = cached->status == Outcome::ok ? Outcome::cached : cached->status;
        trial.cache_hit = true;
        trial.metrics = cached->metrics;
        trial.repeats = cached->repeats;
        trial.error = cached->error;
        trial.verification = cached->verification;
        trial.verification["cached_from_trial"] = cached->id;
        Json profile = nullptr;
        if (auto stored = store_.profile(cached->id)) profile = stored->summary;
        results[i] = MeasuredTrial{trial, profile, true};
        pending.push_back(i);
        ++cache_hits;
        ++counters_.cache_hits;
        ++counters_.evaluations;
        settle(i);
        continue;
      }
    }
    results[i] = MeasuredTrial{trial, nullptr, true};
    running.push_back(i);
    if (options_.queue) continue;  // queued below, all at once
    const MeasureOptions measure_options{options_.timeout_s};
    boost::asio::post(*pool_, [shared, i, candidate = request.candidate, measure_options, this] {
      const auto start = Clock::now();
      {
        std::lock_guard lock(shared->mutex);
        shared->started[i] = start;
      }
      Measurement m;
      try {
        m = target_.measure(candidate, measure_options);
      } catch (const std::exception& e) {
        m.status = Outcome::failed;
        m.error = std::string("target raised: ") + e.what();
      }
      const double took = seconds_since(start);
      if (m.duration_ms == 0) m.duration_ms = took * 1000;
      std::lock_guard lock(shared->mutex);
      shared->done[i] = std::move(m);
      shared->target_seconds += took;
      shared->wake.notify_all();
    });
  }

  // With a queue: every candidate to measure is queued in one transaction,
  // then this runner's jobs claim them alongside the workers.
  std::map<int64_t, std::size_t> index_of_row;
  if (options_.queue && !running.empty()) {
    std::vector<std::pair<std::string, Json>> items;
    for (std::size_t i : running)
      items.emplace_back(results[i]->trial.config_hash, candidate_to_json(requests[i].candidate));
    const auto rows = store_.enqueue_measurements(run_, items);
    for (std::size_t k = 0; k < running.size(); ++k) {
      const std::size_t i = running[k];
      queue_ids[i] = rows[k].id;
      index_of_row[rows[k].id] = i;
      // Measured for an earlier life of this run: its result is waiting.
      if (rows[k].state == store::QueueState::done || rows[k].state == store::QueueState::committed)
        shared->done[i] = measurement_from_json(rows[k].result);
    }
    for (int job = 0; job < options_.jobs; ++job) {
      boost::asio::post(*pool_, [shared, index_of_row, this] {
        for (;;) {
          {
            std::lock_guard lock(shared->mutex);
            if (shared->stop_claiming) return;
          }
          std::optional<store::QueuedMeasurement> item;
          try {
            item = store_.claim_measurement(claimer_, kClaimLeaseS, run_);
          } catch (const std::exception& e) {
            log::warn(std::string("claiming a queued candidate failed: ") + e.what());
          }
          if (!item) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            continue;
          }
          const auto start = Clock::now();
          Measurement m =
              measure_with_deadline(target_, candidate_from_json(item->candidate), options_.timeout_s);
          const double took = seconds_since(start);
          bool stored = false;
          try {
            stored = store_.complete_measurement(item->id, claimer_, to_json(m));
          } catch (const std::exception& e) {
            log::warn(std::string("storing a queued measurement failed: ") + e.what());
          }
          std::lock_guard lock(shared->mutex);
          shared->target_seconds += took;
          const auto it = index_of_row.find(item->id);
          if (stored && it != index_of_row.end() && !shared->done[it->second]) {
            shared->done[it->second] = std::move(m);
            shared->wake.notify_all();
          }
        }
      });
    }
  }

  std::set<std::size_t> open(running.begin(), running.end());
  auto last_poll = Clock::now() - std::chrono::seconds(1);
  auto last_heartbeat = Clock::now() - std::chrono::seconds(10);
  while (!open.empty()) {
    if (options_.queue) poll_queue(open, queue_ids, *shared, last_poll, last_heartbeat);
    std::vector<std::pair<std::size_t, Measurement>> finished;
    {
      std::unique_lock lock(shared->mutex);
      shared->wake.wait_for(lock, std::chrono::milliseconds(20));
      const auto now = Clock::now();
      for (std::size_t i : open) {
        if (shared->done[i]) {
          finished.emplace_back(i, std::move(*shared->done[i]));
        } else if (shared->started[i] &&
                   std::chrono::duration<double>(now - *shared->started[i]).count() > options_.timeout_s) {
          Measurement m;
          m.status = Outcome::timeout;
          m.error = "exceeded the per-candidate timeout of " + std::to_string(options_.timeout_s) + " s";
          m.duration_ms = options_.timeout_s * 1000;
          finished.emplace_back(i, std::move(m));
        }
      }
    }
    for (auto& [i, m] : finished) {
      open.erase(i);
      store::Trial& trial = results[i]->trial;
      trial.status = m.status;
      trial.metrics = m.metrics;
      trial.repeats = m.repeats;
      trial.verification = m.verification;
      trial.error = m.error;
      trial.duration_ms = m.duration_ms;
      results[i]->profile = m.status == Outcome::ok ? m.profile : Json(nullptr);
      pending.push_back(i);
      ++measured;
      ++counters_.measured;
      ++counters_.evaluations;
      settle(i);
    }
    if (int(pending.size()) >= options_.commit_every ||
        seconds_since(last_flush) >= options_.commit_interval_s)
      flush(open.empty() ? n : *open.begin());
  }
  flush(n);
  {
    std::lock_guard lock(shared->mutex);
    shared->stop_claiming = true;
    counters_.target_seconds += shared->target_seconds;
    shared->target_seconds = 0;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!duplicate_of[i]) continue;
    results[i] = *results[*duplicate_of[i]];
    results[i]->fresh = false;
    ++reused;
  }

  SkillResult<std::vector<MeasuredTrial>> out;
  std::optional<double> best;
  std::string best_key;
  for (auto& r : results) {
    AUTOTUNE_CHECK(r.has_value(), "a candidate of the batch was left unmeasured");
    if (is_measured(r->trial.status)) {
      const auto latency = r->trial.metric("latency_s");
      if (latency && (!best || *latency < *best))
        best = latency, best_key = r->trial.variant + r->trial.params.dump();
    }
    out.result.push_back(std::move(*r));
  }
  auto& decision = out.decision;
  decision.action = "measure";
  decision.inputs = {{"candidates", n},
                     {"jobs", options_.jobs},
                     {"timeout_s", options_.timeout_s},
                     {"target", target_.description()}};
  decision.evidence = {{"measured", measured},
                       {"cache_hits", cache_hits},
                       {"resumed", resumed},
                       {"reused_in_run", reused},
                       {"statuses", statuses}};
  if (best) decision.evidence["best_latency_s"] = *best;
  // Candidates the target found to trace the very program of one it measured
  // already (a parameter that changes nothing here), or the same instructions
  // with the same dependencies on buffers allocated differently: not
  // simulated again.
  int same_program = 0;
  for (const auto& r : out.result)
    if (r.fresh && r.trial.verification.is_object() &&
        (r.trial.verification.contains("same_program_as") ||
         r.trial.verification.contains("same_schedule_as")))
      ++same_program;
  decision.evidence["same_program"] = same_program;
  decision.rationale = "measured " + std::to_string(measured) + " on " + target_.kind() + ", " +
                       std::to_string(cache_hits) + " from the cache, " + std::to_string(resumed) +
                       " from committed trials, " + std::to_string(reused) + " already measured in this run" +
                       (same_program > 0 ? "; " + std::to_string(same_program) +
                                               " traced the same program as a candidate measured before, so "
                                               "its measurement was reused"
                                         : "");
  decision.outcome = statuses.dump();
  return out;
}

}  // namespace autotune::skills
