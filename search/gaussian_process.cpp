#include "search/gaussian_process.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace autotune::search {

namespace {

const double kSqrt5 = std::sqrt(5.0);
constexpr double kLogTwoPi = 1.8378770664093453;

// Bounds in log space: inputs live in [0,1]; targets are standardised.
constexpr double kMinLogLength = -4.6, kMaxLogLength = 2.3;  // 0.01 .. 10
constexpr double kMinLogSignal = -3.0, kMaxLogSignal = 3.0;  // 0.05 .. 20
constexpr double kMinLogNoise = -13.8, kMaxLogNoise = 0.0;   // 1e-6 .. 1
// Weak priors (mean, standard deviation) in log space.
constexpr double kPriorLogLength = -1.0, kPriorLogLengthSd = 1.5;
constexpr double kPriorLogSignal = 0.0, kPriorLogSignalSd = 1.5;
constexpr double kPriorLogNoise = -4.6, kPriorLogNoiseSd = 2.5;

// Squared scaled distances between rows of a and b (already divided by the
// length scales).
Eigen::MatrixXd squared_distances(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  Eigen::MatrixXd d = -2.0 * a * b.transpose();
  d.colwise() += a.rowwise().squaredNorm();
  d.rowwise() += b.rowwise().squaredNorm().transpose();
  return d.cwiseMax(0.0);
}

Eigen::MatrixXd matern52(const Eigen::MatrixXd& squared) {
  return squared.unaryExpr([](double s) {
    const double r = kSqrt5 * std::sqrt(s);
    return (1.0 + r + r * r / 3.0) * std::exp(-r);
  });
}

bool cholesky(const Eigen::MatrixXd& k, Eigen::MatrixXd& lower) {
  Eigen::LLT<Eigen::MatrixXd> llt(k);
  if (llt.info() != Eigen::Success) return false;
  lower = llt.matrixL();
  return true;
}

}  // namespace

GaussianProcess::GaussianProcess(int dimension) : dimension_(dimension) { hyper_ = defaults(); }

GpHyperparameters GaussianProcess::defaults() const {
  GpHyperparameters h;
  h.log_lengthscales = Eigen::VectorXd::Constant(dimension_, std::log(0.3));
  h.log_signal = 0.0;
  h.log_noise = std::log(1e-2);
  return h;
}

void GaussianProcess::set_data(Eigen::MatrixXd inputs, Eigen::VectorXd targets) {
  AUTOTUNE_CHECK(inputs.rows() == targets.size() && inputs.cols() == dimension_,
                 "GP data of the wrong shape");
  inputs_ = std::move(inputs);
  targets_ = std::move(targets);
}

double GaussianProcess::penalised_lml(const GpHyperparameters& h, Eigen::VectorXd* gradient) const {
  const Eigen::Index n = inputs_.rows();
  const Eigen::ArrayXd inverse_length = (-h.log_lengthscales.array()).exp();
  const Eigen::MatrixXd scaled = inputs_ * inverse_length.matrix().asDiagonal();
  const Eigen::MatrixXd squared = squared_distances(scaled, scaled);
  const double signal = std::exp(h.log_signal), noise = std::exp(h.log_noise);
  const Eigen::MatrixXd k_signal = signal * matern52(squared);
  Eigen::MatrixXd k = k_signal;
  k.diagonal().array() += noise + 1e-8;
  Eigen::LLT<Eigen::MatrixXd> llt(k);
  if (llt.info() != Eigen::Success) return -std::numeric_limits<double>::infinity();
  const Eigen::VectorXd alpha = llt.solve(targets_);
  const Eigen::MatrixXd lower = llt.matrixL();
  double value = -0.5 * targets_.dot(alpha) - lower.diagonal().array().log().sum() - 0.5 * n * kLogTwoPi;
  const auto prior = [](double x, double mean, double sd) {
    return -0.5 * (x - mean) * (x - mean) / (sd * sd);
  };
  for (Eigen::Index d = 0; d < h.log_lengthscales.size(); ++d)
    value += prior(h.log_lengthscales[d], kPriorLogLength, kPriorLogLengthSd);
  value += prior(h.log_signal, kPriorLogSignal, kPriorLogSignalSd) +
           prior(h.log_noise, kPriorLogNoise, kPriorLogNoiseSd);
  if (gradient == nullptr) return value;

  // d LML / d theta = 0.5 * sum(W .* dK/dtheta), W = alpha alpha^T - K^-1.
  Eigen::MatrixXd w = alpha * alpha.transpose() - llt.solve(Eigen::MatrixXd::Identity(n, n));
  gradient->resize(dimension_ + 2);
  // dK/dlog l_d = signal * 5/3 (1 + r) exp(-r) * (dx_d / l_d)^2 with r = sqrt(5) * distance.
  const Eigen::MatrixXd g = squared.unaryExpr([](double s) {
    const double r = kSqrt5 * std::sqrt(s);
    return 5.0 / 3.0 * (1.0 + r) * std::exp(-r);
  });
  const Eigen::MatrixXd m = (w.array() * g.array()).matrix() * signal;
  const Eigen::VectorXd row_sums = m.rowwise().sum();
  const Eigen::MatrixXd ma = m * scaled;
  for (int d = 0; d < dimension_; ++d) {
    // sum_ij M_ij (a_i - a_j)^2 = 2 sum_i a_i^2 rowsum_i - 2 a^T M a
    const auto a = scaled.col(d);
    const double term = 2.0 * a.array().square().matrix().dot(row_sums) - 2.0 * a.dot(ma.col(d));
    (*gradient)[d] =
        0.5 * term - (h.log_lengthscales[d] - kPriorLogLength) / (kPriorLogLengthSd * kPriorLogLengthSd);
  }
  (*gradient)[dimension_] = 0.5 * (w.array() * k_signal.array()).sum() -
                            (h.log_signal - kPriorLogSignal) / (kPriorLogSignalSd * kPriorLogSignalSd);
  (*gradient)[dimension_ + 1] =
      0.5 * noise * w.trace() - (h.log_noise - kPriorLogNoise) / (kPriorLogNoiseSd * kPriorLogNoiseSd);
  return value;
}

