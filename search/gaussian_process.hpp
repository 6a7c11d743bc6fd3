#pragma once
// A Gaussian-process regressor for surrogate models: zero mean (callers
// standardise the targets), Matérn 5/2 kernel with one length scale per input
// dimension (ARD), signal variance and Gaussian noise variance.
//
// Hyperparameters are fitted by maximising the log marginal likelihood plus
// weak log-normal priors (which keep length scales away from degenerate
// values when data are few), with Rprop on the analytic gradient in log
// space, within fixed bounds. Each fit continues from the current values, so
// refitting after a few more observations is cheap.
#include <Eigen/Cholesky>
#include <Eigen/Core>

namespace autotune::search {

struct GpHyperparameters {
  Eigen::VectorXd log_lengthscales;
  double log_signal = 0.0;            // log variance
  double log_noise = std::log(1e-2);  // log variance
};

class GaussianProcess {
 public:
  explicit GaussianProcess(int dimension);

  // Rows of `inputs` are points; `targets` should be roughly standardised.
  void set_data(Eigen::MatrixXd inputs, Eigen::VectorXd targets);
  // Maximises the penalised marginal likelihood from the current
  // hyperparameters (and, when `also_from_default`, from the defaults too,
  // keeping the better); then factorises.
  void fit(int iterations, bool also_from_default);
  // Factorises with the current hyperparameters (after set_data).
  void factorize();

  // Posterior mean and variance (of the latent function) at each row.
  void predict(const Eigen::MatrixXd& points, Eigen::VectorXd& mean, Eigen::VectorXd& variance) const;
  // Kernel correlation (signal variance 1) between rows of a and b.
  Eigen::MatrixXd correlation(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) const;

  const GpHyperparameters& hyperparameters() const { return hyper_; }
  void set_hyperparameters(const GpHyperparameters& h) { hyper_ = h; }
  int data_size() const { return static_cast<int>(targets_.size()); }
  double objective() const { return objective_; }  // penalised log marginal likelihood
  // The penalised log marginal likelihood of the data at `h`, and its gradient
  // in log space (length scales..., signal, noise).
  double penalised_lml(const GpHyperparameters& h, Eigen::VectorXd* gradient) const;

 private:
  GpHyperparameters defaults() const;
  GpHyperparameters rprop(GpHyperparameters start, int iterations, double& best_value) const;

  int dimension_;
  Eigen::MatrixXd inputs_;
  Eigen::VectorXd targets_;
  GpHyperparameters hyper_;
  Eigen::MatrixXd factor_lower_;  // L with K = L L^T
  Eigen::VectorXd alpha_;         // K^-1 y
  double objective_ = 0;
};

}  // namespace autotune::search
