#include "kernels/evaluate.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/text.hpp"

namespace autotune::kernels {
namespace {

std::string trim(std::string_view text) {
  std::size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  return std::string(text.substr(b, e - b));
}

bool parse_int(const std::string& text, std::int64_t& value) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, last, value);
  return ec == std::errc() && ptr == last && first != last;
}

std::string param_names(const VariantSpec& variant) {
  const std::string out = join(variant.params, ", ", [](const ParamSpec& p) { return p.name; });
  return out.empty() ? "none" : out;
}

void check_value(const VariantSpec& variant, const ParamSpec& spec, std::int64_t value) {
  if (std::find(spec.values.begin(), spec.values.end(), value) == spec.values.end())
    throw UserError("value " + std::to_string(value) + " of parameter '" + spec.name + "' of variant '" +
                    variant.name + "' is outside its domain (accepted: " + join(spec.values, ", ") + ")");
}

const ParamSpec& find_param_or_throw(const VariantSpec& variant, const std::string& name) {
  const ParamSpec* spec = variant.find_param(name);
  if (spec == nullptr)
    throw UserError("unknown parameter '" + name + "' of variant '" + variant.name +
                    "' (accepted: " + param_names(variant) + ")");
  return *spec;
}

std::int64_t tensor_elements(const std::vector<TensorSpec>& tensors, const Shape& shape) {
  std::int64_t total = 0;
  for (const auto& t : tensors) {
    auto [rows, cols] = t.dims(shape);
    total += rows * cols;
  }
  return total;
}

// Fresh inputs for `shape`: uniform in each tensor's [low, high], rounded to
// what `dtype` stores (so host reference and device see the same values), with
// exact zeros nudged away so no input is ever zero.
std::vector<std::vector<float>> random_inputs(const FamilySpec& family, const Shape& shape, sim::Dtype dtype,
                                              std::uint64_t seed) {
  Rng rng = Rng(seed).fork("verification inputs");
  std::vector<std::vector<float>> inputs;
  for (const auto& t : family.inputs) {
    auto [rows, cols] = t.dims(shape);
    std::vector<float> values(static_cast<std::size_t>(rows * cols));
    for (auto& v : values) {
      float x = sim::round_to_dtype(static_cast<float>(rng.uniform(t.low, t.high)), dtype);
      if (x == 0.0f) x = sim::round_to_dtype(static_cast<float>(t.high) * 0.5f, dtype);
      v = x;
    }
    inputs.push_back(std::move(values));
  }
  return inputs;
}

bool same_shape(const Shape& a, const Shape& b) { return a == b; }

}  // namespace

ParamValues resolve_params(const VariantSpec& variant, const std::map<std::string, std::string>& given) {
  ParamValues out;
  for (const auto& [name, text] : given) {
    const ParamSpec& spec = find_param_or_throw(variant, name);
    std::int64_t value = 0;
    if (!parse_int(trim(text), value))
      throw UserError("value '" + text + "' of parameter '" + name +
                      "' is not an integer (accepted: " + join(spec.values, ", ") + ")");
    check_value(variant, spec, value);
    out[name] = value;
  }
  for (const auto& p : variant.params) out.emplace(p.name, p.default_value);
  return out;
}

ParamValues resolve_params(const VariantSpec& variant, const ParamValues& given) {
  ParamValues out;
  for (const auto& [name, value] : given) {
    check_value(variant, find_param_or_throw(variant, name), value);
    out[name] = value;
  }
  for (const auto& p : variant.params) out.emplace(p.name, p.default_value);
  return out;
}

