#include "orchestrator/run_lease.hpp"

#include <chrono>
#include <cstdio>

#include "core/error.hpp"
#include "core/log.hpp"

namespace autotune::orchestrator {

RunLease::RunLease(store::Store& store, int64_t id) : store_(store), id_(id) {
  if (const auto holder = store_.acquire_lease(id_, kLeaseStaleAfterS)) {
    char age[32];
    std::snprintf(age, sizeof age, "%.0f", holder->heartbeat_age_s);
    throw UserError("run " + std::to_string(id_) + " is being run by another autotune process (pid " +
                    std::to_string(holder->pid) + " on " + holder->host + ", last heartbeat " + age +
                    " s ago); wait for it to end or stop it (a holder silent for " +
                    std::to_string(static_cast<int>(kLeaseStaleAfterS)) + " s is taken over)");
  }
  renewed_at_ns_ = std::chrono::steady_clock::now().time_since_epoch().count();
  heartbeat_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::duration<double>(kLeaseHeartbeatS),
                           [this] { return stopping_; })) {
      lock.unlock();
      try {
        renew();
      } catch (const std::exception& e) {
        log::warn("run " + std::to_string(id_) + ": the lease's heartbeat failed: " + e.what());
      }
      lock.lock();
    }
  });
}

void RunLease::renew() {
  if (lost_) return;
  if (!store_.renew_lease(id_)) {
    lost_ = true;
    return;
  }
  renewed_at_ns_ = std::chrono::steady_clock::now().time_since_epoch().count();
}

void RunLease::check() {
  const auto since = std::chrono::steady_clock::now().time_since_epoch() -
                     std::chrono::steady_clock::duration(renewed_at_ns_.load());
  if (!lost_ && since > std::chrono::duration<double>(2 * kLeaseHeartbeatS)) renew();
  if (lost_)
    throw LeaseLost("run " + std::to_string(id_) +
                    ": another autotune process took it over while this one was paused or silent for more "
                    "than " +
                    std::to_string(static_cast<int>(kLeaseStaleAfterS)) +
                    " s; this process stops without writing to it again");
}

RunLease::~RunLease() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  heartbeat_.join();
  try {
    store_.release_lease(id_);
  } catch (const std::exception& e) {
    log::warn("run " + std::to_string(id_) + ": the lease could not be released: " + e.what());
  }
}

void OpenedRun::open_new(store::Store& store, const std::function<void(int64_t)>& created) {
  record.id = store.create_run(record);
  if (created) created(record.id);
  lease.emplace(store, record.id);
}

void OpenedRun::reopen(store::Store& store, const store::Run& existing) {
  lease.emplace(store, existing.id);
  record = existing;
  record.status = store::RunStatus::running;
  store.update_run(record);
  already_logged = store.last_decision_seq(record.id);
  committed = store.trials(record.id);
}

}  // namespace autotune::orchestrator
