#include "model/fit.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include "core/error.hpp"
#include "search/search_space.hpp"
#include "sim/validate.hpp"

namespace autotune::model {

namespace {

// Roles whose smaller values hold less on chip at once.
bool shrinks(kernels::ParamRole role) {
  return role == kernels::ParamRole::tile || role == kernels::ParamRole::block ||
         role == kernels::ParamRole::unroll || role == kernels::ParamRole::pipeline_depth;
}

// How far a program is from fitting: its SBUF or PSUM high-water mark over
// the capacity, whichever is larger (below 1: the overflow is elsewhere).
double overflow(const sim::ValidationResult& v, const sim::TargetSpec& target) {
  const double sbuf = target.sbuf_bytes_per_partition > 0
                          ? double(v.sbuf_peak_bytes_per_partition) / double(target.sbuf_bytes_per_partition)
                          : 0;
  const double psum_capacity = double(target.psum_banks) * double(target.psum_bank_bytes);
  const double psum = psum_capacity > 0 ? double(v.psum_peak_bytes_per_partition) / psum_capacity : 0;
  return std::max(sbuf, psum);
}

constexpr double kUnchecked = std::numeric_limits<double>::infinity();  // or outside the constraints

struct Node {
  search::Positions positions;
  double overflow = 0;
  bool fits = false;
  std::string error;
};

}  // namespace

std::string changes_text(const kernels::ParamValues& from, const kernels::ParamValues& to) {
  std::string out;
  for (const auto& [name, value] : to) {
    const auto before = from.find(name);
    if (before == from.end() || before->second == value) continue;
    out += (out.empty() ? "" : ", ") + name + " " + std::to_string(before->second) + "->" +
           std::to_string(value);
  }
  return out;
}

FitResult fit_variant(const kernels::FamilySpec& family, const kernels::VariantSpec& variant,
                      const kernels::Shape& shape, sim::Dtype dtype, const sim::TargetSpec& target,
                      const kernels::ParamValues& start, const FitOptions& options) {
  FitResult result;
  // Each parameter's values, ascending: a shrinking one's domain values at or
  // below the start's, any other the start's value alone.
  std::vector<search::ParameterSpec> parameters;
  std::vector<std::vector<std::int64_t>> values;
  bool any = false;
  for (const auto& p : variant.params) {
    const std::int64_t at = start.at(p.name);
    std::vector<std::int64_t> allowed;
    if (shrinks(p.role))
      for (auto v : p.values)
        if (v < at) allowed.push_back(v);
    std::sort(allowed.begin(), allowed.end());
    allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
    allowed.push_back(at);
    any = any || allowed.size() > 1;
    std::vector<search::ParamValue> domain(allowed.begin(), allowed.end());
    parameters.push_back(search::ParameterSpec::ordered(p.name, domain));
    values.push_back(std::move(allowed));
  }
  if (!any) {
    result.why_not = "variant " + variant.name +
                     " has no tile, block, unroll or pipeline-depth parameter above its smallest value";
    return result;
  }
  std::map<std::string, double> constants = target.constants();
  for (const auto& [arg, value] : shape) constants[arg] = double(value);
  constants["dtype_bytes"] = sim::dtype_bytes(dtype);
  std::optional<search::SearchSpace> space;
  try {
    space.emplace(parameters, variant.constraints, constants);
  } catch (const UserError& e) {
    result.why_not = "no configuration of " + variant.name + " at or below its default meets its constraints";
    return result;
  }
  auto params_of = [&](const search::Positions& positions) {
    kernels::ParamValues params;
    for (std::size_t i = 0; i < variant.params.size(); ++i)
      params[variant.params[i].name] = values[i][positions[i]];
    return params;
  };

  search::Positions origin;
  for (const auto& v : values) origin.push_back(std::uint32_t(v.size() - 1));
  std::set<search::Positions> seen{origin};
  std::vector<Node> frontier{Node{origin, 0, false, ""}};
  std::string closest;  // the error of the configuration closest to fitting so far
  for (int step = 1;; ++step) {
    // One parameter one value down from a configuration of the frontier. A
    // configuration outside the constraints is not traced but stays on the
    // way: the ones below it may satisfy them.
    std::vector<Node> level;
    for (const auto& node : frontier)
      for (std::size_t i = 0; i < node.positions.size(); ++i) {
        if (node.positions[i] == 0) continue;
        search::Positions child = node.positions;
        --child[i];
        if (seen.insert(child).second) level.push_back(Node{child, kUnchecked, false, ""});
      }
    if (level.empty()) {
      result.why_not = "none of its " + std::to_string(result.checked) +
                       " configurations at or below the default's blocks and tiles fits" +
                       (closest.empty() ? "" : " (the closest: " + closest + ")");
      return result;
    }
    for (auto& node : level) {
      if (!space->index_of_positions(node.positions)) continue;
      if (std::size_t(result.checked) >= options.max_checked) {
        result.why_not = "no fitting configuration among the " + std::to_string(result.checked) +
                         " closest to the default" +
                         (closest.empty() ? "" : " (the closest: " + closest + ")");
        return result;
      }
      ++result.checked;
      try {
        const sim::Program program =
            kernels::trace_program(family, variant, shape, dtype, params_of(node.positions), target);
        const sim::ValidationResult v = sim::validate_program(program, target);
        node.fits = v.valid;
        node.overflow = overflow(v, target);
        node.error = v.error;
      } catch (const UserError& e) {
        node.error = e.what();  // traced to nothing the target takes; ranked last
      }
    }
    std::stable_sort(level.begin(), level.end(),
                     [](const Node& a, const Node& b) { return a.overflow < b.overflow; });
    if (!level.empty() && !level.front().error.empty()) closest = level.front().error;

    std::vector<const Node*> fitting;
    for (const auto& node : level)
      if (node.fits) fitting.push_back(&node);
    if (!fitting.empty()) {
      // Measure every fitting configuration of this step; the fastest that verifies wins.
      result.steps = step;
      std::string failure;
      for (const Node* node : fitting) {
        const kernels::ParamValues params = params_of(node->positions);
        kernels::Evaluation e =
            kernels::evaluate(family, variant.name, shape, dtype, params, target, options.evaluate);
        ++result.measured;
        if (!e.ok()) {
          if (failure.empty()) failure = std::string(to_string(e.status)) + ": " + e.error;
          continue;
        }
        if (!result.evaluation || e.latency_s < result.evaluation->latency_s) {
          result.params = params;
          result.evaluation = std::move(e);
        }
      }
      if (!result.params)
        result.why_not = "the " + std::to_string(fitting.size()) + " configurations that fit " +
                         std::to_string(step) + " step(s) below the default do not run correctly (" +
                         failure + ")";
      return result;
    }
    if (level.size() > options.beam) level.resize(options.beam);
    frontier = std::move(level);
  }
}

std::string without_source_location(const std::string& error) {
  static const std::regex location(R"(^\S+:\d+: )");
  return std::regex_replace(error, location, "", std::regex_constants::format_first_only);
}

std::vector<std::string> unfit_baselines(const ModelSpec& model, const sim::TargetSpec& target) {
  struct Kernel {
    std::string operators, why;
  };
  std::vector<std::string> order;
  std::map<std::string, Kernel> kernels_by_key;  // the gate and up projections are one kernel
  for (const auto& op : prefill_chain(model)) {
    const kernels::FamilySpec& family = kernels::family_registry().get(op.family);
    const std::string key = op.family + " " + kernels::shape_text(op.shape, family);
    if (auto seen = kernels_by_key.find(key); seen != kernels_by_key.end()) {
      if (!seen->second.why.empty()) seen->second.operators += ", " + op.name;
      continue;
    }
    const kernels::VariantSpec& variant = family.variant(family.baseline_variant);
    std::string why;
    try {
      const sim::Program program =
          kernels::trace_program(family, variant, op.shape, model.dtype,
                                 kernels::resolve_params(variant, kernels::ParamValues{}), target);
      if (const sim::ValidationResult v = sim::validate_program(program, target); !v.valid) why = v.error;
    } catch (const UserError& e) {
      why = e.what();  // traced to nothing the target takes
    }
    kernels_by_key[key] = Kernel{op.name, without_source_location(why)};
    order.push_back(key);
  }
  std::vector<std::string> out;
  for (const auto& key : order)
    if (const Kernel& k = kernels_by_key.at(key); !k.why.empty())
      out.push_back(k.operators + " (" + key + "): " + k.why);
  return out;
}

}  // namespace autotune::model
