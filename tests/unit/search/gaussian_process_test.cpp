#include "search/gaussian_process.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "core/rng.hpp"

using autotune::search::GaussianProcess;
using autotune::search::GpHyperparameters;

TEST_CASE("the GP's log marginal likelihood gradient matches finite differences") {
  autotune::Rng rng(7);
  const int n = 24;
  Eigen::MatrixXd x(n, 2);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    x(i, 0) = rng.uniform();
    x(i, 1) = rng.uniform();
    y[i] = 1.5 - 3.0 * x(i, 0) + 0.4 * std::sin(9.0 * x(i, 1));
  }
  y.array() -= y.mean();
  GaussianProcess gp(2);
  gp.set_data(x, y);
  GpHyperparameters h;
  h.log_lengthscales = Eigen::Vector2d(-0.7, 0.4);
  h.log_signal = 0.3;
  h.log_noise = -3.0;
  Eigen::VectorXd gradient;
  gp.penalised_lml(h, &gradient);
  REQUIRE(gradient.size() == 4);
  const auto moved = [&](int i, double by) {
    GpHyperparameters m = h;
    if (i < 2)
      m.log_lengthscales[i] += by;
    else if (i == 2)
      m.log_signal += by;
    else
      m.log_noise += by;
    return gp.penalised_lml(m, nullptr);
  };
  const double step = 1e-5;
  for (int i = 0; i < gradient.size(); ++i) {
    CAPTURE(i);
    const double numeric = (moved(i, step) - moved(i, -step)) / (2 * step);
    CHECK(gradient[i] == doctest::Approx(numeric).epsilon(1e-4));
  }
}
