#include "search/stop_condition.hpp"

#include <sstream>

#include "core/error.hpp"
#include "core/text.hpp"

namespace autotune::search {

void SearchProgress::record(std::optional<double> value) {
  ++evaluations_;
  if (value && (!best_ || *value < *best_)) {
    best_ = value;
    last_improvement_ = evaluations_;
  }
}

double SearchProgress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

namespace {

struct EvaluationBudget final : StopCondition::Rule {
  std::size_t budget;
  explicit EvaluationBudget(std::size_t b) : budget(b) {}
  bool reached(const SearchProgress& p) const override { return p.evaluations() >= budget; }
  std::string describe() const override { return std::to_string(budget) + " evaluations"; }
};

struct WallTime final : StopCondition::Rule {
  double seconds;
  explicit WallTime(double s) : seconds(s) {}
  bool reached(const SearchProgress& p) const override { return p.elapsed_seconds() >= seconds; }
  std::string describe() const override {
    std::ostringstream out;
    out << seconds << " s wall time";
    return out.str();
  }
};

struct Target final : StopCondition::Rule {
  double value;
  explicit Target(double v) : value(v) {}
  bool reached(const SearchProgress& p) const override { return p.best() && *p.best() <= value; }
  std::string describe() const override {
    std::ostringstream out;
    out << "target " << value << " reached";
    return out.str();
  }
};

struct NoImprovement final : StopCondition::Rule {
  std::size_t evaluations;
  explicit NoImprovement(std::size_t n) : evaluations(n) {}
  bool reached(const SearchProgress& p) const override {
    return p.evaluations_since_improvement() >= evaluations;
  }
  std::string describe() const override {
    return "no improvement for " + std::to_string(evaluations) + " evaluations";
  }
};

struct AnyOf final : StopCondition::Rule {
  std::vector<StopCondition> conditions;
  bool reached(const SearchProgress& p) const override {
    for (const auto& c : conditions)
      if (c.reached(p)) return true;
    return false;
  }
  std::string describe() const override {
    const std::string out = join(conditions, " or ", [](const StopCondition& c) { return c.describe(); });
    return out.empty() ? "never" : out;
  }
};

}  // namespace

StopCondition StopCondition::evaluations(std::size_t budget) {
  if (budget == 0) throw UserError("evaluation budget must be at least 1");
  return StopCondition(std::make_shared<EvaluationBudget>(budget));
}
StopCondition StopCondition::wall_time(double seconds) {
  if (!(seconds > 0)) throw UserError("wall-time budget must be positive");
  return StopCondition(std::make_shared<WallTime>(seconds));
}
StopCondition StopCondition::target(double value) { return StopCondition(std::make_shared<Target>(value)); }
StopCondition StopCondition::no_improvement(std::size_t evaluations) {
  if (evaluations == 0) throw UserError("no-improvement window must be at least 1 evaluation");
  return StopCondition(std::make_shared<NoImprovement>(evaluations));
}
StopCondition StopCondition::any_of(std::vector<StopCondition> conditions) {
  auto rule = std::make_shared<AnyOf>();
  rule->conditions = std::move(conditions);
  return StopCondition(rule);
}
StopCondition StopCondition::never() { return any_of({}); }

StopCondition operator||(const StopCondition& a, const StopCondition& b) {
  return StopCondition::any_of({a, b});
}

std::optional<std::size_t> StopCondition::evaluation_budget() const {
  if (const auto* budget = dynamic_cast<const EvaluationBudget*>(rule_.get())) return budget->budget;
  if (const auto* any = dynamic_cast<const AnyOf*>(rule_.get())) {
    std::optional<std::size_t> out;
    for (const auto& c : any->conditions)
      if (const auto b = c.evaluation_budget()) out = out ? std::min(*out, *b) : *b;
    return out;
  }
  return std::nullopt;
}

}  // namespace autotune::search
