#include "core/noise.hpp"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <cmath>

#include "core/error.hpp"

namespace autotune {

double order_statistic_coverage(int n, int k) {
  AUTOTUNE_CHECK(n >= 2 && k >= 1 && 2 * k <= n, "order_statistic_coverage: ranks outside the sample");
  const boost::math::binomial_distribution<double> binomial(n, 0.5);
  return 1.0 - 2.0 * boost::math::cdf(binomial, double(k - 1));
}

MedianInterval median_interval(std::vector<double> samples, double confidence) {
  AUTOTUNE_CHECK(!samples.empty(), "median_interval of no samples");
  std::sort(samples.begin(), samples.end());
  const int n = int(samples.size());
  MedianInterval out;
  out.n = n;
  out.median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2.0;
  if (n == 1) {
    out.low = out.high = out.median;
    return out;
  }
  // Coverage falls as k grows: the largest k that still reaches `confidence`.
  int k = 1;
  while (2 * (k + 1) <= n && order_statistic_coverage(n, k + 1) >= confidence) ++k;
  out.low = samples[k - 1];
  out.high = samples[n - k];
  out.confidence = order_statistic_coverage(n, k);
  return out;
}

nlohmann::json interval_json(const MedianInterval& interval) {
  return {
      {"low", interval.low}, {"high", interval.high}, {"confidence", interval.confidence}, {"n", interval.n}};
}

std::optional<Estimate> estimate_from_metrics(const nlohmann::json& metrics, const std::string& key,
                                              bool negate) {
  if (!metrics.is_object() || !metrics.contains(key) || !metrics.at(key).is_number()) return std::nullopt;
  const double value = metrics.at(key).get<double>();
  if (!std::isfinite(value)) return std::nullopt;
  Estimate e{value, value, value};
  const auto intervals = metrics.find("intervals");
  if (intervals != metrics.end() && intervals->is_object() && intervals->contains(key)) {
    const auto& interval = intervals->at(key);
    if (interval.is_object() && interval.contains("low") && interval.contains("high") &&
        interval.at("low").is_number() && interval.at("high").is_number()) {
      const double low = interval.at("low").get<double>(), high = interval.at("high").get<double>();
      if (std::isfinite(low) && std::isfinite(high) && low <= value && value <= high) {
        e.low = low;
        e.high = high;
      }
    }
  }
  if (negate) e = {-e.value, -e.high, -e.low};
  return e;
}

const char* to_string(Comparison comparison) {
  switch (comparison) {
    case Comparison::not_better:
      return "not_better";
    case Comparison::within_noise:
      return "within_noise";
    case Comparison::better:
      return "better";
    case Comparison::suspicious:
      return "suspicious";
  }
  return "?";
}

Comparison compare_estimates(const Estimate& candidate, const Estimate& incumbent, double remeasure_beyond) {
  const double noise = std::max(candidate.width(), incumbent.width());
  if (noise <= 0) return candidate.value < incumbent.value ? Comparison::better : Comparison::not_better;
  if (!(candidate.value < incumbent.value)) return Comparison::not_better;
  if (!(candidate.high < incumbent.low)) return Comparison::within_noise;
  if (remeasure_beyond >= 0 && incumbent.low - candidate.value > remeasure_beyond * noise)
    return Comparison::suspicious;
  return Comparison::better;
}

ObjectiveMetric objective_metric(std::string_view objective) {
  if (objective == "mfu") return {"mfu_percent", true};
  return {"latency_s", false};
}

}  // namespace autotune
