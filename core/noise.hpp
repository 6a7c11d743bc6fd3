#pragma once
// Measurements that are repeated because they are noisy (a command target's
// runs on a device): the median of the repeats, a confidence interval of that
// median, and the rule by which one noisy measurement counts as better than
// another (docs/goals.md, "Noisy measurements").
//
// The interval is distribution-free, from order statistics: for n sorted
// samples x(1) <= ... <= x(n), [x(k), x(n+1-k)] holds the population median
// with probability 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2), whatever the
// distribution of the samples (device timings are skewed, with a tail of slow
// runs: no normal approximation holds for them, and a bootstrap of the median
// at 3-10 samples is discrete and under-covers). The rank k is the largest
// whose coverage reaches the asked confidence; with too few samples for that
// (n < 6 at 95%) the interval is [min, max], and `confidence` says what it
// covers (n = 5: 93.75%).
//
// The rule, for a candidate C against the incumbent I (lower is better):
//  - neither has an interval wider than a point (deterministic measurements,
//    the simulator): C is better when its value is lower, as always;
//  - otherwise C is better only when its interval lies wholly below I's
//    (C.high < I.low); a lower median inside the noise is `within_noise`;
//  - a C better by more than `remeasure_beyond` noise widths (the wider of
//    the two intervals) between its median and I's lower bound is
//    `suspicious`: it is measured again before it counts.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autotune {

inline constexpr double kDefaultConfidence = 0.95;
inline constexpr double kDefaultRemeasureBeyond = 3.0;

struct MedianInterval {
  double median = 0;
  double low = 0;
  double high = 0;
  double confidence = 0;  // the coverage the interval has (may be below the one asked)
  int n = 0;
};

// The median of `samples` and its order-statistic interval at `confidence`
// (0 < confidence < 1). With one sample the interval is that point, with
// confidence 0. InternalError when `samples` is empty.
MedianInterval median_interval(std::vector<double> samples, double confidence = kDefaultConfidence);

// The coverage of [x(k), x(n+1-k)] for the median of n samples (1 <= k <= n/2).
double order_statistic_coverage(int n, int k);

// {"low", "high", "confidence", "n"}: how a trial's metrics store an interval
// (metrics["intervals"][metric]).
nlohmann::json interval_json(const MedianInterval& interval);

// A measured value with its interval (low == high == value for a point).
struct Estimate {
  double value = 0;
  double low = 0;
  double high = 0;
  double width() const { return high - low; }
};

// metrics[key] with metrics["intervals"][key] when stored; `negate` for a
// maximised metric read as a minimised value (MFU). nullopt when metrics[key]
// is not a finite number.
std::optional<Estimate> estimate_from_metrics(const nlohmann::json& metrics, const std::string& key,
                                              bool negate = false);

enum class Comparison { not_better, within_noise, better, suspicious };
const char* to_string(Comparison comparison);

// The rule above; `remeasure_beyond` < 0 never calls a candidate suspicious
// (one already measured again).
Comparison compare_estimates(const Estimate& candidate, const Estimate& incumbent, double remeasure_beyond);

// The metric a goal's objective ranks trials by, the one the loop compares
// (and every report of the run follows): `latency` and `throughput` by
// latency_s (a fixed workload's throughput is its inverse), `mfu` by
// mfu_percent, higher better (read negated by estimate_from_metrics).
struct ObjectiveMetric {
  const char* key;
  bool maximised;
};
ObjectiveMetric objective_metric(std::string_view objective);

}  // namespace autotune