Shape parse_shape(const FamilySpec& family, const std::string& text) {
  Shape shape;
  std::map<std::string, bool> seen;
  const std::string whole = trim(text);
  std::size_t pos = 0;
  while (!whole.empty() && pos <= whole.size()) {
    const std::size_t comma = std::min(whole.find(',', pos), whole.size());
    const std::string item = trim(std::string_view(whole).substr(pos, comma - pos));
    pos = comma + 1;
    const std::size_t eq = item.find('=');
    const std::string expected = "expected NAME=VALUE pairs separated by commas, e.g. " +
                                 shape_text(family.default_shape, family) +
                                 " (arguments: " + join(family.shape_args, ", ") + ")";
    if (eq == std::string::npos) throw UserError("malformed shape '" + text + "': " + expected);
    const std::string name = trim(std::string_view(item).substr(0, eq));
    const std::string value_text = trim(std::string_view(item).substr(eq + 1));
    if (std::find(family.shape_args.begin(), family.shape_args.end(), name) == family.shape_args.end())
      throw UserError("unknown shape argument '" + name + "' of kernel '" + family.name +
                      "' (accepted: " + join(family.shape_args, ", ") + ")");
    if (seen[name]) throw UserError("shape argument '" + name + "' given twice in '" + text + "'");
    seen[name] = true;
    std::int64_t value = 0;
    if (!parse_int(value_text, value))
      throw UserError("shape argument '" + name + "' has value '" + value_text +
                      "', not an integer: " + expected);
    shape[name] = value;
  }
  if (whole.empty()) shape = family.default_shape;
  if (const std::string reason =
          incomplete_shape_reason(family.name, family.shape_args, family.default_shape, shape);
      !reason.empty())
    throw UserError("shape '" + whole + "' is " + reason);
  if (family.check_shape) {
    const std::string reason = family.check_shape(shape);
    if (!reason.empty())
      throw UserError("shape " + shape_text(shape, family) + " of kernel '" + family.name +
                      "' rejected: " + reason);
  }
  return shape;
}

std::string incomplete_shape_reason(const std::string& kernel, const std::vector<std::string>& shape_args,
                                    const Shape& default_shape, const Shape& given) {
  std::vector<std::string> missing;
  for (const auto& arg : shape_args)
    if (given.count(arg) == 0) missing.push_back(arg);
  if (missing.empty()) return "";
  std::vector<std::string> defaults;
  for (const auto& arg : shape_args)
    if (const auto it = default_shape.find(arg); it != default_shape.end())
      defaults.push_back(arg + "=" + std::to_string(it->second));
  return "missing " + join(missing, ", ") + "; the shape arguments of " + kernel + " are " +
         join(shape_args, ", ") + " (give all of them, or none for the default " + join(defaults, ",") + ")";
}

std::string shape_text(const Shape& shape, const FamilySpec& family) {
  std::vector<std::string> items;
  for (const auto& arg : family.shape_args)
    if (const auto it = shape.find(arg); it != shape.end())
      items.push_back(arg + "=" + std::to_string(it->second));
  return join(items, ",");
}

double roofline_bound_s(const FamilySpec& family, const Shape& shape, sim::Dtype dtype,
                        const sim::TargetSpec& target) {
  double peak = 0;
  if (family.tensor_engine_bound) {
    peak = target.peak_flops(dtype);
  } else {
    for (auto engine : {sim::Engine::vector, sim::Engine::scalar, sim::Engine::gpsimd})
      peak += target.elements_per_s(engine, dtype);
  }
  const double compute_s = peak > 0 ? family.flops(shape) / peak : 0.0;
  const double memory_s =
      target.hbm_bytes_per_s > 0 ? family.hbm_bytes(shape, dtype) / target.hbm_bytes_per_s : 0.0;
  return std::max(compute_s, memory_s);
}

KernelLimits kernel_limits(const sim::TargetSpec& target) {
  KernelLimits limits;
  limits.psum_bank_bytes = target.psum_bank_bytes;
  limits.partitions = target.partitions;
  limits.sbuf_bytes_per_partition = target.sbuf_bytes_per_partition;
  return limits;
}

sim::Program trace_program(const FamilySpec& family, const VariantSpec& variant, const Shape& shape,
                           sim::Dtype dtype, const ParamValues& params, const sim::TargetSpec& target) {
  return trace_program(family, variant, shape, dtype, params, kernel_limits(target));
}

sim::Program trace_program(const FamilySpec& family, const VariantSpec& variant, const Shape& shape,
                           sim::Dtype dtype, const ParamValues& params, const KernelLimits& limits) {
  for (const auto& p : variant.params)
    if (params.count(p.name) == 0)
      throw UserError("parameter '" + p.name + "' of variant '" + variant.name + "' has no value");
  for (const auto& arg : family.shape_args)
    if (shape.count(arg) == 0)
      throw UserError("shape argument '" + arg + "' of kernel '" + family.name + "' missing");
  sim::Program program;
  Kernel kernel(program, limits);
  variant.trace(kernel, shape, dtype, params);
  return program;
}

