#include "skills/benchmark_runner.hpp"

#include <boost/asio/post.hpp>
#include <condition_variable>
#include <deque>
#include <thread>

#include "core/error.hpp"
#include "core/log.hpp"
#include "skills/measurement_queue.hpp"

namespace autotune::skills {

namespace {

using Clock = std::chrono::steady_clock;

// A target that stopped at its deadline took at least that long (it starts
// its clock a little later and rounds up to milliseconds); the slack only
// absorbs the reading of the clocks.
constexpr double kDeadlineSlackS = 0.01;

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
  std::vector<double> limit_s;  // each started measurement's time limit
  double target_seconds = 0;
  bool stop_claiming = false;  // with a queue: the batch is complete
  // With a queue: the rows this runner's jobs are measuring, and rows found
  // claimed by this runner but measured by none of its jobs (a claim whose
  // COMMIT went through while the connection broke, so the job never heard
  // of it): since since when, and those handed back to the jobs.
  std::set<int64_t> in_flight;
  std::map<int64_t, Clock::time_point> unheld_since;
  std::deque<store::QueuedMeasurement> orphans;
};

BenchmarkRunner::BenchmarkRunner(MeasurementTarget& target, store::Store& store, int64_t run,
                                 RunnerOptions options)
    : target_(target),
      store_(store),
      run_(run),
      options_(options),
      limit_(candidate_time_limit(target, options.timeout_s)) {
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
  // The database may be away for a while (a restart, an outage longer than a
  // store call reconnects): polling tries again at its next turn.
  if (seconds_since(last_heartbeat) >= kHeartbeatIntervalS) {
    last_heartbeat = Clock::now();
    try {
      store_.heartbeat_worker(claimer_, claimer_id(""), options_.jobs, counters_.measured);
      counters_.active_workers = store_.active_workers(kActiveWorkerS);
    } catch (const UserError& e) {
      log::warn(std::string("heartbeat failed, trying again: ") + e.what());
    }
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
  std::vector<store::QueuedMeasurement> rows;
  try {
    rows = store_.queued_measurements(waiting);
  } catch (const UserError& e) {
    log::warn(std::string("reading the queue failed, trying again: ") + e.what());
    return;
  }
  std::lock_guard lock(shared.mutex);
  for (const auto& row : rows) {
    // A row claimed by this runner that none of its jobs measures stays so
    // under this runner's heartbeat, and no one else would take it: held
    // unmeasured for kOrphanAfterS (a claim in progress returns in far less),
    // it goes back to this runner's jobs.
    if (row.state == store::QueueState::claimed && row.worker == claimer_ &&
        !shared.in_flight.count(row.id)) {
      const auto since = shared.unheld_since.emplace(row.id, Clock::now()).first->second;
      if (std::chrono::duration<double>(Clock::now() - since).count() >= kOrphanAfterS) {
        log::warn(
            "queued candidate " + std::to_string(row.id) +
            " was claimed by this run but not measured (a claim lost with its connection): measuring it");
        shared.unheld_since.erase(row.id);
        shared.in_flight.insert(row.id);
        shared.orphans.push_back(row);
        shared.wake.notify_all();
      }
      continue;
    }
    shared.unheld_since.erase(row.id);
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
  for (const auto& trial : committed) resumable_[trial.config_hash].push_back(trial);
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

// One measure() call: each candidate is served (measured earlier in this
// run or this batch, committed before a resume, in the cache) or measured on
// the pool or through the queue; results are committed in proposal order.
class BenchmarkRunner::Batch {
 public:
  Batch(BenchmarkRunner& runner, const std::vector<TrialRequest>& requests, const ResultCallback& on_result)
      : runner_(runner),
        requests_(requests),
        on_result_(on_result),
        n_(requests.size()),
        results_(n_),
        duplicate_of_(n_),
        queue_ids_(n_),
        number_(++runner.batches_) {
    shared_->done.resize(n_);
    shared_->started.resize(n_);
    shared_->limit_s.resize(n_, runner.limit_.seconds);
  }

  // However the batch ends (an error from the store included), this runner's
  // jobs on the queue stop claiming: else the pool's join waits for them for ever.
  ~Batch() {
    std::lock_guard lock(shared_->mutex);
    shared_->stop_claiming = true;
  }

  SkillResult<std::vector<MeasuredTrial>> run() {
    for (std::size_t i = 0; i < n_; ++i) serve_or_start(i);
    if (runner_.options_.queue && !running_.empty()) queue_running();
    collect();
    flush(n_);
    {
      std::lock_guard lock(shared_->mutex);
      shared_->stop_claiming = true;
      runner_.counters_.target_seconds += shared_->target_seconds;
      shared_->target_seconds = 0;
    }
    for (std::size_t i = 0; i < n_; ++i) {
      if (!duplicate_of_[i]) continue;
      results_[i] = *results_[*duplicate_of_[i]];
      results_[i]->fresh = false;
      ++reused_;
    }
    return decide();
  }

 private:
  store::Trial make_trial(const TrialRequest& request) const {
    store::Trial trial;
    trial.run = runner_.run_;
    trial.iteration = request.iteration;
    trial.decision_seq = request.decision_seq;
    trial.variant = request.candidate.variant;
    trial.params = request.candidate.params;
    trial.config_hash = config_hash(request.candidate);
    trial.cache_key = runner_.cache_key(request.candidate);
    trial.batch = number_;
    return trial;
  }

  // Serves candidate i if it can be, else starts measuring it (on the pool,
  // or marks it for the queue).
  void serve_or_start(std::size_t i) {
    const TrialRequest& request = requests_[i];
    const std::string hash = config_hash(request.candidate);
    if (request.remeasure_of) {
      // Measured again before the resume: that trial is this measurement.
      if (serve_resumed(i, hash)) return;
      results_[i] = MeasuredTrial{make_trial(request), nullptr, true};
      running_.push_back(i);
      if (!runner_.options_.queue) start_on_pool(i);
      return;
    }
    if (auto it = runner_.measured_.find(hash); it != runner_.measured_.end()) {
      results_[i] = it->second;
      results_[i]->fresh = false;
      ++reused_;
      settle(i);
      return;
    }
    if (auto it = first_in_batch_.find(hash); it != first_in_batch_.end()) {
      duplicate_of_[i] = it->second;
      return;
    }
    first_in_batch_[hash] = i;
    if (serve_resumed(i, hash)) return;
    store::Trial trial = make_trial(request);
    if (runner_.options_.use_cache && serve_from_cache(i, trial)) return;
    results_[i] = MeasuredTrial{trial, nullptr, true};
    running_.push_back(i);
    if (!runner_.options_.queue) start_on_pool(i);  // queued candidates go all at once (queue_running)
  }

  // Serves request i from the next trial of its candidate committed before
  // a resume, if one is left: the replay asks for a candidate's measurements
  // in the order they were committed (the first, then each measurement
  // again), and each counts as the evaluation it was.
  bool serve_resumed(std::size_t i, const std::string& hash) {
    const auto it = runner_.resumable_.find(hash);
    if (it == runner_.resumable_.end()) return false;
    MeasuredTrial result{it->second.front(), runner_.profile_of(it->second.front()), true};
    it->second.pop_front();
    if (it->second.empty()) runner_.resumable_.erase(it);
    runner_.measured_[hash] = result;
    results_[i] = result;
    ++resumed_;
    ++runner_.counters_.resumed;
    ++runner_.counters_.evaluations;
    settle(i);
    return true;
  }

  bool serve_from_cache(std::size_t i, store::Trial& trial) {
    auto cached = runner_.store_.cached_trial(trial.cache_key);
    if (!cached) return false;
    trial.status = cached->status == Outcome::ok ? Outcome::cached : cached->status;
    trial.cache_hit = true;
    trial.metrics = cached->metrics;
    trial.repeats = cached->repeats;
    trial.error = cached->error;
    trial.verification = cached->verification;
    trial.verification["cached_from_trial"] = cached->id;
    Json profile = nullptr;
    if (auto stored = runner_.store_.profile(cached->id)) profile = stored->summary;
    results_[i] = MeasuredTrial{trial, profile, true};
    pending_.push_back(i);
    ++cache_hits_;
    ++runner_.counters_.cache_hits;
    ++runner_.counters_.evaluations;
    settle(i);
    return true;
  }

  void start_on_pool(std::size_t i) {
    MeasurementTarget& target = runner_.target_;
    boost::asio::post(*runner_.pool_, [shared = shared_, i, candidate = requests_[i].candidate,
                                       timeout_s = runner_.limit_.seconds, stop_at = runner_.options_.stop_at,
                                       &target] {
      const auto start = Clock::now();
      MeasureOptions measure_options{timeout_s};
      if (stop_at)
        measure_options.deadline_s =
            std::clamp(std::chrono::duration<double>(*stop_at - start).count(), 0.0, timeout_s);
      {
        std::lock_guard lock(shared->mutex);
        shared->started[i] = start;
        shared->limit_s[i] = measure_options.deadline_s;
      }
      Measurement m;
      try {
        m = target.measure(candidate, measure_options);
      } catch (const std::exception& e) {
        m.status = Outcome::failed;
        m.error = std::string("target raised: ") + e.what();
      }
      const double took = seconds_since(start);
      if (m.duration_ms == 0) m.duration_ms = took * 1000;
      // A target that stopped itself at a deadline the wall-time budget cut
      // short was cut by the budget, whatever it says ("timed out after
      // 1.2 s"): said as the runner says it, so that readers of the trial
      // (export --cachefile) know it was never fully measured.
      if (m.status == Outcome::timeout && measure_options.deadline_s < timeout_s &&
          took >= measure_options.deadline_s - kDeadlineSlackS)
        m.error = kBudgetCutError;
      std::lock_guard lock(shared->mutex);
      shared->done[i] = std::move(m);
      shared->target_seconds += took;
      shared->wake.notify_all();
    });
  }

  // With a queue: every candidate to measure is queued in one transaction,
  // then this runner's jobs claim them alongside the workers.
  void queue_running() {
    std::vector<std::pair<std::string, Json>> items;
    for (std::size_t i : running_)  // a measurement again is a row of its own
      items.emplace_back(results_[i]->trial.config_hash + (requests_[i].remeasure_of ? "#remeasure" : ""),
                         candidate_to_json(requests_[i].candidate));
    const auto rows = runner_.store_.enqueue_measurements(runner_.run_, items);
    queued_at_ = Clock::now();
    std::map<int64_t, std::size_t> index_of_row;
    for (std::size_t k = 0; k < running_.size(); ++k) {
      const std::size_t i = running_[k];
      queue_ids_[i] = rows[k].id;
      index_of_row[rows[k].id] = i;
      // Measured for an earlier life of this run: its result is waiting.
      if (rows[k].state == store::QueueState::done || rows[k].state == store::QueueState::committed)
        shared_->done[i] = measurement_from_json(rows[k].result);
    }
    for (int job = 0; job < runner_.options_.jobs; ++job)
      boost::asio::post(*runner_.pool_, [shared = shared_, index_of_row, runner = &runner_] {
        runner->claim_until_stopped(*shared, index_of_row);
      });
  }

  // Waits for the running candidates (a candidate past the timeout is a
  // timeout), records each result and commits as the options say.
  void collect() {
    const RunnerOptions& options = runner_.options_;
    std::set<std::size_t> open(running_.begin(), running_.end());
    auto last_poll = Clock::now() - std::chrono::seconds(1);
    auto last_heartbeat = Clock::now() - std::chrono::seconds(10);
    while (!open.empty()) {
      if (options.queue) runner_.poll_queue(open, queue_ids_, *shared_, last_poll, last_heartbeat);
      std::vector<std::pair<std::size_t, Measurement>> finished;
      {
        std::unique_lock lock(shared_->mutex);
        shared_->wake.wait_for(lock, std::chrono::milliseconds(20));
        const auto now = Clock::now();
        for (std::size_t i : open) {
          if (shared_->done[i]) {
            finished.emplace_back(i, std::move(*shared_->done[i]));
          } else if (shared_->started[i] &&
                     std::chrono::duration<double>(now - *shared_->started[i]).count() >
                         shared_->limit_s[i]) {
            Measurement m;
            m.status = Outcome::timeout;
            m.error = shared_->limit_s[i] < runner_.limit_.seconds ? kBudgetCutError
                                                                   : timeout_error(runner_.limit_);
            m.duration_ms = shared_->limit_s[i] * 1000;
            finished.emplace_back(i, std::move(m));
          } else if (queue_ids_[i] && options.stop_at && now >= *options.stop_at) {
            // Measured elsewhere, it cannot be stopped from here: the run stops waiting for it, and
            // a result that comes later is never committed.
            Measurement m;
            m.status = Outcome::timeout;
            m.error = kBudgetCutError;
            m.duration_ms = std::chrono::duration<double, std::milli>(now - queued_at_).count();
            finished.emplace_back(i, std::move(m));
          }
        }
      }
      for (auto& [i, m] : finished) {
        open.erase(i);
        record(i, m);
      }
      if (int(pending_.size()) >= options.commit_every ||
          seconds_since(last_flush_) >= options.commit_interval_s)
        flush(open.empty() ? n_ : *open.begin());
    }
  }

  void record(std::size_t i, const Measurement& measured) {
    const auto& first = requests_[i].remeasure_of;
    const Measurement m = first && measured.status == Outcome::ok && is_measured(first->status)
                              ? remeasured(*first, measured)
                              : measured;
    store::Trial& trial = results_[i]->trial;
    trial.status = m.status;
    trial.metrics = m.metrics;
    trial.repeats = m.repeats;
    trial.verification = m.verification;
    trial.error = m.error;
    trial.duration_ms = m.duration_ms;
    results_[i]->profile = m.status == Outcome::ok ? m.profile : Json(nullptr);
    pending_.push_back(i);
    ++measured_;
    ++runner_.counters_.measured;
    ++runner_.counters_.evaluations;
    settle(i);
  }

  // Both measurements of a candidate measured again, as one.
  Measurement remeasured(const store::Trial& first, const Measurement& again) const {
    auto figures = [](const Json& metrics) {
      Json out = {{"latency_s", metrics.value("latency_s", Json())}};
      if (const auto e = estimate_from_metrics(metrics, "latency_s")) out["interval"] = {e->low, e->high};
      return out;
    };
    Measurement m = runner_.target_.combine(first.repeats, again);
    m.metrics["remeasured"] = {
        {"of_trial", first.id}, {"first", figures(first.metrics)}, {"again", figures(again.metrics)}};
    return m;
  }

  // Trials are committed in proposal order, so that their ids do not depend
  // on which worker finished first: a flush commits the finished trials
  // proposed before every one still running (`first_running`), and keeps the
  // others pending.
  void flush(std::size_t first_running) {
    std::sort(pending_.begin(), pending_.end());
    const auto ready_end = std::lower_bound(pending_.begin(), pending_.end(), first_running);
    if (ready_end == pending_.begin()) return;
    const std::vector<std::size_t> ready(pending_.begin(), ready_end);
    pending_.erase(pending_.begin(), ready_end);
    const auto start = Clock::now();
    std::vector<store::Trial> batch;
    for (std::size_t i : ready) batch.push_back(results_[i]->trial);
    if (runner_.options_.before_commit) runner_.options_.before_commit();
    runner_.store_.commit_trials(batch);
    std::vector<int64_t> queued_rows;
    for (std::size_t i : ready)
      if (queue_ids_[i]) queued_rows.push_back(*queue_ids_[i]);
    runner_.store_.mark_measurements_committed(queued_rows);
    for (std::size_t k = 0; k < ready.size(); ++k) {
      auto& result = *results_[ready[k]];
      result.trial = batch[k];
      if (!result.profile.is_null()) {
        runner_.store_.save_profile({result.trial.id, result.profile, std::nullopt, ""});
        runner_.profiles_[result.trial.id] = result.profile;
      }
      runner_.measured_[result.trial.config_hash] = result;
    }
    runner_.counters_.commits += 1;
    runner_.counters_.commit_seconds += seconds_since(start);
    last_flush_ = Clock::now();
  }

  void settle(std::size_t i) {
    const std::string status(to_string(results_[i]->trial.status));
    statuses_[status] = statuses_.value(status, 0) + 1;
    if (on_result_) on_result_(*results_[i]);
  }

  // The runner's decision record for the batch.
  SkillResult<std::vector<MeasuredTrial>> decide() {
    SkillResult<std::vector<MeasuredTrial>> out;
    std::optional<double> best;
    std::optional<Estimate> best_estimate;
    for (auto& r : results_) {
      AUTOTUNE_CHECK(r.has_value(), "a candidate of the batch was left unmeasured");
      if (is_measured(r->trial.status)) {
        const auto latency = r->trial.metric("latency_s");
        if (latency && (!best || *latency < *best)) {
          best = latency;
          best_estimate = estimate_from_metrics(r->trial.metrics, "latency_s");
        }
      }
      out.result.push_back(std::move(*r));
    }
    const RunnerOptions& options = runner_.options_;
    MeasurementTarget& target = runner_.target_;
    auto& decision = out.decision;
    decision.action = "measure";
    decision.inputs = {{"candidates", n_},
                       {"jobs", options.jobs},
                       {"timeout_s", runner_.limit_.seconds},
                       {"target", target.description()}};
    decision.evidence = {{"measured", measured_},
                         {"cache_hits", cache_hits_},
                         {"resumed", resumed_},
                         {"reused_in_run", reused_},
                         {"statuses", statuses_}};
    if (best) decision.evidence["best_latency_s"] = *best;
    if (best_estimate && best_estimate->width() > 0)  // a noisy target's median interval
      decision.evidence["best_latency_interval_s"] = {best_estimate->low, best_estimate->high};
    int remeasured = 0;
    for (const auto& request : requests_) remeasured += request.remeasure_of.has_value();
    if (remeasured > 0) decision.evidence["measured_again"] = remeasured;
    // Candidates the target found to trace the very program of one it
    // measured already (a parameter that changes nothing here), or the same
    // instructions with the same dependencies on buffers allocated
    // differently: not simulated again.
    int same_program = 0;
    for (const auto& r : out.result)
      if (r.fresh && r.trial.verification.is_object() &&
          (r.trial.verification.contains("same_program_as") ||
           r.trial.verification.contains("same_schedule_as")))
        ++same_program;
    decision.evidence["same_program"] = same_program;
    decision.rationale =
        "measured " + std::to_string(measured_) + " on " + target.kind() + ", " +
        std::to_string(cache_hits_) + " from the cache, " + std::to_string(resumed_) +
        " from committed trials, " + std::to_string(reused_) + " already measured in this run" +
        (same_program > 0 ? "; " + std::to_string(same_program) +
                                " traced the same program as a candidate measured before, so "
                                "its measurement was reused"
                          : "");
    decision.outcome = statuses_.dump();
    return out;
  }

  BenchmarkRunner& runner_;
  const std::vector<TrialRequest>& requests_;
  const ResultCallback& on_result_;
  const std::size_t n_;
  std::vector<std::optional<MeasuredTrial>> results_;
  std::vector<std::optional<std::size_t>> duplicate_of_;
  std::map<std::string, std::size_t> first_in_batch_;
  std::vector<std::size_t> pending_;               // indices waiting for a commit
  std::vector<std::optional<int64_t>> queue_ids_;  // with a queue: each queued candidate's row
  Clock::time_point queued_at_;
  std::vector<std::size_t> running_;               // indices being measured
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  Clock::time_point last_flush_ = Clock::now();
  Json statuses_ = Json::object();
  int64_t reused_ = 0, resumed_ = 0, cache_hits_ = 0, measured_ = 0;
  const int64_t number_;
};

// A job of this runner on the queue: claims queued candidates of this run
// (any process's), measures them and stores the results, until the batch
// stops claiming.
void BenchmarkRunner::claim_until_stopped(Shared& shared,
                                          const std::map<int64_t, std::size_t>& index_of_row) {
  for (;;) {
    std::optional<store::QueuedMeasurement> item;
    {
      std::lock_guard lock(shared.mutex);
      if (shared.stop_claiming) return;
      if (!shared.orphans.empty()) {
        item = shared.orphans.front();
        shared.orphans.pop_front();
      }
    }
    if (!item) try {
        item = store_.claim_measurement(claimer_, kClaimLeaseS, run_);
        if (item) {
          std::lock_guard lock(shared.mutex);
          shared.in_flight.insert(item->id);
        }
      } catch (const std::exception& e) {
        log::warn(std::string("claiming a queued candidate failed: ") + e.what());
      }
    if (!item) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const auto start = Clock::now();
    // As on the pool: no measurement runs past the wall-time budget.
    TimeLimit limit = limit_;
    if (options_.stop_at)
      limit.seconds =
          std::clamp(std::chrono::duration<double>(*options_.stop_at - start).count(), 0.0, limit_.seconds);
    Measurement m = measure_with_deadline(target_, candidate_from_json(item->candidate), limit);
    const double took = seconds_since(start);
    if (m.status == Outcome::timeout && limit.seconds < limit_.seconds) m.error = kBudgetCutError;
    // The row stays claimed under this process's live heartbeat, so no one
    // else measures it again: a result that could not be stored (the database
    // away for longer than a store call reconnects) is stored again until it
    // is, or the batch no longer needs it. Dropping it would leave the batch
    // waiting for that row for ever.
    bool stored = false;
    for (int attempt = 1;; ++attempt) {
      try {
        stored = store_.complete_measurement(item->id, claimer_, to_json(m));
        break;
      } catch (const std::exception& e) {
        log::warn(std::string("storing a queued measurement failed, trying again: ") + e.what());
      }
      {
        std::lock_guard lock(shared.mutex);
        if (shared.stop_claiming) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(200 * attempt, 2000)));
    }
    std::lock_guard lock(shared.mutex);
    shared.in_flight.erase(item->id);
    shared.target_seconds += took;
    const auto it = index_of_row.find(item->id);
    if (stored && it != index_of_row.end() && !shared.done[it->second]) {
      shared.done[it->second] = std::move(m);
      shared.wake.notify_all();
    }
  }
}

SkillResult<std::vector<MeasuredTrial>> BenchmarkRunner::measure(const std::vector<TrialRequest>& requests,
                                                                 const ResultCallback& on_result) {
  return Batch(*this, requests, on_result).run();
}

}  // namespace autotune::skills
