// The simulated screen: it picks the proposals the simulator ranks best, and
// the device's measurements correct it (a per-variant log ratio; a refit of
// the target's fitted constants). "The device" here is the simulator at
// another target file: bench/targets/trn2-standin.yaml.
#include "skills/screen.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "kernels/calibration.hpp"
#include "sim/target.hpp"

using namespace autotune;
using namespace autotune::skills;

namespace {

const std::map<std::string, std::int64_t> kShape = {{"M", 256}, {"N", 512}, {"K", 512}};

ScreenConfig gemm_screen(const std::string& correction) {
  ScreenConfig config;
  config.target = "trn2";
  config.family = "gemm";
  config.shape = kShape;
  config.dtype = "bf16";
  config.correction = correction;
  config.threads = 2;
  return config;
}

std::vector<Candidate> tiled(const std::vector<std::array<int, 3>>& settings,
                             const std::string& variant = "tiled") {
  std::vector<Candidate> out;
  for (const auto& [m, k, depth] : settings)
    out.push_back({variant, {{"tile_m", m}, {"tile_k", k}, {"pipeline_depth", depth}}});
  return out;
}

// The latency of `candidate` on a target file, simulated directly (not through the screen).
double simulated_on(const std::string& target_file, const Candidate& candidate) {
  kernels::Measurement row;
  row.family = "gemm";
  row.variant = candidate.variant;
  row.shape = kShape;
  row.dtype = "bf16";
  for (const auto& [name, value] : candidate.params.items()) row.params[name] = value.get<std::int64_t>();
  const auto target = sim::load_target(target_file);
  const auto timing = kernels::time_measurement(kernels::trace_measurement(row, target), target, false);
  REQUIRE(timing.valid);
  return timing.simulated_ms * 1e-3;
}

std::string standin() { return std::string(AUTOTUNE_SOURCE_DIR) + "/bench/targets/trn2-standin.yaml"; }

double rms_log_error(SimulatedScreen& screen, const std::vector<Candidate>& candidates) {
  const auto predictions = screen.predict(candidates);
  double squares = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    REQUIRE(predictions[i].valid);
    squares += std::pow(std::log(simulated_on(standin(), candidates[i]) / predictions[i].predicted_s), 2);
  }
  return std::sqrt(squares / double(candidates.size()));
}

}  // namespace

TEST_CASE("the screen keeps the proposals with the lowest simulated latency") {
  SimulatedScreen screen(gemm_screen("ratio"));
  // Small tiles first: the proposals are not already in the simulator's order.
  auto proposals =
      tiled({{32, 32, 1}, {32, 64, 2}, {64, 32, 1}, {128, 128, 2}, {64, 64, 3}, {128, 64, 1}, {128, 128, 4}});
  proposals.push_back(
      {"tiled", {{"tile_m", 32}, {"tile_k", 32}, {"no_such_parameter", 1}}});  // the simulator refuses it
  const auto predictions = screen.predict(proposals);
  CHECK_FALSE(predictions.back().valid);
  CHECK_FALSE(predictions.back().error.empty());
  CHECK(screen.simulations() == 7);
  const auto chosen = SimulatedScreen::choose(predictions, 3);
  REQUIRE(chosen.size() == 3);
  // The three fastest by the simulator, simulated here without the screen.
  std::vector<std::pair<double, std::size_t>> truth;
  for (std::size_t i = 0; i + 1 < proposals.size(); ++i)
    truth.push_back({simulated_on("trn2", proposals[i]), i});
  std::sort(truth.begin(), truth.end());
  for (std::size_t r = 0; r < 3; ++r) {
    CHECK(chosen[r] == truth[r].second);
    CHECK(predictions[chosen[r]].simulated_s == doctest::Approx(truth[r].first).epsilon(1e-9));
  }
  // The invalid one only to fill the last place.
  const auto all = SimulatedScreen::choose(predictions, proposals.size());
  CHECK(all.back() == proposals.size() - 1);
  // Ranked again: served from what was simulated.
  (void)screen.predict(proposals);
  CHECK(screen.simulations() == 7);
}

