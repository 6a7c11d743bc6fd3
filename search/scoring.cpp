#include "search/scoring.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace autotune::search {

namespace {

double median_of(std::vector<double> values) {
  AUTOTUNE_CHECK(!values.empty(), "median of nothing");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

SpaceScoring::SpaceScoring(std::vector<double> valid_values) : sorted_(std::move(valid_values)) {
  if (sorted_.empty()) throw UserError("cannot score a space without valid values");
  std::sort(sorted_.begin(), sorted_.end(), std::greater<>());
  median_ = median_of(sorted_);
}

std::size_t SpaceScoring::budget(double p) const {
  const double threshold = optimum() + (median_ - optimum()) * (1.0 - p);
  const std::size_t n = sorted_.size();
  std::size_t i = 0;
  while (i < n && sorted_[i] > threshold) ++i;
  if (i >= n) i = n - 1;
  return static_cast<std::size_t>(std::ceil(static_cast<double>(i) / static_cast<double>(n + 1 - i)));
}

std::size_t SpaceScoring::capped_budget(double p) const {
  return std::max<std::size_t>(1, std::min(budget(p), kBudgetCap));
}

double SpaceScoring::random_expected_best(std::size_t m) const {
  const std::size_t n = sorted_.size();
  const double r =
      std::round(static_cast<double>(m) * static_cast<double>(n + 1) / static_cast<double>(m + 1));
  return sorted_[std::min(n - 1, static_cast<std::size_t>(r))];
}

double SpaceScoring::median_best(const std::vector<Trace>& traces, std::size_t evaluations) const {
  std::vector<double> bests;
  for (const auto& trace : traces) {
    double best = sorted_.front();
    for (std::size_t i = 0; i < trace.size() && i < evaluations; ++i)
      if (trace[i] && *trace[i] < best) best = *trace[i];
    bests.push_back(best);
  }
  return median_of(bests);
}

double SpaceScoring::performance(const std::vector<Trace>& traces, std::size_t evaluations) const {
  const double random = random_expected_best(evaluations);
  const double strategy = median_best(traces, evaluations);
  const double denominator = optimum() - random;
  return denominator == 0 ? (strategy <= optimum() ? 1.0 : 0.0) : (strategy - random) / denominator;
}

SpaceScore SpaceScoring::score(const std::vector<Trace>& traces) const {
  if (traces.empty()) throw UserError("cannot score: no run");
  SpaceScore out;
  out.low_budget = capped_budget(0.01);
  out.high_budget = std::max(out.low_budget, capped_budget(0.95));
  double sum = 0;
  for (std::size_t m = out.low_budget; m <= out.high_budget; ++m) {
    const double p = performance(traces, m);
    out.performance.push_back(p);
    sum += p;
  }
  out.score = sum / static_cast<double>(out.performance.size());
  std::vector<double> fractions;
  for (const auto& trace : traces) {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& v : trace)
      if (v && *v < best) best = *v;
    fractions.push_back(std::isfinite(best) && best > 0 ? optimum() / best : 0.0);
  }
  out.median_fraction_of_optimum = median_of(fractions);
  return out;
}

double SpaceScoring::bootstrap_standard_error(const std::vector<Trace>& traces, std::size_t resamples,
                                              std::uint64_t seed) const {
  if (traces.size() < 2 || resamples < 2) return 0;
  Rng rng(seed);
  std::vector<double> scores;
  std::vector<Trace> resample(traces.size());
  for (std::size_t r = 0; r < resamples; ++r) {
    for (auto& trace : resample)
      trace =
          traces[static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(traces.size()) - 1))];
    scores.push_back(score(resample).score);
  }
  double mean = 0;
  for (double s : scores) mean += s;
  mean /= static_cast<double>(scores.size());
  double squares = 0;
  for (double s : scores) squares += (s - mean) * (s - mean);
  return std::sqrt(squares / static_cast<double>(scores.size() - 1));
}

double mean_score(const std::vector<SpaceScore>& scores) {
  if (scores.empty()) return 0;
  double sum = 0;
  for (const auto& s : scores) sum += s.score;
  return sum / static_cast<double>(scores.size());
}

}  // namespace autotune::search
