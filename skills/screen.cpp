#include "skills/screen.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.hpp"
#include "kernels/calibration.hpp"
#include "kernels/calibration_fit.hpp"
#include "sim/target_constants.hpp"

namespace autotune::skills {

namespace {

// A refit waits for this many device trials (fewer fit the constants to
// noise), then for the trials to grow by kRefitGrowth since the last fit; it
// fits the last SimulatedScreen::kRefitWindow of them.
constexpr std::size_t kFirstRefit = 3;
constexpr double kRefitGrowth = 1.5;
// Each fit starts from the last, so a few iterations suffice.
constexpr int kRefitIterations = 8;

}  // namespace

struct SimulatedScreen::Impl {
  sim::TargetSpec base;     // the screen's target as named
  sim::TargetSpec current;  // as corrected (refitted) so far
  std::string current_hash;
  // Device trials: traced once (the fitted constants do not change a
  // program), with their simulated ms on `current`.
  std::vector<kernels::TracedMeasurement> rows;
  std::vector<double> row_simulated_ms;
  std::size_t rows_at_last_fit = 0;
  // log(measured / predicted) of each device trial, as predicted before it
  // was learnt: the screen's out-of-sample error (margin()).
  std::vector<double> out_of_sample;
  int refits = 0;
  std::string last_fit;  // how the last fit went, for the log
  // Simulated seconds (or the reason it is invalid) per candidate key on `current`.
  std::map<std::string, ScreenPrediction> cache;
  std::map<std::string, std::pair<double, int>> ratios;  // variant -> (mean log ratio, trials)
  double overall_ratio = 0;
};

SimulatedScreen::SimulatedScreen(ScreenConfig config)
    : config_(std::move(config)), impl_(std::make_unique<Impl>()) {
  impl_->base = sim::load_target(config_.target);
  impl_->current = impl_->base;
  impl_->current_hash = sim::target_content_hash(impl_->current);
  if (config_.correction != "refit" && config_.correction != "ratio" && config_.correction != "none")
    throw UserError("screen: unknown correction '" + config_.correction + "'; accepted: refit, ratio, none");
  const auto& families = kernels::family_registry();
  if (!families.contains(config_.family))
    throw UserError("screen: unknown kernel '" + config_.family + "'; accepted: " + families.joined_names());
  if (!config_.variant.empty()) (void)families.get(config_.family).variant(config_.variant);
}

SimulatedScreen::~SimulatedScreen() = default;

namespace {

// The measurement row that makes `candidate` a kernel of the calibration
// machinery; the reason when its parameters are not the simulator's.
std::optional<kernels::Measurement> row_of(const ScreenConfig& config, const sim::TargetSpec& target,
                                           const Candidate& candidate, std::string& error) {
  kernels::Measurement row;
  row.file = "screen";
  row.family = config.family;
  row.variant = config.variant.empty() ? candidate.variant : config.variant;
  row.shape = config.shape;
  row.dtype = config.dtype;
  row.target = target.name;
  for (const auto& [name, value] : candidate.params.items()) {
    if (name == "_") continue;  // the placeholder of a variant without parameters
    if (!value.is_number_integer()) {
      error = "parameter '" + name + "' is " + value.dump() + ", not an integer the simulator takes";
      return std::nullopt;
    }
    row.params[name] = value.get<std::int64_t>();
  }
  return row;
}

}  // namespace

std::vector<ScreenPrediction> SimulatedScreen::predict(const std::vector<Candidate>& candidates) {
  std::vector<ScreenPrediction> out(candidates.size());
  std::vector<std::size_t> missing;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto it = impl_->cache.find(candidates[i].key());
    if (it != impl_->cache.end())
      out[i] = it->second;
    else
      missing.push_back(i);
  }
  kernels::parallel_for(
      missing.size(),
      [&](std::size_t k) {
        ScreenPrediction& p = out[missing[k]];
        std::string error;
        const auto row = row_of(config_, impl_->current, candidates[missing[k]], error);
        if (!row) {
          p.error = error;
          p.simulable = false;
          return;
        }
        const auto traced = kernels::trace_measurement(*row, impl_->current);
        const auto timing = kernels::time_measurement(traced, impl_->current, false);
        if (traced.program) ++simulations_;
        p.valid = timing.valid;
        p.error = timing.error;
        p.simulated_s = timing.simulated_ms * 1e-3;
      },
      config_.threads);
  for (std::size_t i : missing) impl_->cache[candidates[i].key()] = out[i];
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    auto& p = out[i];
    p.log_ratio = p.valid ? log_ratio(config_.variant.empty() ? candidates[i].variant : config_.variant) : 0;
    p.predicted_s = p.simulated_s * std::exp(p.log_ratio);
  }
  return out;
}

