#include "orchestrator/worker.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "orchestrator/distributed.hpp"
#include "skills/measurement_queue.hpp"

namespace autotune::orchestrator {
namespace {

using Clock = std::chrono::steady_clock;

// The prepared goal of each run this worker measured for, built once. A run
// whose goal does not load here keeps its reason: its candidates are
// recorded as failed with it, so the run goes on.
class RunTargets {
 public:
  explicit RunTargets(store::Store& store, const WorkerOptions& options) : store_(store), options_(options) {}

  struct Entry {
    std::unique_ptr<PreparedGoal> prepared;
    std::string unusable;
    double timeout_s = 120;
  };

  const Entry& get(int64_t run) {
    std::lock_guard lock(mutex_);
    auto& entry = entries_[run];
    if (entry) return *entry;
    entry = std::make_unique<Entry>();
    try {
      const auto context = store_.measurement_context(run);
      if (!context) throw UserError("run " + std::to_string(run) + " stored no measurement context");
      entry->timeout_s = context->timeout_s;
      entry->prepared = std::make_unique<PreparedGoal>(prepare_from_context(*context));
      if (options_.note)
        options_.note("measuring for run " + std::to_string(run) + " (" + entry->prepared->goal.name + ", " +
                      entry->prepared->setup.target->description() + ")");
    } catch (const UserError& error) {
      entry->unusable = error.what();
      if (options_.note) options_.note(entry->unusable);
    }
    return *entry;
  }

  int64_t count() {
    std::lock_guard lock(mutex_);
    return static_cast<int64_t>(entries_.size());
  }

 private:
  store::Store& store_;
  const WorkerOptions& options_;
  std::mutex mutex_;
  std::map<int64_t, std::unique_ptr<Entry>>
      entries_;  // never erased: measuring threads may outlive a timeout
};

}  // namespace

void check_worker_options(const WorkerOptions& options) {
  if (options.jobs < 1 || options.jobs > 256)
    throw UserError("--jobs " + std::to_string(options.jobs) + " is out of range; accepted: 1 to 256");
  const std::string longest = std::to_string(static_cast<long long>(kMaxSeconds));
  if (options.idle_exit_s && !(*options.idle_exit_s >= 0 && *options.idle_exit_s <= kMaxSeconds))
    throw UserError("--idle-exit must be a number of seconds, 0 or more, at most " + longest);
  // A lease must end: an endless one keeps a stopped worker's claims from every other worker.
  if (!(options.lease_s >= 5 && options.lease_s <= kMaxSeconds))
    throw UserError("--lease " + number_text(options.lease_s) + " is out of range; accepted: 5 to " +
                    longest + " seconds (heartbeats come every 2 s)");
}

WorkerSummary run_worker(store::Store& store, const WorkerOptions& options) {
  check_worker_options(options);
  const auto started = Clock::now();
  WorkerSummary summary;
  summary.id = skills::claimer_id("worker");
  RunTargets targets(store, options);
  std::atomic<int64_t> measured{0}, discarded{0}, busy{0};
  std::atomic<bool> stop{false};
  std::mutex activity_mutex;
  auto last_activity = Clock::now();
  // The rows this worker's jobs hold, and rows the store says this worker
  // holds that none of its jobs does (a claim whose COMMIT went through while
  // the connection broke, so the job never heard of it): since when, and
  // those handed back to the jobs. Guarded by activity_mutex.
  std::set<int64_t> in_flight;
  std::map<int64_t, Clock::time_point> unheld_since;
  std::deque<store::QueuedMeasurement> orphans;
  double claim_seconds = 0;  // in claims that returned a candidate
  auto touch = [&] {
    std::lock_guard lock(activity_mutex);
    last_activity = Clock::now();
  };

  store.heartbeat_worker(summary.id, skills::claimer_id(""), options.jobs, 0);
  std::vector<std::thread> jobs;
  for (int job = 0; job < options.jobs; ++job) {
    jobs.emplace_back([&] {
      // Idle, a job asks less and less often: 50 ms, doubling up to 1 s.
      auto idle_wait = std::chrono::milliseconds(50);
      while (!stop) {
        std::optional<store::QueuedMeasurement> item;
        const auto asked = Clock::now();
        {
          std::lock_guard lock(activity_mutex);
          if (!orphans.empty()) {
            item = orphans.front();
            orphans.pop_front();
          }
        }
        if (!item) try {
            item = store.claim_measurement(summary.id, options.lease_s, std::nullopt);
            if (item) {
              std::lock_guard lock(activity_mutex);
              in_flight.insert(item->id);
            }
          } catch (const std::exception& error) {
            if (options.note) options.note(std::string("claiming failed: ") + error.what());
          }
        if (!item) {
          std::this_thread::sleep_for(idle_wait);
          idle_wait = std::min(2 * idle_wait, std::chrono::milliseconds(1000));
          continue;
        }
        idle_wait = std::chrono::milliseconds(50);
        {
          std::lock_guard lock(activity_mutex);
          claim_seconds += std::chrono::duration<double>(Clock::now() - asked).count();
        }
        ++busy;
        touch();
        const auto& entry = targets.get(item->run);
        skills::Measurement m;
        if (!entry.unusable.empty()) {
          m.status = Outcome::failed;
          m.error = "worker " + summary.id + ": " + entry.unusable;
        } else {
          try {
            skills::MeasurementTarget& target = *entry.prepared->setup.target;
            m = skills::measure_with_deadline(target, skills::candidate_from_json(item->candidate),
                                              skills::candidate_time_limit(target, entry.timeout_s));
          } catch (const std::exception& error) {  // a malformed candidate in the queue
            m.status = Outcome::failed;
            m.error = std::string("worker could not read the queued candidate: ") + error.what();
          }
        }
        // The row stays claimed under this worker's live heartbeat: a result
        // that could not be stored (the database away for longer than a store
        // call reconnects) is stored again until it is, or the worker stops
        // (then its heartbeat stops too, and the row goes to another claimer).
        for (int attempt = 1;; ++attempt) {
          try {
            if (store.complete_measurement(item->id, summary.id, skills::to_json(m)))
              ++measured;
            else
              ++discarded;
            break;
          } catch (const std::exception& error) {
            if (options.note)
              options.note(std::string("storing a result failed, trying again: ") + error.what());
          }
          if (stop) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(std::min(200 * attempt, 2000)));
        }
        {
          std::lock_guard lock(activity_mutex);
          in_flight.erase(item->id);
        }
        --busy;
        touch();
      }
    });
  }

