#include "skills/targets/source_target.hpp"

#include <chrono>
#include <cmath>

#include "core/error.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"
#include "sim/target_constants.hpp"
#include "skills/targets/evaluation_measurement.hpp"

namespace autotune::skills {

struct SourceTarget::Impl {
  sim::TargetSpec target;
  std::string target_hash;  // sim::target_content_hash: a recalibrated file is another target
};

SourceTarget::SourceTarget(SourceTargetConfig config)
    : config_(std::move(config)), impl_(std::make_unique<Impl>()) {
  impl_->target = sim::load_target(config_.target);
  impl_->target_hash = sim::target_content_hash(impl_->target);
  kernel_ = kernels::external::compile_and_describe(config_.source.string(), config_.compile, config_.worker);
  init();
}

SourceTarget::SourceTarget(SourceTargetConfig config, kernels::external::SourceKernel kernel)
    : config_(std::move(config)), kernel_(std::move(kernel)), impl_(std::make_unique<Impl>()) {
  impl_->target = sim::load_target(config_.target);
  impl_->target_hash = sim::target_content_hash(impl_->target);
  init();
}

void SourceTarget::init() {
  if (!kernel_.ok) {
    const std::string name =
        kernel_.kernel_name.empty() ? config_.source.stem().string() : kernel_.kernel_name;
    family_.name = name;
    family_.description = "kernel source " + config_.source.filename().string() + " (unbuilt)";
    kernels::VariantSpec variant;
    variant.name = name;
    variant.description = family_.description;
    family_.variants = {variant};
    family_.baseline_variant = name;
    return;
  }
  const auto& d = kernel_.descriptor;
  family_.name = d.family.empty() ? d.name : d.family;
  family_.description = d.description;
  family_.shape_args = d.shape_args;
  family_.default_shape = d.default_shape;
  for (const auto& text : d.dtypes)
    if (auto dtype = sim::parse_dtype(text)) family_.dtypes.push_back(*dtype);
  kernels::VariantSpec variant;
  variant.name = d.name;
  variant.description =
      d.description.empty() ? "kernel source " + config_.source.filename().string() : d.description;
  variant.params = d.params;
  variant.constraints = d.constraints;
  family_.variants = {variant};
  family_.baseline_variant = d.name;
  for (const auto& arg : d.shape_args)
    if (config_.shape.count(arg) == 0) config_.shape[arg] = d.default_shape.at(arg);
  if (config_.dtype.empty() && !d.dtypes.empty()) config_.dtype = d.dtypes.front();
}

std::string SourceTarget::unusable_reason() const {
  if (kernel_.ok) return "";
  return "kernel source " + config_.source.filename().string() +
         (kernel_.compiled ? " cannot be loaded: " : ": ") + kernel_.error;
}

SourceTarget::~SourceTarget() = default;

std::string SourceTarget::description() const {
  return config_.target + " (simulated; kernel source " + config_.source.filename().string() + ")";
}

std::string SourceTarget::cache_identity() const {
  std::string shape;
  for (const auto& [k, v] : config_.shape) shape += k + "=" + std::to_string(v) + ",";
  return "source:" + config_.target + ":" + impl_->target_hash + ":" + kernel_.source_hash + ":" + shape +
         ":" + config_.dtype + ":" + std::string(sim::kSimulatorVersion) +
         ":tol=" + (config_.tolerance ? std::to_string(*config_.tolerance) : "family") +
         ":vseed=" + std::to_string(config_.verification_seed);
}

std::map<std::string, double> SourceTarget::constants() const { return impl_->target.constants(); }

Json SourceTarget::facts() const {
  return simulated_target_facts(impl_->target, sim::parse_dtype(config_.dtype).value_or(sim::Dtype::fp32));
}

Measurement measurement_from_worker(const kernels::external::WorkerOutcome& outcome) {
  // The worker's reply is the evaluation; a worker that crashed or timed out
  // has only the outcome's status and reason.
  Json evaluation = outcome.result.is_object() ? outcome.result : Json::object();
  evaluation["status"] = to_string(outcome.status);
  evaluation["error"] = outcome.error;
  return measurement_from_evaluation(evaluation, outcome.wall_s * 1000);
}

Measurement SourceTarget::measure(const Candidate& candidate, const MeasureOptions& options) {
  if (!kernel_.ok) {
    Measurement m;
    m.status = kernel_.timed_out ? Outcome::timeout : Outcome::failed;
    m.error = kernels::external::failure_report(kernel_);
    return m;
  }
  kernels::external::WorkerRequest request;
  request.so_path = kernel_.so_path;
  request.shape = config_.shape;
  request.dtype = config_.dtype;
  request.target = config_.target;
  request.seed = config_.verification_seed;
  request.tolerance = config_.tolerance;
  for (const auto& [name, value] : candidate.params.items()) {
    if (name == "_") continue;  // the placeholder of a kernel without parameters
    if (!value.is_number_integer()) {
      Measurement m;
      m.status = Outcome::invalid;
      m.error = "parameter '" + name + "' is not an integer";
      return m;
    }
    request.params[name] = value.get<std::int64_t>();
  }
  kernels::external::WorkerOptions worker = config_.worker;
  worker.timeout_s = std::min(worker.timeout_s, options.deadline_s);
  return measurement_from_worker(kernels::external::evaluate_in_worker(request, worker));
}

}  // namespace autotune::skills