TEST_CASE("device measurements set a per-variant log ratio that scales the variant's predictions") {
  SimulatedScreen screen(gemm_screen("ratio"));
  const auto measured = tiled({{128, 128, 2}, {64, 64, 2}});
  const auto other = tiled({{128, 64, 3}});
  const double before = screen.predict(other)[0].predicted_s;
  CHECK(screen.log_ratio("tiled") == 0);
  // The device is 1.5x the simulator on tiled and 0.8x on hoisted.
  std::vector<std::pair<Candidate, double>> device;
  for (const auto& c : measured) device.push_back({c, 1.5 * simulated_on("trn2", c)});
  const Candidate hoisted{"hoisted", {{"tile_m", 128}, {"tile_k", 128}, {"pipeline_depth", 2}}};
  device.push_back({hoisted, 0.8 * simulated_on("trn2", hoisted)});
  const auto feedback = screen.learn(device);
  REQUIRE(feedback.size() == 3);
  CHECK(feedback[0].predicted_s == doctest::Approx(feedback[0].simulated_s));  // predicted before learning
  CHECK(feedback[0].measured_s == doctest::Approx(1.5 * feedback[0].simulated_s));
  CHECK(screen.log_ratio("tiled") == doctest::Approx(std::log(1.5)));
  CHECK(screen.log_ratio("hoisted") == doctest::Approx(std::log(0.8)));
  // A variant never measured: the mean over all trials.
  CHECK(screen.log_ratio("blocked_mn") == doctest::Approx((2 * std::log(1.5) + std::log(0.8)) / 3));
  const auto after = screen.predict(other)[0];
  CHECK(after.simulated_s == doctest::Approx(before));
  CHECK(after.predicted_s == doctest::Approx(1.5 * before));
  CHECK(screen.correction_json()["rms_log_error"].get<double>() < 1e-9);

  SimulatedScreen plain(gemm_screen("none"));
  plain.learn(device);
  CHECK(plain.log_ratio("tiled") == 0);
  CHECK(plain.predict(other)[0].predicted_s == doctest::Approx(before));
}

TEST_CASE(
    "a refit on device trials predicts configurations it has not measured better than the ratio alone") {
  // Device trials: tiled GEMMs over tile sizes and depths, measured on the stand-in device.
  const auto trained =
      tiled({{32, 32, 1}, {128, 128, 2}, {64, 128, 3}, {128, 32, 4}, {32, 128, 6}, {64, 64, 8}});
  const auto held_out = tiled({{32, 64, 2}, {128, 64, 1}, {64, 32, 4}, {128, 128, 8}, {32, 32, 3}});
  std::vector<std::pair<Candidate, double>> device;
  for (const auto& c : trained) device.push_back({c, simulated_on(standin(), c)});

  SimulatedScreen ratio(gemm_screen("ratio"));
  SimulatedScreen refit(gemm_screen("refit"));
  const double untouched = rms_log_error(ratio, held_out);
  for (auto* screen : {&ratio, &refit})
    for (std::size_t i = 0; i < device.size(); i += 2) screen->learn({device[i], device[i + 1]});
  const double by_ratio = rms_log_error(ratio, held_out);
  const double by_refit = rms_log_error(refit, held_out);
  CAPTURE(untouched);
  CAPTURE(by_ratio);
  CAPTURE(by_refit);
  // A constant ratio cannot follow constants that move configurations differently; the refit can.
  CHECK(by_refit < 0.5 * untouched);
  CHECK(by_refit < 0.5 * by_ratio);
  const Json correction = refit.correction_json();
  CHECK(correction["refits"].get<int>() >= 1);
  CHECK(correction["fitted_constants"] != ratio.correction_json().value("fitted_constants", Json()));
  CHECK(refit.simulations() > ratio.simulations());
}

