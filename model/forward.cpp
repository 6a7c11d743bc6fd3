#include "model/forward.hpp"

#include <yaml-cpp/yaml.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdio>
#include <map>
#include <mutex>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "model/fit.hpp"

namespace autotune::model {

namespace {

// The kernel a run tuned, read back from its resolved goal (store::Run::goal_yaml).
struct RunKernel {
  std::string family, dtype, target;
  kernels::Shape shape;
};

std::optional<RunKernel> run_kernel(const store::Run& run) {
  YAML::Node goal;
  try {
    // Bounded like every YAML reader: a stored goal with a recursive alias or
    // a billion laughs is passed over with one line, never a crash or a hang.
    goal = load_yaml_text(run.goal_yaml, "run " + std::to_string(run.id) + "'s stored goal");
  } catch (const UserError& error) {
    log::warn(std::string(error.what()) + "; its trials are not used");
    return std::nullopt;
  }
  try {
    const YAML::Node kernel = goal["kernel"];
    const YAML::Node target = goal["target"];
    if (!kernel || !kernel.IsMap() || !kernel["family"] || !kernel["shape"] || !kernel["shape"].IsMap())
      return std::nullopt;
    if (!target || !target.IsScalar()) return std::nullopt;  // a command target measures elsewhere
    RunKernel out;
    out.family = kernel["family"].as<std::string>();
    out.dtype = kernel["dtype"] ? kernel["dtype"].as<std::string>() : "";
    out.target = target.as<std::string>();
    for (const auto& entry : kernel["shape"])
      out.shape[entry.first.as<std::string>()] = entry.second.as<std::int64_t>();
    return out;
  } catch (const YAML::Exception&) {
    return std::nullopt;  // not a kernel run's goal
  }
}

// "16.12 us", "1.904 ms": an operator's time per call, to four figures.
std::string time_text(double seconds) {
  char buffer[32];
  if (seconds < 1e-3)
    std::snprintf(buffer, sizeof buffer, "%.2f us", seconds * 1e6);
  else
    std::snprintf(buffer, sizeof buffer, "%.3f ms", seconds * 1e3);
  return buffer;
}

// The file a target name or path stands for, resolved as a goal's `target:`
// is (sim::target_file) and made comparable: `trn2`, `configs/targets/trn2.yaml`
// and `./configs/targets/trn2.yaml` are one target. Relative paths resolve
// against the working directory, as the goal's did. Nothing when it names no
// target (an unknown name).
std::optional<std::filesystem::path> target_identity(const std::string& name_or_path) {
  try {
    return std::filesystem::weakly_canonical(std::filesystem::absolute(sim::target_file(name_or_path)));
  } catch (const UserError&) {
    return std::nullopt;
  } catch (const std::filesystem::filesystem_error&) {
    return std::nullopt;
  }
}

bool verified(const store::Trial& trial) {
  return is_measured(trial.status) && trial.verification.is_object() &&
         trial.verification.value("passed", false);
}

std::optional<kernels::ParamValues> params_of(const kernels::VariantSpec& variant,
                                              const nlohmann::json& params) {
  if (!params.is_object()) return std::nullopt;
  kernels::ParamValues given;
  for (const auto& [name, value] : params.items()) {
    if (!value.is_number_integer()) return std::nullopt;
    if (!variant.find_param(name)) continue;  // e.g. the baseline's placeholder "_"
    given[name] = value.get<std::int64_t>();
  }
  try {
    return kernels::resolve_params(variant, given);
  } catch (const UserError&) {
    return std::nullopt;
  }
}

ChosenConfig family_config(const kernels::FamilySpec& family, bool baseline) {
  ChosenConfig config;
  const bool use_default = !baseline && !family.default_variant.empty();
  config.variant = use_default ? family.default_variant : family.baseline_variant;
  config.source = use_default ? "default" : "baseline";
  config.params = kernels::resolve_params(family.variant(config.variant), kernels::ParamValues{});
  return config;
}

}  // namespace

std::optional<ChosenConfig> best_verified_config(store::Store& store, const std::string& family_name,
                                                 const kernels::Shape& shape, sim::Dtype dtype,
                                                 const std::string& target) {
  const kernels::FamilySpec& family = kernels::family_registry().get(family_name);
  const auto wanted = target_identity(target);
  if (!wanted) return std::nullopt;
  std::map<std::string, std::optional<std::filesystem::path>> identities;  // by a run's target as written
  std::optional<ChosenConfig> best;
  for (const auto& run : store.runs()) {
    const auto kernel = run_kernel(run);
    if (!kernel || kernel->family != family_name || kernel->shape != shape) continue;
    auto identity = identities.find(kernel->target);
    if (identity == identities.end())
      identity = identities.emplace(kernel->target, target_identity(kernel->target)).first;
    if (identity->second != wanted) continue;
    if (kernel->dtype != sim::dtype_name(dtype)) continue;
    for (const auto& trial : store.trials(run.id)) {
      if (!verified(trial)) continue;
      const auto latency = trial.metric("latency_s");
      if (!latency || (best && *latency >= best->recorded_latency_s)) continue;
      const kernels::VariantSpec* variant = nullptr;
      for (const auto& v : family.variants)
        if (v.name == trial.variant) variant = &v;
      if (!variant) continue;
      const auto params = params_of(*variant, trial.params);
      if (!params) continue;
      best = ChosenConfig{trial.variant, *params, "tuned", run.id, trial.id, *latency, ""};
    }
  }
  return best;
}

ForwardTiming time_forward(const ModelSpec& model, const sim::TargetSpec& target, store::Store* store,
                           const ForwardOptions& options) {
  ForwardTiming forward;
  // Per operator, the best tuned trial the database holds for its kernel: a
  // candidate only, measured here beside the default it would replace.
  std::vector<std::optional<ChosenConfig>> tuned;
  // Layers repeat operators: the database is searched once per kernel call
  // (family and shape), not once per operator.
  std::map<std::string, std::optional<ChosenConfig>> tuned_by_call;
  const std::string target_written = target.source_file.empty() ? target.name : target.source_file;
  for (const auto& op : prefill_chain(model)) {
    const kernels::FamilySpec& family = kernels::family_registry().get(op.family);
    if (!family.accepts(model.dtype))
      throw UserError("model " + model.name + ": operator " + op.name + " (" + op.family +
                      ") does not take dtype " + std::string(sim::dtype_name(model.dtype)));
    if (const std::string why = family.check_shape(op.shape); !why.empty())
      throw UserError("model " + model.name + ": operator " + op.name + " (" + op.family +
                      ") cannot run at this model's shape: " + why);
    OperatorTiming timing;
    timing.op = op;
    std::optional<ChosenConfig> candidate;
    if (const auto given = options.configs.find(op.name); given != options.configs.end()) {
      timing.config = given->second;
    } else {
      timing.config = family_config(family, options.baseline);
      if (!options.baseline && store) {
        std::string call = op.family;
        for (const auto& [k, v] : op.shape) call += "|" + k + "=" + std::to_string(v);
        auto found = tuned_by_call.find(call);
        if (found == tuned_by_call.end())
          found = tuned_by_call
                      .emplace(call,
                               best_verified_config(*store, op.family, op.shape, model.dtype, target_written))
                      .first;
        candidate = found->second;
      }
    }
    forward.operators.push_back(std::move(timing));
    tuned.push_back(std::move(candidate));
  }

  // Each distinct kernel call is evaluated once: layers repeat operators, and
  // operators repeat shapes (the gate and up projections).
  std::map<std::string, kernels::Evaluation> evaluations;
  auto key_of = [&](const Operator& op, const ChosenConfig& config) {
    std::string key = op.family + "|" + config.variant;
    for (const auto& [k, v] : op.shape) key += "|" + k + "=" + std::to_string(v);
    for (const auto& [k, v] : config.params) key += "|" + k + "=" + std::to_string(v);
    return key;
  };
  auto evaluate_missing = [&] {
    std::vector<std::pair<Operator, ChosenConfig>> calls;
    for (std::size_t i = 0; i < forward.operators.size(); ++i) {
      calls.emplace_back(forward.operators[i].op, forward.operators[i].config);
      if (tuned[i]) calls.emplace_back(forward.operators[i].op, *tuned[i]);
    }
    std::mutex mutex;
    boost::asio::thread_pool pool(std::size_t(std::max(1, options.jobs)));
    std::exception_ptr failure;
    for (const auto& [op, config] : calls) {
      const std::string key = key_of(op, config);
      if (!evaluations.emplace(key, kernels::Evaluation{}).second) continue;
      boost::asio::post(pool, [&, key, op, config] {
        try {
          kernels::EvaluateOptions evaluate_options;
          evaluate_options.seed = options.seed;
          auto result = kernels::evaluate(kernels::family_registry().get(op.family), config.variant, op.shape,
                                          model.dtype, config.params, target, evaluate_options);
          std::lock_guard lock(mutex);
          evaluations.at(key) = std::move(result);
        } catch (...) {
          std::lock_guard lock(mutex);
          if (!failure) failure = std::current_exception();
        }
      });
    }
    pool.join();
    if (failure) std::rethrow_exception(failure);
  };
  evaluate_missing();
  // A family's default that does not fit this shape on this target (an SBUF
  // overflow, say) is shrunk until it does (model/fit.hpp): the fastest
  // fitting configuration of the default variant. Only when none fits, or the
  // default fails otherwise, does the operator take the family's baseline;
  // the configuration's source and note say which and why.
  std::map<std::string, FitResult> fits;  // by family and shape: the gate and up projections share one
  auto fit_key = [](const OperatorTiming& t) {
    std::string key = t.op.family;
    for (const auto& [k, v] : t.op.shape) key += "|" + k + "=" + std::to_string(v);
    return key;
  };
  {
    std::mutex mutex;
    boost::asio::thread_pool pool(std::size_t(std::max(1, options.jobs)));
    std::exception_ptr failure;
    for (const auto& t : forward.operators) {
      if (t.config.source != "default" || evaluations.at(key_of(t.op, t.config)).status != Outcome::invalid)
        continue;
      if (!fits.emplace(fit_key(t), FitResult{}).second) continue;
      boost::asio::post(pool, [&, t] {
        try {
          FitOptions fit_options;
          fit_options.evaluate.seed = options.seed;
          const kernels::FamilySpec& family = kernels::family_registry().get(t.op.family);
          auto result = fit_variant(family, family.variant(t.config.variant), t.op.shape, model.dtype, target,
                                    t.config.params, fit_options);
          std::lock_guard lock(mutex);
          fits.at(fit_key(t)) = std::move(result);
        } catch (...) {
          std::lock_guard lock(mutex);
          if (!failure) failure = std::current_exception();
        }
      });
    }
    pool.join();
    if (failure) std::rethrow_exception(failure);
  }
  bool fell_back = false;
  for (auto& t : forward.operators) {
    const kernels::Evaluation& e = evaluations.at(key_of(t.op, t.config));
    if (t.config.source != "default" || e.ok()) continue;
    const std::string why = std::string(to_string(e.status)) + ": " + without_source_location(e.error);
    const kernels::FamilySpec& family = kernels::family_registry().get(t.op.family);
    if (const auto fit = fits.find(fit_key(t)); fit != fits.end() && fit->second.params) {
      const FitResult& found = fit->second;
      t.config.note = "the default does not fit (" + why + "); the fastest of " +
                      std::to_string(found.measured) + " fitting configurations " +
                      std::to_string(found.steps) + (found.steps == 1 ? " step" : " steps") +
                      " smaller: " + changes_text(t.config.params, *found.params);
      t.config.params = *found.params;
      t.config.source = "default, shrunk to fit";
      evaluations.emplace(key_of(t.op, t.config), *found.evaluation);
      continue;
    }
    const std::string variant = t.config.variant;
    t.config = family_config(family, true);
    if (const auto fit = fits.find(fit_key(t)); fit != fits.end()) {
      t.config.source = "baseline (no configuration of " + variant + " fits)";
      t.config.note = "the default does not fit (" + why + "); " + fit->second.why_not;
    } else {
      t.config.source = "baseline (the default is " + std::string(to_string(e.status)) + ")";
      t.config.note = "the default " + why;
    }
    fell_back = true;
  }
  if (fell_back) evaluate_missing();
  // A tuned configuration runs only where it is the faster, both simulated
  // here at the operator's shape on this target: a run tuned with a narrow
  // budget or space may have ended slower than the family's default, and
  // the default is what the operator would run without it.
  for (std::size_t i = 0; i < forward.operators.size(); ++i) {
    if (!tuned[i]) continue;
    OperatorTiming& t = forward.operators[i];
    const kernels::Evaluation& mine = evaluations.at(key_of(t.op, *tuned[i]));
    const kernels::Evaluation& other = evaluations.at(key_of(t.op, t.config));
    if (mine.ok() && (!other.ok() || mine.latency_s <= other.latency_s)) {
      t.config = *tuned[i];
      continue;
    }
    const ChosenConfig& passed = *tuned[i];
    const std::string named = "run " + std::to_string(*passed.run) + " trial " +
                              std::to_string(*passed.trial) + "'s tuned " + passed.variant;
    const std::string why =
        mine.ok() ? "faster than " + named : named + " is " + std::string(to_string(mine.status)) + " here";
    const std::string instead = t.config.source.starts_with("baseline") ? "the baseline" : "the default";
    t.config.source = t.config.source.ends_with(")")
                          ? t.config.source.substr(0, t.config.source.size() - 1) + "; " + why + ")"
                          : t.config.source + " (" + why + ")";
    const std::string measured =
        mine.ok()
            ? named + " takes " + time_text(mine.latency_s) + " per call here, " + instead + " " +
                  time_text(other.latency_s)
            : named + ": " + std::string(to_string(mine.status)) + ": " + without_source_location(mine.error);
    t.config.note = t.config.note.empty() ? measured : t.config.note + "; " + measured;
  }

  const double peak = target.peak_flops(model.dtype);
  for (auto& t : forward.operators) {
    const kernels::Evaluation& e = evaluations.at(key_of(t.op, t.config));
    const kernels::FamilySpec& family = kernels::family_registry().get(t.op.family);
    t.status = e.status;
    t.error = e.error;
    t.latency_s = e.latency_s;
    t.roofline_s = e.roofline_bound_s;
    t.flops = family.flops(t.op.shape);
    t.mfu_percent = e.latency_s > 0 && peak > 0 ? 100.0 * t.flops / (e.latency_s * peak) : 0;
    t.verified = e.verification.ran && e.verification.passed;
    t.verification_cosine = e.verification.cosine_similarity;
    t.verification_mse = e.verification.mse;
    forward.all_ok = forward.all_ok && e.ok();
    forward.latency_s += e.latency_s * double(t.op.calls);
    forward.roofline_s += e.roofline_bound_s * double(t.op.calls);
    forward.flops += t.flops * double(t.op.calls);
  }
  for (auto& t : forward.operators)
    t.share_percent =
        forward.latency_s > 0 ? 100.0 * t.latency_s * double(t.op.calls) / forward.latency_s : 0;
  forward.mfu_percent =
      forward.latency_s > 0 && peak > 0 ? 100.0 * forward.flops / (forward.latency_s * peak) : 0;
  return forward;
}

}  // namespace autotune::model
