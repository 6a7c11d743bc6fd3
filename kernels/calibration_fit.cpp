#include "kernels/calibration_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "sim/target_constants.hpp"

namespace autotune::kernels {

namespace {

// One fitted constant in the fit's coordinates: u = log(value + shift).
struct Axis {
  const sim::FittedConstant* constant = nullptr;
  double shift = 0;
  double u_low = 0, u_high = 0;

  double to_u(double value) const { return std::log(value + shift); }
  double to_value(double u) const { return std::clamp(std::exp(u) - shift, constant->low, constant->high); }
};

class Objective {
 public:
  Objective(const std::vector<TracedMeasurement>& rows, const sim::TargetSpec& start, std::vector<Axis> axes,
            unsigned threads)
      : rows_(rows), start_(start), axes_(std::move(axes)), threads_(threads) {}

  sim::TargetSpec target_at(const Eigen::VectorXd& u) const {
    sim::TargetSpec t = start_;
    for (std::size_t i = 0; i < axes_.size(); ++i)
      axes_[i].constant->set(t, axes_[i].to_value(u[Eigen::Index(i)]));
    return t;
  }

  // Simulated ms of every row at each point, all points' rows in parallel.
  std::vector<std::vector<double>> simulate(const std::vector<Eigen::VectorXd>& points) {
    std::vector<sim::TargetSpec> targets;
    for (const auto& u : points) targets.push_back(target_at(u));
    std::vector<std::vector<double>> out(points.size(), std::vector<double>(rows_.size()));
    std::vector<std::string> errors(points.size() * rows_.size());
    parallel_for(
        points.size() * rows_.size(),
        [&](std::size_t k) {
          const std::size_t p = k / rows_.size(), r = k % rows_.size();
          const RowTiming timing = time_measurement(rows_[r], targets[p], false);
          if (timing.valid)
            out[p][r] = timing.simulated_ms;
          else
            errors[k] = timing.error;
        },
        threads_);
    simulations_ += static_cast<long>(points.size() * rows_.size());
    for (std::size_t k = 0; k < errors.size(); ++k)
      if (!errors[k].empty())
        throw UserError(rows_[k % rows_.size()].measurement.where() +
                        ": cannot be simulated while fitting: " + errors[k]);
    return out;
  }

  Eigen::VectorXd residuals(const std::vector<double>& simulated_ms) const {
    Eigen::VectorXd r(Eigen::Index(rows_.size()));
    for (std::size_t j = 0; j < rows_.size(); ++j)
      r[Eigen::Index(j)] = std::log(simulated_ms[j] / rows_[j].measurement.measured_ms);
    return r;
  }

  long simulations() const { return simulations_; }