Verification compare_outputs(const HostTensors& reference, const std::vector<std::vector<float>>& outputs,
                             double tolerance, double min_cosine) {
  Verification v;
  v.ran = true;
  v.tolerance = tolerance;
  if (reference.size() != outputs.size()) {
    v.error = "the kernel produced " + std::to_string(outputs.size()) + " outputs, the reference " +
              std::to_string(reference.size());
    return v;
  }
  double sum_sq_ref = 0, sum_sq_out = 0, dot = 0, sum_sq_err = 0;
  std::int64_t count = 0, non_finite = 0;
  for (std::size_t t = 0; t < reference.size(); ++t) {
    if (reference[t].size() != outputs[t].size()) {
      v.error = "output " + std::to_string(t) + " has " + std::to_string(outputs[t].size()) +
                " elements, the reference " + std::to_string(reference[t].size());
      return v;
    }
    for (std::size_t i = 0; i < reference[t].size(); ++i) sum_sq_ref += reference[t][i] * reference[t][i];
    count += static_cast<std::int64_t>(reference[t].size());
  }
  const double rms = count > 0 ? std::sqrt(sum_sq_ref / double(count)) : 0.0;
  const double floor = rms > 0 ? rms : std::numeric_limits<double>::min();
  double max_rel = 0;
  for (std::size_t t = 0; t < reference.size(); ++t) {
    for (std::size_t i = 0; i < reference[t].size(); ++i) {
      const double r = reference[t][i];
      const double a = outputs[t][i];
      if (!std::isfinite(a)) {
        ++non_finite;
        continue;
      }
      const double err = a - r;
      sum_sq_err += err * err;
      sum_sq_out += a * a;
      dot += a * r;
      max_rel = std::max(max_rel, std::fabs(err) / std::max(std::fabs(r), floor));
    }
  }
  v.checked_elements = count;
  v.max_rel_error = non_finite > 0 ? std::numeric_limits<double>::infinity() : max_rel;
  v.mse = count > 0 ? sum_sq_err / double(count) : 0.0;
  v.cosine_similarity = (sum_sq_out > 0 && sum_sq_ref > 0) ? dot / std::sqrt(sum_sq_out * sum_sq_ref) : 0.0;
  if (non_finite > 0) {
    v.error = std::to_string(non_finite) + " of " + std::to_string(count) +
              " output elements are NaN or infinite (unwritten or overflowed)";
  } else if (max_rel > tolerance) {
    v.error = "max relative error " + std::to_string(max_rel) + " exceeds the tolerance " +
              std::to_string(tolerance);
  } else if (min_cosine > 0 && !(v.cosine_similarity >= min_cosine)) {
    v.error = "cosine similarity " + std::to_string(v.cosine_similarity) + " is below the accepted " +
              std::to_string(min_cosine);
  } else {
    v.passed = true;
  }
  return v;
}

