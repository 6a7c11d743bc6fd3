#pragma once
// One process at a time runs a run: `run --resume N` twice at once would
// interleave two loops on the same decision sequence. The process that runs
// (or resumes) a run holds its lease in the store and renews it on a
// heartbeat; another process is refused with one line naming the holder; a
// holder that died (its process gone, or silent past kLeaseStaleAfterS) is
// taken over.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/store.hpp"

namespace autotune::orchestrator {

inline constexpr double kLeaseStaleAfterS = 30;
inline constexpr double kLeaseHeartbeatS = 5;

class RunLease {
 public:
  // Takes the lease of run `id`, or throws a UserError naming its holder.
  RunLease(store::Store& store, int64_t id);
  // Stops the heartbeat and releases the lease.
  ~RunLease();
  RunLease(const RunLease&) = delete;
  RunLease& operator=(const RunLease&) = delete;

 private:
  store::Store& store_;
  int64_t id_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
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
