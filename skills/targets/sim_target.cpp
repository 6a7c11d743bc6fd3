#include "skills/targets/sim_target.hpp"

#include <chrono>
#include <cmath>
#include <future>
#include <map>
#include <mutex>
#include <optional>

#include "core/error.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/external/evaluation_report.hpp"
#include "sim/simulator.hpp"
#include "sim/target_constants.hpp"
#include "skills/targets/evaluation_measurement.hpp"

namespace autotune::skills {

struct SimTarget::Impl {
  const kernels::FamilySpec* family = nullptr;
  sim::TargetSpec target;
  std::string target_hash;  // sim::target_content_hash: a recalibrated file is another target
  sim::Dtype dtype = sim::Dtype::fp32;
  double roofline_s = 0;
  double flops = 0;
  double compulsory_bytes = 0;
  // Candidates whose traced programs are identical (a parameter that changes
  // nothing at this shape) are measured once: by content hash, the first
  // candidate's key and its measurement, shared with later ones, which wait
  // for it when it is still running.
  struct Measured {
    std::string first;
    std::shared_future<Measurement> measurement;
  };
  std::mutex mutex;
  std::map<std::uint64_t, Measured> by_program;
  // The first program of each layout-free hash (Program::layout_free_hash):
  // a later program that differs from it only in where and how large its
  // buffers are is measured once too, when their dependency graphs agree.
  // The earlier program is traced again for the comparison rather than kept.
  struct FirstOfLayout {
    std::string key;
    std::string variant;
    kernels::ParamValues params;
    std::shared_future<Measurement> measurement;
  };
  std::map<std::uint64_t, FirstOfLayout> by_layout_free;

