// The median's order-statistic interval and the rule for noisy comparisons (core/noise.hpp).
#include "core/noise.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

using namespace autotune;

TEST_CASE("the median interval of few samples is their range, with the coverage it has") {
  const auto i = median_interval({3.0, 1.0, 5.0, 2.0, 4.0});
  CHECK(i.median == 3.0);
  CHECK(i.low == 1.0);
  CHECK(i.high == 5.0);
  CHECK(i.n == 5);
  CHECK(i.confidence == doctest::Approx(1.0 - 2.0 / 32.0));  // 93.75%: five samples cannot reach 95%
  const auto one = median_interval({2.5});
  CHECK(one.low == 2.5);
  CHECK(one.high == 2.5);
  CHECK(one.confidence == 0.0);
  const auto even = median_interval({4.0, 1.0});
  CHECK(even.median == 2.5);
  CHECK(even.confidence == doctest::Approx(0.5));
}

TEST_CASE("the median interval takes the innermost ranks that still reach the confidence") {
  std::vector<double> samples;
  for (int i = 1; i <= 10; ++i) samples.push_back(double(i));
  const auto i = median_interval(samples);
  // P(B <= 1) = 11/1024 for B ~ Bin(10, 1/2): ranks 2 and 9 cover 97.85%; ranks 3 and 8 only 89.06%.
  CHECK(i.low == 2.0);
  CHECK(i.high == 9.0);
  CHECK(i.confidence == doctest::Approx(1.0 - 22.0 / 1024.0));
  CHECK(order_statistic_coverage(10, 3) == doctest::Approx(1.0 - 112.0 / 1024.0));
  const auto wide = median_interval(samples, 0.99);
  CHECK(wide.low == 1.0);  // 99% needs all of ten samples
  CHECK(wide.high == 10.0);
}

TEST_CASE("the interval covers the median of a skewed distribution as often as it says") {
  // Log-normal timings (a tail of slow runs): the coverage is distribution-free.
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> timing(0.0, 0.5);
  const double true_median = 1.0;  // exp(mu)
  for (int n : {6, 9, 15}) {
    int covered = 0, trials = 20000;
    double claimed = 0;
    for (int t = 0; t < trials; ++t) {
      std::vector<double> samples(n);
      for (auto& s : samples) s = timing(rng);
      const auto i = median_interval(samples);
      claimed = i.confidence;
      covered += i.low <= true_median && true_median <= i.high;
    }
    CAPTURE(n);
    CHECK(claimed >= 0.95);
    CHECK(double(covered) / trials == doctest::Approx(claimed).epsilon(0.01));
  }
}

TEST_CASE("a noisy candidate is better only beyond the noise, and suspicious far beyond it") {
  const Estimate incumbent{1.00, 0.98, 1.02};
  // A lower median whose interval overlaps the incumbent's: within the noise.
  CHECK(compare_estimates({0.99, 0.97, 1.01}, incumbent, 3) == Comparison::within_noise);
  // Wholly below, by less than three noise widths (0.04) from the incumbent's lower bound.
  CHECK(compare_estimates({0.95, 0.94, 0.96}, incumbent, 3) == Comparison::better);
  // 0.98 - 0.80 = 0.18 > 3 * 0.04: measured again before it counts.
  CHECK(compare_estimates({0.80, 0.79, 0.81}, incumbent, 3) == Comparison::suspicious);
  CHECK(compare_estimates({0.80, 0.79, 0.81}, incumbent, -1) == Comparison::better);
  CHECK(compare_estimates({1.01, 0.99, 1.03}, incumbent, 3) == Comparison::not_better);
  // Points (deterministic measurements): the lower value is better, as without intervals.
  CHECK(compare_estimates({0.999, 0.999, 0.999}, {1.0, 1.0, 1.0}, 3) == Comparison::better);
  CHECK(compare_estimates({1.0, 1.0, 1.0}, {1.0, 1.0, 1.0}, 3) == Comparison::not_better);
}

TEST_CASE("estimates are read from a trial's metrics, intervals included") {
  const nlohmann::json metrics = {
      {"latency_s", 2.0},
      {"mfu_percent", 40.0},
      {"intervals",
       {{"latency_s", {{"low", 1.5}, {"high", 2.5}}}, {"mfu_percent", {{"low", 35}, {"high", 42}}}}}};
  const auto latency = estimate_from_metrics(metrics, "latency_s");
  REQUIRE(latency);
  CHECK(latency->low == 1.5);
  CHECK(latency->high == 2.5);
  const auto mfu = estimate_from_metrics(metrics, "mfu_percent", true);
  REQUIRE(mfu);
  CHECK(mfu->value == -40.0);
  CHECK(mfu->low == -42.0);
  CHECK(mfu->high == -35.0);
  const auto point = estimate_from_metrics({{"latency_s", 3.0}}, "latency_s");
  REQUIRE(point);
  CHECK(point->width() == 0.0);
  CHECK_FALSE(estimate_from_metrics({{"x", 1}}, "latency_s"));
}