GpHyperparameters GaussianProcess::rprop(GpHyperparameters h, int iterations, double& best_value) const {
  const int p = dimension_ + 2;
  Eigen::VectorXd x(p), lower(p), upper(p);
  x << h.log_lengthscales, h.log_signal, h.log_noise;
  lower << Eigen::VectorXd::Constant(dimension_, kMinLogLength), kMinLogSignal, kMinLogNoise;
  upper << Eigen::VectorXd::Constant(dimension_, kMaxLogLength), kMaxLogSignal, kMaxLogNoise;
  const auto unpack = [&](const Eigen::VectorXd& v) {
    GpHyperparameters out;
    out.log_lengthscales = v.head(dimension_);
    out.log_signal = v[dimension_];
    out.log_noise = v[dimension_ + 1];
    return out;
  };
  Eigen::VectorXd step = Eigen::VectorXd::Constant(p, 0.2), previous = Eigen::VectorXd::Zero(p), gradient;
  GpHyperparameters best = h;
  best_value = -std::numeric_limits<double>::infinity();
  for (int it = 0; it < iterations; ++it) {
    const double value = penalised_lml(unpack(x), &gradient);
    if (!std::isfinite(value)) {
      // Not positive definite: more noise is the way back.
      x[dimension_ + 1] = std::min(kMaxLogNoise, x[dimension_ + 1] + 1.0);
      continue;
    }
    if (value > best_value) {
      best_value = value;
      best = unpack(x);
    }
    for (int i = 0; i < p; ++i) {
      const double product = gradient[i] * previous[i];
      if (product > 0)
        step[i] = std::min(step[i] * 1.2, 1.0);
      else if (product < 0) {
        step[i] = std::max(step[i] * 0.5, 1e-4);
        gradient[i] = 0;  // iRprop-: skip the step after a sign change
      }
      if (gradient[i] > 0)
        x[i] += step[i];
      else if (gradient[i] < 0)
        x[i] -= step[i];
      x[i] = std::clamp(x[i], lower[i], upper[i]);
    }
    previous = gradient;
  }
  const double final_value = penalised_lml(unpack(x), nullptr);
  if (final_value > best_value) {
    best_value = final_value;
    best = unpack(x);
  }
  return best;
}

void GaussianProcess::fit(int iterations, bool also_from_default) {
  double value = 0;
  GpHyperparameters best = rprop(hyper_, iterations, value);
  if (also_from_default) {
    double other = 0;
    GpHyperparameters from_default = rprop(defaults(), iterations, other);
    if (other > value) {
      best = from_default;
      value = other;
    }
  }
  if (std::isfinite(value)) hyper_ = best;
  objective_ = value;
  factorize();
}

void GaussianProcess::factorize() {
  const Eigen::Index n = inputs_.rows();
  const Eigen::ArrayXd inverse_length = (-hyper_.log_lengthscales.array()).exp();
  const Eigen::MatrixXd scaled = inputs_ * inverse_length.matrix().asDiagonal();
  Eigen::MatrixXd k = std::exp(hyper_.log_signal) * matern52(squared_distances(scaled, scaled));
  double jitter = std::exp(hyper_.log_noise) + 1e-8;
  Eigen::MatrixXd noisy;
  for (int attempt = 0;; ++attempt) {
    noisy = k;
    noisy.diagonal().array() += jitter;
    if (cholesky(noisy, factor_lower_)) break;
    AUTOTUNE_CHECK(attempt < 20, "GP covariance is not positive definite even with large jitter");
    jitter *= 10;
  }
  alpha_ = factor_lower_.triangularView<Eigen::Lower>().solve(targets_);
  factor_lower_.triangularView<Eigen::Lower>().transpose().solveInPlace(alpha_);
  (void)n;
}

Eigen::MatrixXd GaussianProcess::correlation(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) const {
  const Eigen::ArrayXd inverse_length = (-hyper_.log_lengthscales.array()).exp();
  return matern52(
      squared_distances(a * inverse_length.matrix().asDiagonal(), b * inverse_length.matrix().asDiagonal()));
}

void GaussianProcess::predict(const Eigen::MatrixXd& points, Eigen::VectorXd& mean,
                              Eigen::VectorXd& variance) const {
  const double signal = std::exp(hyper_.log_signal);
  const Eigen::MatrixXd cross = signal * correlation(points, inputs_);  // m x n
  mean = cross * alpha_;
  // var = k** - |L^-1 k*|^2, one triangular solve for all points.
  const Eigen::MatrixXd projected = factor_lower_.triangularView<Eigen::Lower>().solve(cross.transpose());
  variance = (signal - projected.colwise().squaredNorm().array()).matrix().transpose().cwiseMax(1e-12);
}

}  // namespace autotune::search