 private:
  const std::vector<TracedMeasurement>& rows_;
  const sim::TargetSpec& start_;
  std::vector<Axis> axes_;
  unsigned threads_;
  long simulations_ = 0;
};

double rms(const Eigen::VectorXd& r) { return r.size() ? std::sqrt(r.squaredNorm() / double(r.size())) : 0; }

}  // namespace

FitResult fit_constants(const std::vector<TracedMeasurement>& rows, const sim::TargetSpec& start,
                        const FitOptions& options) {
  if (rows.empty()) throw UserError("no measurements to fit on");
  for (const auto& row : rows)
    if (!row.program) throw UserError(row.measurement.where() + ": " + row.error);

  std::vector<Axis> axes;
  std::vector<const sim::FittedConstant*> chosen;
  if (options.constants.empty()) {
    for (const auto& c : sim::fitted_constants())
      if (c.applies_to(start)) chosen.push_back(&c);
  } else {
    for (const auto& name : options.constants) {
      const sim::FittedConstant* c = &sim::fitted_constant(name);
      if (!c->applies_to(start))
        throw UserError("fitted constant '" + std::string(c->name) + "' does not apply to target '" + start.name +
                        "' (it has no " + std::string(c->key) + ")");
      if (std::find(chosen.begin(), chosen.end(), c) == chosen.end()) chosen.push_back(c);
    }
  }
  for (const auto* c : chosen) {
    Axis axis;
    axis.constant = c;
    axis.shift = c->low > 0 ? 0 : (c->high - c->low) * 0.01;
    axis.u_low = axis.to_u(c->low);
    axis.u_high = axis.to_u(c->high);
    axes.push_back(axis);
  }
  const Eigen::Index n = Eigen::Index(axes.size());
  Eigen::VectorXd u(n), u_low(n), u_high(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const Axis& a = axes[std::size_t(i)];
    u[i] = std::clamp(a.to_u(a.constant->get(start)), a.u_low, a.u_high);
    u_low[i] = a.u_low;
    u_high[i] = a.u_high;
  }

  // A weak prior keeps each constant at its start value where the rows barely
  // depend on it: moving a constant by a factor e costs what a 1% error on
  // one row does. Where rows depend on a constant it moves the fit by far
  // less than the rows' precision.
  constexpr double kPrior = 1e-4;
  const double prior_weight = std::sqrt(kPrior);
  const Eigen::VectorXd u_start = u;
  auto augmented = [&](const Eigen::VectorXd& rows_r, const Eigen::VectorXd& at) {
    Eigen::VectorXd out(rows_r.size() + n);
    out << rows_r, prior_weight * (at - u_start);
    return out;
  };

  Objective objective(rows, start, axes, options.threads);
  FitResult result;
  result.before_ms = objective.simulate({u})[0];
  Eigen::VectorXd r_rows = objective.residuals(result.before_ms);
  Eigen::VectorXd r = augmented(r_rows, u);
  double cost = r.squaredNorm();
  result.rms_log_before = rms(r_rows);
  std::vector<double> current_ms = result.before_ms;

  constexpr double kStep = 0.02;  // finite-difference step in u: a 2% nudge of value + shift
  std::vector<bool> sensitive(std::size_t(n), false);
  double lambda = 1e-3;
  result.stopped = "the iteration limit (" + std::to_string(options.max_iterations) + ")";
  for (int iteration = 0; iteration < options.max_iterations; ++iteration) {
    if (r_rows.squaredNorm() < 1e-14) {
      result.stopped = "the measurements are matched";
      break;
    }
    // The Jacobian of the residuals, a nudge per constant (inwards at a bound).
    std::vector<Eigen::VectorXd> points;
    std::vector<double> steps;
    for (Eigen::Index i = 0; i < n; ++i) {
      Eigen::VectorXd nudged = u;
      const double step = u[i] + kStep <= u_high[i] ? kStep : -kStep;
      nudged[i] += step;
      points.push_back(nudged);
      steps.push_back(step);
    }
    const auto nudged_ms = objective.simulate(points);
    Eigen::MatrixXd jacobian = Eigen::MatrixXd::Zero(r.size(), n);
    for (Eigen::Index i = 0; i < n; ++i) {
      jacobian.col(i).head(r_rows.size()) =
          (objective.residuals(nudged_ms[std::size_t(i)]) - r_rows) / steps[std::size_t(i)];
      if (jacobian.col(i).head(r_rows.size()).norm() > 1e-9) sensitive[std::size_t(i)] = true;
      jacobian(r_rows.size() + i, i) = prior_weight;
    }
    const Eigen::VectorXd gradient = jacobian.transpose() * r;
    // Constants the step may move: all but those a bound stops in the descent direction.
    std::vector<Eigen::Index> free;
    for (Eigen::Index i = 0; i < n; ++i) {
      const bool held_low = u[i] <= u_low[i] + 1e-12 && gradient[i] > 0;
      const bool held_high = u[i] >= u_high[i] - 1e-12 && gradient[i] < 0;
      if (!held_low && !held_high) free.push_back(i);
    }
    if (free.empty()) {
      result.stopped = "every constant is at a bound";
      break;
    }
    const Eigen::Index m = Eigen::Index(free.size());
    Eigen::MatrixXd jf(r.size(), m);
    for (Eigen::Index k = 0; k < m; ++k) jf.col(k) = jacobian.col(free[std::size_t(k)]);
    const Eigen::MatrixXd normal = jf.transpose() * jf;
    const Eigen::VectorXd g = jf.transpose() * r;

    bool accepted = false;
    double improvement = 0;
    for (int attempt = 0; attempt < 12 && !accepted; ++attempt) {
      Eigen::MatrixXd damped = normal;
      for (Eigen::Index k = 0; k < m; ++k) damped(k, k) += lambda * normal(k, k);
      const Eigen::VectorXd delta = damped.ldlt().solve(-g);
      Eigen::VectorXd trial = u;
      for (Eigen::Index k = 0; k < m; ++k) {
        const Eigen::Index i = free[std::size_t(k)];
        trial[i] = std::clamp(u[i] + delta[k], u_low[i], u_high[i]);
      }
      if ((trial - u).norm() < 1e-10) break;
      const auto trial_ms = objective.simulate({trial})[0];
      const Eigen::VectorXd trial_rows = objective.residuals(trial_ms);
      const Eigen::VectorXd trial_r = augmented(trial_rows, trial);
      const double trial_cost = trial_r.squaredNorm();
      if (trial_cost < cost) {
        improvement = (cost - trial_cost) / cost;
        u = trial;
        r = trial_r;
        r_rows = trial_rows;
        cost = trial_cost;
        current_ms = trial_ms;
        lambda = std::max(lambda / 3, 1e-9);
        accepted = true;
      } else {
        lambda *= 5;
      }
    }
    result.iterations = iteration + 1;
    if (options.progress) {
      char line[160];
      std::snprintf(line, sizeof line, "iteration %d: rms log ratio %.4f (%ld simulations)", iteration + 1,
                    rms(r_rows), objective.simulations());
      options.progress(line);
    }
    if (!accepted) {
      result.stopped = "no step lowers the cost further";
      break;
    }
    if (improvement < options.min_improvement) {
      result.stopped = "the improvement is tiny";
      break;
    }
  }

  result.target = objective.target_at(u);
  result.after_ms = current_ms;
  result.rms_log_after = rms(r_rows);
  result.simulations = objective.simulations();
  for (Eigen::Index i = 0; i < n; ++i) {
    const Axis& a = axes[std::size_t(i)];
    FittedValue v;
    v.name = std::string(a.constant->name);
    v.key = std::string(a.constant->key);
    v.unit = std::string(a.constant->unit);
    v.before = a.constant->get(start);
    v.after = a.constant->get(result.target);
    v.low = a.constant->low;
    v.high = a.constant->high;
    v.sensitive = sensitive[std::size_t(i)];
    v.at_bound = v.sensitive && (u[i] <= u_low[i] + 1e-9 || u[i] >= u_high[i] - 1e-9);
    result.values.push_back(v);
  }
  return result;
}

}  // namespace autotune::kernels
