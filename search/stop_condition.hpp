#pragma once
// Stop conditions, composable (after KTT): evaluation budget, wall-time
// budget, target value reached, no improvement for N evaluations, any-of.
// A StopCondition is a cheap value (shared immutable state); it only reads a
// SearchProgress, which the search loop keeps up to date.
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace autotune::search {

// What a stop condition may look at. Evaluations count failures too.
class SearchProgress {
 public:
  SearchProgress() : start_(std::chrono::steady_clock::now()) {}
  // One finished evaluation: its value (minimised) or nothing when it failed.
  void record(std::optional<double> value);

  std::size_t evaluations() const { return evaluations_; }
  std::size_t evaluations_since_improvement() const { return evaluations_ - last_improvement_; }
  std::optional<double> best() const { return best_; }
  double elapsed_seconds() const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::size_t evaluations_ = 0;
  std::size_t last_improvement_ = 0;
  std::optional<double> best_;
};

class StopCondition {
 public:
  struct Rule {
    virtual ~Rule() = default;
    virtual bool reached(const SearchProgress& progress) const = 0;
    virtual std::string describe() const = 0;
  };

  static StopCondition evaluations(std::size_t budget);
  static StopCondition wall_time(double seconds);
  static StopCondition target(double value);  // stop once best <= value
  static StopCondition no_improvement(std::size_t evaluations);
  static StopCondition any_of(std::vector<StopCondition> conditions);
  static StopCondition never();

  bool reached(const SearchProgress& progress) const { return rule_->reached(progress); }
  std::string describe() const { return rule_->describe(); }
  // The evaluation budget when this condition has one (the smallest one).
  std::optional<std::size_t> evaluation_budget() const;

  explicit StopCondition(std::shared_ptr<const Rule> rule) : rule_(std::move(rule)) {}
  const std::shared_ptr<const Rule>& rule() const { return rule_; }

 private:
  std::shared_ptr<const Rule> rule_;
};

// a || b: stop when either is reached.
StopCondition operator||(const StopCondition& a, const StopCondition& b);

}  // namespace autotune::search