std::vector<std::size_t> SimulatedScreen::choose(const std::vector<ScreenPrediction>& predictions,
                                                 std::size_t keep) {
  std::vector<std::size_t> order(predictions.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& pa = predictions[a];
    const auto& pb = predictions[b];
    if (pa.valid != pb.valid) return pa.valid;
    return pa.valid && pa.predicted_s < pb.predicted_s;
  });
  order.resize(std::min(keep, order.size()));
  return order;
}

std::vector<std::size_t> SimulatedScreen::choose_within(const std::vector<ScreenPrediction>& predictions,
                                                        std::size_t keep, double bound_s) {
  std::vector<std::size_t> out;
  for (std::size_t i : choose(predictions, predictions.size()))
    if (out.size() < keep && predictions[i].valid && predictions[i].predicted_s <= bound_s) out.push_back(i);
  for (std::size_t i = 0; i < predictions.size() && out.size() < keep; ++i)
    if (!predictions[i].simulable) out.push_back(i);
  return out;
}

double SimulatedScreen::margin() const {
  const auto& errors = impl_->out_of_sample;
  if (errors.empty()) return std::numeric_limits<double>::infinity();
  const std::size_t from = errors.size() > kMarginWindow ? errors.size() - kMarginWindow : 0;
  double squares = 0;
  for (std::size_t i = from; i < errors.size(); ++i) squares += errors[i] * errors[i];
  return std::max(kMinMargin, 2 * std::sqrt(squares / double(errors.size() - from)));
}

double SimulatedScreen::log_ratio(const std::string& variant) const {
  if (config_.correction == "none") return 0;
  const auto it = impl_->ratios.find(variant);
  return it != impl_->ratios.end() ? it->second.first : impl_->overall_ratio;
}

double SimulatedScreen::overall_log_ratio() const {
  return config_.correction == "none" ? 0 : impl_->overall_ratio;
}

void SimulatedScreen::update_ratios() {
  impl_->ratios.clear();
  impl_->overall_ratio = 0;
  if (impl_->rows.empty()) return;
  std::map<std::string, std::pair<double, int>> sums;
  double total = 0;
  for (std::size_t i = 0; i < impl_->rows.size(); ++i) {
    const auto& m = impl_->rows[i].measurement;
    const double r = std::log(m.measured_ms / impl_->row_simulated_ms[i]);
    auto& s = sums[config_.variant.empty() ? m.variant : config_.variant];
    s.first += r;
    ++s.second;
    total += r;
  }
  for (const auto& [variant, s] : sums) impl_->ratios[variant] = {s.first / s.second, s.second};
  impl_->overall_ratio = total / double(impl_->rows.size());
}