TEST_CASE("the screen's choice within a bound: never a proposal predicted slower, or to fail") {
  SimulatedScreen screen(gemm_screen("ratio"));
  auto proposals = tiled({{32, 32, 1}, {128, 128, 2}, {64, 64, 3}, {128, 64, 1}});
  proposals.push_back({"tiled", {{"tile_m", 32}, {"tile_k", 32}, {"pipeline_depth", 1}, {"engine", "any"}}});
  const auto predictions = screen.predict(proposals);
  REQUIRE_FALSE(predictions.back().simulable);  // a string parameter: no opinion on it
  for (std::size_t i = 0; i + 1 < proposals.size(); ++i) REQUIRE(predictions[i].valid);
  const auto ranked = SimulatedScreen::choose(predictions, proposals.size() - 1);
  // A bound between the second and the third prediction: the two best, then the unjudged one.
  const double bound = 0.5 * (predictions[ranked[1]].predicted_s + predictions[ranked[2]].predicted_s);
  CHECK(SimulatedScreen::choose_within(predictions, 4, bound) ==
        std::vector<std::size_t>{ranked[0], ranked[1], proposals.size() - 1});
  CHECK(SimulatedScreen::choose_within(predictions, 1, bound) == std::vector<std::size_t>{ranked[0]});
  // Below every prediction: only what the screen cannot judge.
  CHECK(SimulatedScreen::choose_within(predictions, 4, 0.5 * predictions[ranked[0]].predicted_s) ==
        std::vector<std::size_t>{proposals.size() - 1});
  proposals.pop_back();
  CHECK(SimulatedScreen::choose_within(screen.predict(proposals), 4, 0.5 * predictions[ranked[0]].predicted_s)
            .empty());
}

TEST_CASE("the margin follows what the screen predicted of device trials before they taught it") {
  SimulatedScreen screen(gemm_screen("ratio"));
  CHECK(std::isinf(screen.margin()));  // nothing measured: no prediction is trusted to be worse
  const auto measured = tiled({{128, 128, 2}, {64, 64, 2}, {32, 64, 1}});
  // The device is 1.5x the simulator: the first trial is off by log 1.5, the next ones not at all.
  screen.learn({{measured[0], 1.5 * simulated_on("trn2", measured[0])}});
  CHECK(screen.margin() == doctest::Approx(2 * std::log(1.5)));
  screen.learn({{measured[1], 1.5 * simulated_on("trn2", measured[1])},
                {measured[2], 1.5 * simulated_on("trn2", measured[2])}});
  CHECK(screen.margin() == doctest::Approx(2 * std::sqrt(std::pow(std::log(1.5), 2) / 3)));
  CHECK(screen.correction_json()["margin"].get<double>() == doctest::Approx(screen.margin()));
  // Only the last kMarginWindow trials count, and never less than kMinMargin.
  for (int i = 0; i < int(SimulatedScreen::kMarginWindow); ++i) {
    const Candidate c = tiled({{i % 2 ? 64 : 128, i % 3 ? 32 : 64, 1 + i % 4}})[0];
    screen.learn({{c, 1.5 * simulated_on("trn2", c)}});
  }
  CHECK(screen.margin() == doctest::Approx(SimulatedScreen::kMinMargin));
}

TEST_CASE("a refit fits the last kRefitWindow device trials, so its cost does not grow with the run") {
  SimulatedScreen refit(gemm_screen("refit"));
  std::vector<Candidate> trials;
  for (int m : {32, 64, 128})
    for (int k : {32, 64, 128})
      for (int depth : {1, 2, 3, 4}) trials.push_back(tiled({{m, k, depth}})[0]);
  REQUIRE(trials.size() > 2 * SimulatedScreen::kRefitWindow);
  long before = 0, last_fit_cost = 0;
  std::size_t fitted = 0;
  for (const auto& c : trials) {
    const int refits = refit.correction_json().value("refits", 0);
    refit.learn({{c, simulated_on(standin(), c)}});
    if (refit.correction_json().value("refits", 0) > refits) {
      last_fit_cost = refit.simulations() - before;
      fitted = refit.correction_json()["device_trials"].get<std::size_t>();
    }
    before = refit.simulations();
  }
  const std::string last_fit = refit.correction_json()["last_fit"].get<std::string>();
  CAPTURE(last_fit);
  REQUIRE(fitted > SimulatedScreen::kRefitWindow);
  CHECK(last_fit.find("the last " + std::to_string(SimulatedScreen::kRefitWindow) + " of " +
                      std::to_string(fitted)) != std::string::npos);
  // At most 8 iterations over 7 simulations a row (the six constants nudged, and the step), a few
  // steps tried, and the older trials simulated once more.
  CHECK(last_fit_cost <= long(70 * SimulatedScreen::kRefitWindow + fitted));
}