  // A row the store says this worker holds yet none of its jobs does stays
  // so under this worker's live heartbeat, and no one else would take it:
  // held unmeasured for kOrphanAfterS (a claim in progress reaches its job in
  // far less), it goes back to this worker's jobs.
  auto take_back_unheld = [&](const std::vector<int64_t>& held) {
    std::vector<int64_t> lost;
    {
      std::lock_guard lock(activity_mutex);
      for (auto it = unheld_since.begin(); it != unheld_since.end();)
        it = std::binary_search(held.begin(), held.end(), it->first) ? std::next(it) : unheld_since.erase(it);
      for (const int64_t id : held) {
        if (in_flight.count(id)) {
          unheld_since.erase(id);
          continue;
        }
        const auto since = unheld_since.emplace(id, Clock::now()).first->second;
        if (std::chrono::duration<double>(Clock::now() - since).count() >= skills::kOrphanAfterS)
          lost.push_back(id);
      }
    }
    if (lost.empty()) return;
    std::vector<store::QueuedMeasurement> rows;
    try {
      rows = store.queued_measurements(lost);
    } catch (const std::exception& error) {
      if (options.note) options.note(std::string("reading the queue failed: ") + error.what());
      return;
    }
    std::lock_guard lock(activity_mutex);
    for (const auto& row : rows) {
      if (row.state != store::QueueState::claimed || row.worker != summary.id || in_flight.count(row.id))
        continue;
      if (options.note)
        options.note("queued candidate " + std::to_string(row.id) +
                     " was claimed by this worker but not measured (a claim lost with its connection): "
                     "measuring it");
      unheld_since.erase(row.id);
      in_flight.insert(row.id);
      orphans.push_back(row);
    }
  };

  auto last_heartbeat = Clock::now();
  while (!stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (std::chrono::duration<double>(Clock::now() - last_heartbeat).count() >= skills::kHeartbeatIntervalS) {
      last_heartbeat = Clock::now();
      std::optional<std::vector<int64_t>> held;
      try {
        held = store.heartbeat_worker(summary.id, skills::claimer_id(""), options.jobs, measured);
      } catch (const std::exception& error) {
        if (options.note) options.note(std::string("heartbeat failed: ") + error.what());
      }
      if (held) take_back_unheld(*held);
    }
    if (options.idle_exit_s && busy == 0) {
      std::lock_guard lock(activity_mutex);
      if (orphans.empty() &&
          std::chrono::duration<double>(Clock::now() - last_activity).count() >= *options.idle_exit_s)
        stop = true;
    }
  }
  for (auto& job : jobs) job.join();
  summary.measured = measured;
  summary.discarded = discarded;
  summary.runs = targets.count();
  summary.mean_claim_s = measured + discarded > 0 ? claim_seconds / double(measured + discarded) : 0;
  summary.wall_time_s = std::chrono::duration<double>(Clock::now() - started).count();
  return summary;
}

}  // namespace autotune::orchestrator