std::vector<ScreenFeedback> SimulatedScreen::learn(
    const std::vector<std::pair<Candidate, double>>& measured) {
  std::vector<Candidate> candidates;
  for (const auto& [candidate, seconds] : measured) candidates.push_back(candidate);
  // What the screen predicted, before these measurements teach it.
  const auto predictions = predict(candidates);
  std::vector<ScreenFeedback> out;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    ScreenFeedback f;
    f.candidate = measured[i].first;
    f.measured_s = measured[i].second;
    f.valid = predictions[i].valid;
    f.error = predictions[i].error;
    f.simulated_s = predictions[i].simulated_s;
    f.predicted_s = predictions[i].predicted_s;
    out.push_back(f);
    if (!f.valid || !(f.measured_s > 0) || !(f.simulated_s > 0)) continue;
    impl_->out_of_sample.push_back(std::log(f.measured_s / f.predicted_s));
    std::string error;
    auto row = row_of(config_, impl_->current, f.candidate, error);
    row->measured_ms = f.measured_s * 1e3;
    impl_->rows.push_back(kernels::trace_measurement(*row, impl_->base));
    impl_->row_simulated_ms.push_back(f.simulated_s * 1e3);
  }
  if (config_.correction == "refit" && impl_->rows.size() >= kFirstRefit &&
      double(impl_->rows.size()) >= kRefitGrowth * double(impl_->rows_at_last_fit)) {
    kernels::FitOptions options;
    options.max_iterations = kRefitIterations;
    options.min_improvement = 1e-3;
    options.threads = config_.threads;
    try {
      // The most recent trials: where the search is now, at a bounded cost.
      const std::size_t last = config_.refit_window == 0 ? impl_->rows.size() : config_.refit_window;
      const std::size_t from = impl_->rows.size() - std::min(impl_->rows.size(), last);
      const std::vector<kernels::TracedMeasurement> window(impl_->rows.begin() + std::ptrdiff_t(from),
                                                           impl_->rows.end());
      const auto fit = kernels::fit_constants(window, impl_->current, options);
      simulations_ += fit.simulations;
      impl_->current = fit.target;
      impl_->current_hash = sim::target_content_hash(impl_->current);
      std::copy(fit.after_ms.begin(), fit.after_ms.end(),
                impl_->row_simulated_ms.begin() + std::ptrdiff_t(from));
      // The older trials, simulated once more on the refitted target for the ratios.
      kernels::parallel_for(
          from,
          [&](std::size_t i) {
            const auto timing = kernels::time_measurement(impl_->rows[i], impl_->current, false);
            if (timing.valid) impl_->row_simulated_ms[i] = timing.simulated_ms;
          },
          config_.threads);
      simulations_ += long(from);
      impl_->cache.clear();
      ++impl_->refits;
      char text[200];
      std::snprintf(
          text, sizeof text, "refitted on the last %zu of %zu device trials: rms log error %.4f -> %.4f (%s)",
          window.size(), impl_->rows.size(), fit.rms_log_before, fit.rms_log_after, fit.stopped.c_str());
      impl_->last_fit = text;
    } catch (const UserError& e) {
      impl_->last_fit = std::string("refit failed, the constants kept: ") + e.what();
    }
    impl_->rows_at_last_fit = impl_->rows.size();
  }
  update_ratios();
  return out;
}

void SimulatedScreen::write_current_target(const std::filesystem::path& out) const {
  sim::write_fitted_target(impl_->base.source_file, sim::fitted_values(impl_->current), out,
                           "the screen's target " + config_.target + " as corrected by " +
                               std::to_string(impl_->rows.size()) + " device trials (" + config_.correction +
                               ")");
}

Json SimulatedScreen::correction_json() const {
  Json out = {{"correction", config_.correction},
              {"target", config_.target},
              {"target_hash", impl_->current_hash},
              {"device_trials", impl_->rows.size()},
              {"simulations", simulations_.load()}};
  if (const double m = margin(); std::isfinite(m)) out["margin"] = m;
  if (config_.correction == "none") return out;
  Json ratios = Json::object();
  for (const auto& [variant, r] : impl_->ratios)
    ratios[variant] = {{"log_ratio", r.first}, {"trials", r.second}};
  out["log_ratio"] = ratios;
  out["log_ratio_overall"] = impl_->overall_ratio;
  // How well the corrected screen explains the device trials so far.
  if (!impl_->rows.empty()) {
    double squares = 0;
    for (std::size_t i = 0; i < impl_->rows.size(); ++i) {
      const auto& m = impl_->rows[i].measurement;
      const double predicted = impl_->row_simulated_ms[i] *
                               std::exp(log_ratio(config_.variant.empty() ? m.variant : config_.variant));
      squares += std::pow(std::log(m.measured_ms / predicted), 2);
    }
    out["rms_log_error"] = std::sqrt(squares / double(impl_->rows.size()));
  }
  if (config_.correction == "refit") {
    out["refits"] = impl_->refits;
    out["refit_window"] = config_.refit_window;
    out["fitted_constants"] = sim::fitted_values(impl_->current);
    if (!impl_->last_fit.empty()) out["last_fit"] = impl_->last_fit;
  }
  return out;
}

}  // namespace autotune::skills