  std::optional<Measurement> same_schedule(const sim::Program& traced, const FirstOfLayout& first,
                                           const kernels::Shape& shape) const;
};

// The first program's measurement when `traced` runs the same instructions
// on buffers laid out differently and the dependencies derived from the two
// layouts agree (the same schedule, the same outputs); nothing otherwise, and
// nothing when the comparison itself fails (the candidate is then measured).
std::optional<Measurement> SimTarget::Impl::same_schedule(const sim::Program& traced,
                                                          const FirstOfLayout& first,
                                                          const kernels::Shape& shape) const {
  try {
    const auto& first_variant = family->variant(first.variant);
    const sim::Program first_program =
        kernels::trace_program(*family, first_variant, shape, dtype, first.params, target);
    const auto mine = sim::dependency_signature(traced, target);
    if (mine.hash != sim::dependency_signature(first_program, target).hash) return std::nullopt;
    Measurement same = first.measurement.get();
    same.duration_ms = 0;
    if (!same.verification.is_object()) same.verification = Json::object();
    same.verification["same_schedule_as"] = first.key;
    if (same.profile.is_object()) {  // the high-water marks of this program's own allocation
      same.profile["sbuf_peak_bytes_per_partition"] = mine.sbuf_peak_bytes_per_partition;
      same.profile["psum_peak_banks"] = mine.psum_peak_banks;
    }
    return same;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

SimTarget::SimTarget(SimTargetConfig config) : config_(std::move(config)), impl_(std::make_unique<Impl>()) {
  impl_->family = &kernels::family_registry().get(config_.family);
  impl_->target = sim::load_target(config_.target);
  impl_->target_hash = sim::target_content_hash(impl_->target);
  const auto dtype = sim::parse_dtype(config_.dtype);
  if (!dtype) throw UserError("unknown dtype '" + config_.dtype + "'");
  impl_->dtype = *dtype;
  impl_->roofline_s = kernels::roofline_bound_s(*impl_->family, config_.shape, impl_->dtype, impl_->target);
  impl_->flops = impl_->family->flops ? impl_->family->flops(config_.shape) : 0;
  impl_->compulsory_bytes =
      impl_->family->hbm_bytes ? impl_->family->hbm_bytes(config_.shape, impl_->dtype) : 0;
}

SimTarget::~SimTarget() = default;

std::string SimTarget::description() const { return config_.target + " (simulated)"; }

std::string SimTarget::cache_identity() const {
  std::string shape;
  for (const auto& [k, v] : config_.shape) shape += k + "=" + std::to_string(v) + ",";
  return "sim:" + config_.target + ":" + impl_->target_hash + ":" + config_.family + ":" + shape + ":" +
         config_.dtype + ":" + std::string(sim::kSimulatorVersion) +
         ":tol=" + (config_.tolerance ? std::to_string(*config_.tolerance) : "family") +
         ":vseed=" + std::to_string(config_.verification_seed);
}

std::map<std::string, double> SimTarget::constants() const { return impl_->target.constants(); }

Json SimTarget::facts() const {
  Json facts = simulated_target_facts(impl_->target, impl_->dtype);
  facts["roofline_bound_s"] = impl_->roofline_s;
  return facts;
}

Measurement SimTarget::measure(const Candidate& candidate, const MeasureOptions&) {
  Measurement m;
  const auto start = std::chrono::steady_clock::now();
  kernels::ParamValues params;
  for (const auto& [name, value] : candidate.params.items()) {
    if (name == "_") continue;  // the placeholder of a variant without parameters
    if (!value.is_number_integer()) {
      m.status = Outcome::invalid;
      m.error = "parameter '" + name + "' is not an integer";
      return m;
    }
    params[name] = value.get<std::int64_t>();
  }
  kernels::Evaluation evaluation;
  std::optional<std::promise<Measurement>> publish;  // set when this call measures a new program
  try {
    const auto& variant = impl_->family->variant(candidate.variant);
    params = kernels::resolve_params(variant, params);
    auto traced = std::make_shared<const sim::Program>(
        kernels::trace_program(*impl_->family, variant, config_.shape, impl_->dtype, params, impl_->target));
    const std::uint64_t hash = traced->content_hash();
    const std::uint64_t layout_free = traced->layout_free_hash();
    std::shared_future<Measurement> earlier;
    std::string first;
    std::optional<Impl::FirstOfLayout> same_layout_free;
    {
      std::lock_guard lock(impl_->mutex);
      if (auto it = impl_->by_program.find(hash); it != impl_->by_program.end()) {
        earlier = it->second.measurement;
        first = it->second.first;
      } else {
        publish.emplace();
        const auto future = publish->get_future().share();
        impl_->by_program[hash] = {candidate.key(), future};
        if (auto other = impl_->by_layout_free.find(layout_free); other != impl_->by_layout_free.end())
          same_layout_free = other->second;
        else
          impl_->by_layout_free[layout_free] = {candidate.key(), candidate.variant, params, future};
      }
    }
    if (earlier.valid()) {
      Measurement same = earlier.get();
      same.duration_ms = 0;
      if (!same.verification.is_object()) same.verification = Json::object();
      same.verification["same_program_as"] = first;
      return same;
    }
    if (same_layout_free) {
      if (auto same = impl_->same_schedule(*traced, *same_layout_free, config_.shape)) {
        publish->set_value(*same);
        return *same;
      }
    }
    kernels::EvaluateOptions options;
    options.seed = config_.verification_seed;
    options.traced = traced;
    evaluation = kernels::evaluate(*impl_->family, candidate.variant, config_.shape, impl_->dtype, params,
                                   impl_->target, options);
  } catch (const sim::ProgramTooLarge& e) {
    m.status = Outcome::invalid;  // a property of the configuration at this shape
    m.error = std::string("program_too_large: ") + e.what();
    if (publish) publish->set_value(m);
    return m;
  } catch (const std::exception& e) {
    m.status = Outcome::failed;
    m.error = e.what();
    if (publish) publish->set_value(m);
    return m;
  }
  Json result = kernels::external::evaluation_json(evaluation, *impl_->family, impl_->target);
  if (impl_->flops > 0) result["flops"] = impl_->flops;
  if (impl_->compulsory_bytes > 0) result["compulsory_bytes"] = impl_->compulsory_bytes;
  // A goal's tolerance overrides the family's: judge the measured error again.
  const auto& v = evaluation.verification;
  const Outcome status = evaluation.status;
  if (config_.tolerance && v.ran && (status == Outcome::ok || status == Outcome::wrong_answer)) {
    const bool passed = std::isfinite(v.max_rel_error) && v.max_rel_error <= *config_.tolerance;
    result["status"] = passed ? "ok" : "wrong_answer";
    result["verification"]["passed"] = passed;
    result["verification"]["tolerance"] = *config_.tolerance;
    if (!passed)
      result["error"] = "max relative error " + std::to_string(v.max_rel_error) +
                        " above the goal's tolerance " + std::to_string(*config_.tolerance);
    else
      result["error"] = evaluation.error;
  }
  m = measurement_from_evaluation(
      result, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  if (publish) publish->set_value(m);
  return m;
}

}  // namespace autotune::skills
