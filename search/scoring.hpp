#pragma once
// Scoring a strategy on a brute-forced space (Willemsen et al., FGCS 2024, on
// the evaluation axis; ../shared/data/tuning/README.md):
//   w_0 >= ... >= w_{N-1}: the valid values, worst first; f_opt = w_{N-1},
//   f_med their median.
//   B(p) = ceil(i / (N + 1 - i)), i the first index with
//          w_i <= f_opt + (f_med - f_opt)(1 - p); budgets are capped (300).
//   f_rand(M) = w_r, r = min(N - 1, round(M (N + 1) / (M + 1))).
//   P(M) = (f_strat(M) - f_rand(M)) / (f_opt - f_rand(M)), f_strat(M) the
//          median over repeats of the best value after M evaluations.
//   score = mean of P(M) over M in [B(0.01), B(0.95)].
// A trace lists every evaluation's value in order (nothing for a failure).
// Before its first valid value a run's best is w_0 (the worst valid value); a
// trace shorter than M keeps its last best.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace autotune::search {

using Trace = std::vector<std::optional<double>>;

struct SpaceScore {
  double score = 0;  // mean P(M) over [low_budget, high_budget]
  std::size_t low_budget = 0, high_budget = 0;
  double median_fraction_of_optimum = 0;  // median over repeats of f_opt / best at the trace's end
  std::vector<double> performance;        // P(M) for M = low_budget..high_budget
};

class SpaceScoring {
 public:
  static constexpr std::size_t kBudgetCap = 300;

  explicit SpaceScoring(std::vector<double> valid_values);

  double optimum() const { return sorted_.back(); }
  double median() const { return median_; }
  std::size_t size() const { return sorted_.size(); }
  // B(p), uncapped.
  std::size_t budget(double p) const;
  std::size_t capped_budget(double p) const;
  double random_expected_best(std::size_t evaluations) const;
  // Median over traces of the best value after `evaluations`.
  double median_best(const std::vector<Trace>& traces, std::size_t evaluations) const;
  // P(M) of the header for M = `evaluations` (defined for any M >= 1, inside
  // the score's window or not).
  double performance(const std::vector<Trace>& traces, std::size_t evaluations) const;
  SpaceScore score(const std::vector<Trace>& traces) const;
  // The standard error of score(traces) over repeats: the standard deviation
  // of the score of `resamples` bootstrap resamples of the traces (drawn with
  // replacement, seeded). The score takes a median over repeats, so the
  // spread of repeats scored one by one (heavy-tailed at small budgets, where
  // one bad run scores far below -1) overstates its noise.
  double bootstrap_standard_error(const std::vector<Trace>& traces, std::size_t resamples = 200,
                                  std::uint64_t seed = 1) const;

 private:
  std::vector<double> sorted_;  // worst first
  double median_ = 0;
};

// Mean of scores (a strategy's score over spaces).
double mean_score(const std::vector<SpaceScore>& scores);

}  // namespace autotune::search
