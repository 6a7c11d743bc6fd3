#pragma once
// The run's decision log: every skill's decision record, written to the store
// in order.
//
// Resuming: a resumed run re-executes its loop from the start (proposals are
// deterministic given the goal, the seed and the committed observations), so
// the first `already_logged` decisions it makes are the ones already stored.
// Those are not written again; append() returns their stored seq, so trials
// keep pointing at the right decision.
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "skills/skill.hpp"
#include "store/store.hpp"

namespace autotune::orchestrator {

// The orchestrator's own decisions: logged under the skill name kOrchestrator,
// "try:<idea kind>" when the policy picks an idea, kAccept or kRollback when
// the idea's search is judged. `autotune explain` traces trials through them.
inline constexpr const char* kOrchestrator = "orchestrator";
inline constexpr std::string_view kTryPrefix = "try:";
inline constexpr const char* kAccept = "accept";
inline constexpr const char* kRollback = "rollback";

// The noise rule's decisions (a target whose measurements have intervals,
// docs/goals.md "Noisy measurements"), which `autotune explain` reads back:
// kWithinNoise names its trials in evidence.within_noise; kMeasureAgain in
// inputs.trials, its outcome "trial X again as trial Y: <kConfirmed or not
// confirmed (...)>" per trial, "; " between them; kNotMeasuredAgain in
// evidence.suspicious, its outcome "trial X: <kMeasuredOnce or not better>".
// Each names the best it was compared with in evidence.best.trial.
inline constexpr const char* kWithinNoise = "within_noise";
inline constexpr const char* kMeasureAgain = "measure_again";
inline constexpr const char* kNotMeasuredAgain = "not_measured_again";
inline constexpr std::string_view kConfirmed = "confirmed, the new best";
inline constexpr std::string_view kMeasuredOnce = "the new best, measured once";

class DecisionLog {
 public:
  DecisionLog(store::Store& store, int64_t run, int64_t already_logged = 0)
      : store_(store), run_(run), already_logged_(already_logged) {}

  int64_t append(int iteration, const std::string& skill, const skills::SkillDecision& decision,
                 double duration_ms = 0);
  // Called with one line for every decision that records a failure (a
  // plugin that failed or whose answer was refused, an LLM answer not used
  // because the call failed or was rejected), as it is logged, replayed
  // decisions included.
  void on_failure(std::function<void(const std::string&)> sink) { failure_sink_ = std::move(sink); }
  // The failure line of `decision`, "" when it records none.
  static std::string failure_line(const std::string& skill, const skills::SkillDecision& decision);
  void set_outcome(int64_t seq, const std::string& outcome);
  int64_t appended() const { return next_seq_ - 1; }
  bool replaying() const { return next_seq_ <= already_logged_; }
  // Called before every write (RunLease::check: the run may have been taken over).
  void set_write_guard(std::function<void()> guard) { write_guard_ = std::move(guard); }

 private:
  store::Store& store_;
  int64_t run_;
  int64_t already_logged_;
  int64_t next_seq_ = 1;
  std::function<void(const std::string&)> failure_sink_;
  std::function<void()> write_guard_;
  std::mutex mutex_;
};

}  // namespace autotune::orchestrator