FunctionalRun run_functional(const FamilySpec& family, const std::string& variant, const Shape& shape,
                             sim::Dtype dtype, const ParamValues& params, const sim::TargetSpec& target,
                             std::vector<std::vector<float>> inputs) {
  if (inputs.size() != family.inputs.size())
    throw InternalError("kernel '" + family.name + "' takes " + std::to_string(family.inputs.size()) +
                        " inputs, given " + std::to_string(inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto [rows, cols] = family.inputs[i].dims(shape);
    if (std::int64_t(inputs[i].size()) != rows * cols)
      throw InternalError("input " + family.inputs[i].name + " of kernel '" + family.name + "' has " +
                          std::to_string(inputs[i].size()) + " elements, the shape needs " +
                          std::to_string(rows * cols));
    for (auto& x : inputs[i]) x = sim::round_to_dtype(x, dtype);
  }
  const sim::Program program = trace_program(family, family.variant(variant), shape, dtype, params, target);
  sim::HostIo io;
  io.inputs = std::move(inputs);
  const sim::SimResult result = sim::simulate(program, target, sim::SimOptions{true, false}, &io);
  FunctionalRun run;
  if (!result.valid)
    run.error = result.error.empty() ? "the program does not fit the target" : result.error;
  else
    run.outputs = std::move(io.outputs);
  return run;
}

Evaluation evaluate(const FamilySpec& family, const std::string& variant_name, const Shape& shape,
                    sim::Dtype dtype, const ParamValues& params, const sim::TargetSpec& target,
                    const EvaluateOptions& options) {
  const VariantSpec& variant = family.variant(variant_name);
  if (!family.accepts(dtype)) {
    const std::string accepted =
        join(family.dtypes, ", ", [](Dtype d) { return std::string(sim::dtype_name(d)); });
    throw UserError("kernel '" + family.name + "' does not take dtype '" +
                    std::string(sim::dtype_name(dtype)) + "' (accepted: " + accepted + ")");
  }
  if (family.check_shape) {
    const std::string reason = family.check_shape(shape);
    if (!reason.empty())
      throw UserError("shape " + shape_text(shape, family) + " of kernel '" + family.name +
                      "' rejected: " + reason);
  }

  Evaluation e;
  e.family = family.name;
  e.variant = variant.name;
  e.shape = shape;
  e.dtype = dtype;
  e.params = params;
  e.roofline_bound_s = roofline_bound_s(family, shape, dtype, target);
  auto tolerance_it = family.tolerance.find(dtype);
  const double tolerance = tolerance_it != family.tolerance.end() ? tolerance_it->second : 1e-3;

  const Shape verification_shape =
      variant.verification_shape ? variant.verification_shape(shape, params) : shape;
  const std::int64_t full_elements =
      tensor_elements(family.inputs, shape) + tensor_elements(family.outputs, shape);
  const bool combined = options.verify && same_shape(verification_shape, shape) &&
                        full_elements <= options.functional_element_limit;

  // 1. The full shape (functional too when it doubles as the verification run).
  auto program = options.traced ? options.traced
                                : std::make_shared<const sim::Program>(
                                      trace_program(family, variant, shape, dtype, params, target));
  e.program = program;
  sim::HostIo io;
  std::vector<std::vector<float>> inputs;
  if (combined) {
    inputs = random_inputs(family, shape, dtype, options.seed);
    io.inputs = inputs;
  }
  e.sim = sim::simulate(*program, target, sim::SimOptions{combined, options.record_timeline},
                        combined ? &io : nullptr);
  e.latency_s = e.sim.total_time_s;
  if (!e.sim.valid) {
    e.status = Outcome::invalid;
    e.rule = e.sim.rule;
    e.error = e.sim.error;
    return e;
  }

  // 2. Physics.
  if (e.latency_s < e.roofline_bound_s) {
    e.status = Outcome::implausible;
    e.error = "simulated time " + std::to_string(e.latency_s * 1e3) + " ms is below the roofline bound " +
              std::to_string(e.roofline_bound_s * 1e3) + " ms (an evaluator bug; the trial is rejected)";
    return e;
  }

  // 3. Correctness.
  if (options.verify) {
    std::vector<std::vector<float>> outputs;
    if (combined) {
      outputs = std::move(io.outputs);
    } else {
      const KernelLimits limits =
          variant.verification_limits
              ? variant.verification_limits(shape, verification_shape, params, dtype, kernel_limits(target))
              : kernel_limits(target);
      const sim::Program check = trace_program(family, variant, verification_shape, dtype, params, limits);
      inputs = random_inputs(family, verification_shape, dtype, options.seed);
      sim::HostIo check_io;
      check_io.inputs = inputs;
      const sim::SimResult check_result =
          sim::simulate(check, target, sim::SimOptions{true, false}, &check_io);
      if (!check_result.valid) {
        e.status = Outcome::invalid;
        e.rule = check_result.rule;
        e.error =
            "at the verification shape " + shape_text(verification_shape, family) + ": " + check_result.error;
        e.verification.shape = verification_shape;
        return e;
      }
      outputs = std::move(check_io.outputs);
    }
    HostTensors host_inputs;
    for (const auto& in : inputs) host_inputs.emplace_back(in.begin(), in.end());
    const HostTensors reference = family.reference(verification_shape, host_inputs);
    e.verification = compare_outputs(reference, outputs, tolerance, family.min_cosine_similarity);
    e.verification.shape = verification_shape;
    if (!e.verification.passed) {
      e.status = Outcome::wrong_answer;
      e.error =
          "verification at " + shape_text(verification_shape, family) + " failed: " + e.verification.error;
      return e;
    }
  }
  e.status = Outcome::ok;
  return e;
}

}  // namespace autotune::kernels
