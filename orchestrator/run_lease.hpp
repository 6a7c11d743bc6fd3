#pragma once
// One process at a time runs a run: `run --resume N` twice at once would
// interleave two loops on the same decision sequence. The process that runs
// (or resumes) a run holds its lease in the store and renews it on a
// heartbeat; another process is refused with one line naming the holder; a
// holder that died (its process gone, or silent past kLeaseStaleAfterS) is
// taken over.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "store/store.hpp"

namespace autotune::orchestrator {

inline constexpr double kLeaseStaleAfterS = 30;

// The run is another process's now: nothing more may be written to it, not
// even this process's verdict on it.
class LeaseLost : public UserError {
 public:
  using UserError::UserError;
};
inline constexpr double kLeaseHeartbeatS = 5;

class RunLease {
 public:
  // Takes the lease of run `id`, or throws a UserError naming its holder.
  RunLease(store::Store& store, int64_t id);
  // Stops the heartbeat and releases the lease.
  ~RunLease();
  RunLease(const RunLease&) = delete;
  RunLease& operator=(const RunLease&) = delete;

  // Called before each write to the run: throws a UserError once another
  // process has taken the lease over. A process that was paused (Ctrl-Z, a
  // debugger) past kLeaseStaleAfterS may have lost it without its heartbeat
  // having run since: when the last renewal is older than two heartbeats, the
  // lease is renewed here first, so the pause is found before the write.
  void check();

 private:
  void renew();  // records whether the lease is still held

  store::Store& store_;
  int64_t id_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> lost_{false};
  std::atomic<std::int64_t> renewed_at_ns_{0};  // steady clock
  std::thread heartbeat_;
};

// The run record a process works on, with its lease: a new one, or one
// reopened to resume it with what it already stored.
struct OpenedRun {
  store::Run record;
  std::optional<RunLease> lease;
  int64_t already_logged = 0;           // decisions already stored: replayed, not written again
  std::vector<store::Trial> committed;  // trials already stored: served again

  // Stores `record` as a new run and takes its lease; `created` hears its id
  // as soon as it exists (an interruption from then on can mark it).
  void open_new(store::Store& store, const std::function<void(int64_t)>& created = {});
  // Takes the lease of `existing` before any write (another process may be
  // running it), marks it running and reads what it stored.
  void reopen(store::Store& store, const store::Run& existing);
};

}  // namespace autotune::orchestrator
