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
#include <mutex>
#include <string>

#include "skills/skill.hpp"
#include "store/store.hpp"

namespace autotune::orchestrator {

class DecisionLog {
 public:
  DecisionLog(store::Store& store, int64_t run, int64_t already_logged = 0)
      : store_(store), run_(run), already_logged_(already_logged) {}

  int64_t append(int iteration, const std::string& skill, const skills::SkillDecision& decision,
                 double duration_ms = 0);
  void set_outcome(int64_t seq, const std::string& outcome);
  int64_t appended() const { return next_seq_ - 1; }
  bool replaying() const { return next_seq_ <= already_logged_; }

 private:
  store::Store& store_;
  int64_t run_;
  int64_t already_logged_;
  int64_t next_seq_ = 1;
  std::mutex mutex_;
};

}  // namespace autotune::orchestrator
