#include "orchestrator/goal.hpp"

#include <algorithm>
#include <cmath>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/family.hpp"
#include "orchestrator/goal_sections.hpp"
#include "orchestrator/target_kind.hpp"
#include "search/strategy.hpp"
#include "sim/program.hpp"
#include "sim/target_constants.hpp"

namespace autotune::orchestrator {

namespace {

const std::vector<std::string> kTopKeys = {
    "name",   "kernel", "target",   "objective",     "goal",      "max_iterations", "budget",
    "search", "start",  "variants", "parallel",      "timeout_s", "verification",   "roles",
    "seed",   "llm",    "skills",   "kernel_source", "screen"};

search::ParamValue scalar_value(const ConfigReader& reader, const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) reader.fail(key, "expected a number or a string", &node);
  const std::string text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted in the file ("1"): a string, as the writer asked
  try {
    std::size_t used = 0;
    const long long integer = std::stoll(text, &used);
    if (used == text.size()) return std::int64_t(integer);
  } catch (const std::exception&) {
  }
  try {
    std::size_t used = 0;
    const double real = std::stod(text, &used);
    if (used == text.size()) return real;
  } catch (const std::exception&) {
  }
  return text;
}

std::vector<search::ParamValue> read_domain(ConfigReader& space, const std::string& key) {
  const YAML::Node node = space.raw(key);
  std::vector<search::ParamValue> values;
  const std::string accepted =
      "a list of values, one value, {range: [lo, hi], step: s}, {pow2: [lo, hi]} or {categorical: [a, b, "
      "...]}";
  if (node.IsSequence()) {
    if (node.size() == 0) space.fail(key, "empty list of values", &node);
    for (const auto& item : node) values.push_back(scalar_value(space, item, key));
  } else if (node.IsScalar()) {
    values.push_back(scalar_value(space, node, key));
  } else if (node.IsMap()) {
    ConfigReader domain(node, space.file(), space.key_path(key));
    if (domain.has("range") + domain.has("pow2") + domain.has("categorical") > 1)
      space.fail(key, "give one of range, pow2 or categorical, not several", &node);
    // The search library's domains check their size before expanding them.
    if (domain.has("range")) {
      const auto bounds = domain.required<std::vector<std::int64_t>>("range", "[lo, hi]");
      const auto step = domain.optional<std::int64_t>("step", 1);
      if (bounds.size() != 2 || bounds[0] > bounds[1] || step < 1)
        space.fail(key, "range must be [lo, hi] with lo <= hi and step >= 1", &node);
      try {
        values = search::ParameterSpec::range(key, bounds[0], bounds[1], step).values();
      } catch (const UserError& e) {
        space.fail(key, e.what(), &node);
      }
    } else if (domain.has("pow2")) {
      const auto bounds = domain.required<std::vector<std::int64_t>>("pow2", "[lo, hi]");
      if (bounds.size() != 2 || bounds[0] < 1 || bounds[0] > bounds[1])
        space.fail(key, "pow2 must be [lo, hi] with 1 <= lo <= hi", &node);
      try {
        values = search::ParameterSpec::powers_of_two(key, bounds[0], bounds[1]).values();
      } catch (const UserError& e) {
        space.fail(key, e.what(), &node);
      }
    } else if (domain.has("categorical")) {
      const YAML::Node names = domain.raw("categorical");
      if (!names.IsSequence() || names.size() == 0)
        space.fail(key, "categorical must be a non-empty list of names", &node);
      for (const auto& name : names) {
        if (!name.IsScalar()) space.fail(key, "categorical must be a list of names", &name);
        values.push_back(name.Scalar());  // names, even where they look like numbers
      }
    } else {
      space.fail(key, "expected " + accepted, &node);
    }
    domain.finish({"range", "step", "pow2", "categorical"});
  } else {
    space.fail(key, "expected " + accepted, &node);
  }
  if (values.empty()) space.fail(key, "the domain has no value", &node);
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (search::same_value(values[i], values[j]))
        space.fail(key,
                   "value " + search::to_string(values[i]) + " is listed twice; each value may appear once",
                   &node);
  return values;
}

Objective parse_objective(ConfigReader& reader) {
  const std::string text = reader.optional<std::string>("objective", "latency", "latency, throughput or mfu");
  if (text == "latency") return Objective::latency;
  if (text == "throughput") return Objective::throughput;
  if (text == "mfu") return Objective::mfu;
  const YAML::Node node = reader.raw("objective");
  reader.fail("objective", "unknown objective '" + text + "'; accepted: latency, throughput, mfu", &node);
}

void emit_value(YAML::Emitter& out, const search::ParamValue& value) {
  if (std::holds_alternative<std::int64_t>(value))
    out << std::get<std::int64_t>(value);
  else if (std::holds_alternative<double>(value))
    out << std::get<double>(value);
  else
    out << std::get<std::string>(value);
}

void emit_json(YAML::Emitter& out, const Json& value) {
  if (value.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, v] : value.items()) {
      out << YAML::Key << k << YAML::Value;
      emit_json(out, v);
    }
    out << YAML::EndMap;
  } else if (value.is_array()) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& v : value) emit_json(out, v);
    out << YAML::EndSeq;
  } else if (value.is_string()) {
    out << value.get<std::string>();
  } else if (value.is_number_integer()) {
    out << value.get<std::int64_t>();
  } else if (value.is_number()) {
    out << value.get<double>();
  } else if (value.is_boolean()) {
    out << value.get<bool>();
  } else {
    out << YAML::Null;
  }
}

Json yaml_to_json(const YAML::Node& node) {
  if (!node || node.IsNull()) return nullptr;
  if (node.IsMap()) {
    Json out = Json::object();
    for (const auto& entry : node) out[entry.first.Scalar()] = yaml_to_json(entry.second);
    return out;
  }
  if (node.IsSequence()) {
    Json out = Json::array();
    for (const auto& item : node) out.push_back(yaml_to_json(item));
    return out;
  }
  const std::string text = node.Scalar();
  if (node.Tag() != "!") {  // unquoted scalars may be numbers or booleans
    try {
      std::size_t used = 0;
      const long long integer = std::stoll(text, &used);
      if (used == text.size()) return integer;
    } catch (const std::exception&) {
    }
    try {
      std::size_t used = 0;
      const double real = std::stod(text, &used);
      if (used == text.size()) return real;
    } catch (const std::exception&) {
    }
    if (text == "true") return true;
    if (text == "false") return false;
  }
  return text;
}

// kernel.shape and kernel.dtype of `kernel` against `signature`, into goal.
void read_shape_and_dtype(ConfigReader& kernel, const KernelSignature& signature, Goal& goal) {
  goal.shape = signature.default_shape;
  goal.kernel_name = signature.kernel;
  goal.shape_args = signature.shape_args;
  const YAML::Node shape = kernel.raw("shape");
  goal.default_shape = !shape || shape.IsNull();
  if (!goal.default_shape) {
    const std::string args = join(signature.shape_args, ", ");
    if (shape.IsSequence()) {
      if (shape.size() != signature.shape_args.size())
        kernel.fail("shape",
                    "expected " + std::to_string(signature.shape_args.size()) + " values [" + args + "]",
                    &shape);
      for (std::size_t i = 0; i < shape.size(); ++i) {
        try {
          goal.shape[signature.shape_args[i]] = shape[i].as<std::int64_t>();
        } catch (const YAML::Exception&) {
          const YAML::Node item = shape[i];
          kernel.fail("shape", "'" + item.Scalar() + "' is not an integer", &item);
        }
      }
    } else if (shape.IsMap()) {
      ConfigReader shape_reader(shape, kernel.file(), kernel.key_path("shape"));
      std::map<std::string, std::int64_t> given;
      for (const auto& arg : signature.shape_args)
        if (const auto value = shape_reader.maybe<std::int64_t>(arg)) given[arg] = *value;
      shape_reader.finish(signature.shape_args);
      const std::string reason = kernels::incomplete_shape_reason(signature.kernel, signature.shape_args,
                                                                  signature.default_shape, given);
      if (!reason.empty()) kernel.fail("shape", reason, &shape);
      goal.shape = given;
    } else {
      kernel.fail("shape", "expected a list [" + args + "] or a mapping {" + args + "}", &shape);
    }
    if (signature.check_shape) {
      const std::string reason = signature.check_shape(goal.shape);
      if (!reason.empty()) kernel.fail("shape", reason, &shape);
    }
  }
  const YAML::Node dtype_node = kernel.raw("dtype");
  goal.dtype = kernel.optional<std::string>("dtype", signature.dtypes.front());
  const auto dtype = sim::parse_dtype(goal.dtype);
  const std::string canonical = dtype ? std::string(sim::dtype_name(*dtype)) : goal.dtype;
  if (std::find(signature.dtypes.begin(), signature.dtypes.end(), canonical) == signature.dtypes.end()) {
    const std::string unmodelled = sim::unmodelled_dtype_reason(goal.dtype);
    kernel.fail("dtype",
                "kernel '" + signature.kernel + "' does not take dtype '" + goal.dtype + "'" +
                    (unmodelled.empty() ? "" : " (" + unmodelled + ")") +
                    "; accepted: " + join(signature.dtypes, ", "),
                &dtype_node);
  }
}

// The form of kernel.shape and kernel.dtype when the kernel source, not yet
// compiled, will declare the arguments and dtypes (read_shape_and_dtype
// checks them against the declaration).
void check_shape_form(ConfigReader& kernel) {
  const YAML::Node shape = kernel.raw("shape");
  if (shape && !shape.IsNull()) {
    if (shape.IsSequence()) {
      for (const auto& item : shape) {
        try {
          (void)item.as<std::int64_t>();
        } catch (const YAML::Exception&) {
          kernel.fail(
              "shape",
              "'" + (item.IsScalar() ? item.Scalar() : std::string("<nested>")) + "' is not an integer",
              &item);
        }
      }
    } else if (shape.IsMap()) {
      ConfigReader shape_reader(shape, kernel.file(), kernel.key_path("shape"));
      for (const auto& arg : shape_reader.keys()) (void)shape_reader.required<std::int64_t>(arg);
    } else {
      kernel.fail("shape",
                  "expected a list of values in the kernel's argument order or a mapping {argument: value}",
                  &shape);
    }
  }
  (void)kernel.optional<std::string>("dtype", "");
}

void read_kernel(ConfigReader& top, Goal& goal) {
  auto kernel = top.maybe_child("kernel");
  // A replayed or command target brings its own space: `kernel:` only names it.
  const TargetKind& target_kind = target_kind_registry().get(goal.target.kind);
  if (target_kind.brings_own_space) {
    goal.family = target_kind.own_space_family;
    if (kernel) {
      goal.family = kernel->optional<std::string>("family", goal.family);
      kernel->finish({"family"});
    }
    return;
  }
  // A kernel source without a family declares its shape arguments and dtypes.
  const bool declared_by_source = top.has("kernel_source") && (!kernel || !kernel->has("family"));
  if (declared_by_source) {
    if (kernel) {
      check_shape_form(*kernel);
      kernel->finish({"family", "shape", "dtype"});
      goal.kernel_spec = kernel->node();
    }
    return;
  }
  if (!kernel)
    top.fail_missing("kernel",
                     "missing required section (kernel: {family, shape, dtype}; or a kernel_source: that "
                     "declares them)");
  const YAML::Node family_node = kernel->raw("family");
  goal.family = kernel->required<std::string>("family");
  const auto& registry = kernels::family_registry();
  if (!registry.contains(goal.family))
    kernel->fail("family", "unknown kernel '" + goal.family + "'; accepted: " + registry.joined_names(),
                 &family_node);
  read_shape_and_dtype(*kernel, kernel_signature(registry.get(goal.family)), goal);
  kernel->finish({"family", "shape", "dtype"});
}

void read_target(ConfigReader& top, Goal& goal) {
  const YAML::Node node = top.raw("target");
  if (!node || node.IsNull()) return;
  if (node.IsScalar()) {
    goal.target.kind = "sim";
    goal.target.name = node.Scalar();
    return;
  }
  if (!node.IsMap()) top.fail("target", "expected a target name (trn1, trn2) or a mapping with kind", &node);
  goal.target.spec = node;
  ConfigReader target(node, top.file(), "target");
  const YAML::Node kind_node = target.raw("kind");
  const auto& kinds = target_kind_registry();
  goal.target.kind = target.required<std::string>("kind", kinds.joined_names());
  if (!kinds.contains(goal.target.kind))
    target.fail("kind", "unknown target kind '" + goal.target.kind + "'; accepted: " + kinds.joined_names(),
                &kind_node);
  kinds.get(goal.target.kind).read(target, goal);
}

const char* const kScreenCorrections = "refit, ratio or none";
// A round's device trials and simulated proposals: far beyond any real screen, and 32 x keep stays an int.
constexpr int kMaxScreenKeep = 4096;
constexpr int kMaxScreenPropose = 1000000;

// The goal's `screen:` (after its target, kernel and search are read).
void read_screen(ConfigReader& top, Goal& goal) {
  const YAML::Node node = top.raw("screen");
  if (!node || node.IsNull()) return;
  if (!node.IsMap()) top.fail("screen", "expected a mapping {target, keep, propose, correction}", &node);
  ConfigReader screen(node, top.file(), "screen");
  const bool command = goal.target.kind == "command";
  if (goal.target.kind != "sim" && !command)
    top.fail("screen",
             "a screen ranks candidates for a device target: kind command (or sim, as a stand-in device); "
             "a " +
                 goal.target.kind + " target's candidates cannot be simulated",
             &node);
  if (!goal.kernel_source.empty())
    top.fail("screen", "a screen simulates the built-in kernel families, not a kernel_source", &node);
  ScreenChoice choice;
  const YAML::Node target_node = screen.raw("target");
  choice.target = screen.required<std::string>("target", "a target name (trn1, trn2) or a target file");
  sim::TargetSpec screen_target;
  try {
    screen_target = sim::load_target(choice.target);
  } catch (const UserError& e) {
    screen.fail("target", e.what(), &target_node);
  }
  if (!command) {
    std::optional<sim::TargetSpec> device;
    try {
      device = sim::load_target(goal.target.name);
    } catch (const UserError&) {
      // The goal's own target does not load: its error comes when the run is prepared.
    }
    if (device && sim::target_content_hash(*device) == sim::target_content_hash(screen_target))
      screen.fail(
          "target",
          "'" + choice.target + "' simulates the same machine as the goal's target '" + goal.target.name +
              "': a screen saves nothing there; name a device target (kind command) or a stand-in device "
              "as the target",
          &target_node);
  }
  choice.keep =
      static_cast<int>(screen.optional_count("keep", goal.effective_batch_size(), 1, kMaxScreenKeep));
  const YAML::Node propose_node = screen.raw("propose");
  choice.propose = screen.optional<int>("propose", std::max(32 * choice.keep, 64), "a whole number > keep");
  if (choice.propose > kMaxScreenPropose)
    screen.fail("propose", std::to_string(choice.propose) +
                               " is out of range; accepted: more than keep, at most " +
                               std::to_string(kMaxScreenPropose));
  if (choice.propose <= choice.keep)
    screen.fail("propose",
                std::to_string(choice.propose) + " proposals for keep " + std::to_string(choice.keep) +
                    " leave the screen nothing to choose; accepted: more than keep",
                &propose_node);
  const YAML::Node correction_node = screen.raw("correction");
  choice.correction = screen.optional<std::string>("correction", "refit", kScreenCorrections);
  if (choice.correction != "refit" && choice.correction != "ratio" && choice.correction != "none")
    screen.fail("correction",
                "unknown correction '" + choice.correction + "'; accepted: " + kScreenCorrections,
                &correction_node);
  if (!command) {
    if (screen.has("kernel")) {
      const YAML::Node kernel_node = screen.raw("kernel");
      screen.fail("kernel",
                  "only for a command target: on a sim target the screen simulates the goal's kernel",
                  &kernel_node);
    }
    choice.family = goal.family;
    choice.shape = goal.shape;
    choice.dtype = goal.dtype;
  } else {
    auto kernel = screen.maybe_child("kernel");
    if (!kernel)
      screen.fail_missing("kernel",
                          "missing required key: a command target's screen names the kernel the device runs, "
                          "{family, variant, shape, dtype}");
    const YAML::Node family_node = kernel->raw("family");
    choice.family = kernel->required<std::string>("family", "a kernel family (autotune kernels)");
    const auto& registry = kernels::family_registry();
    if (!registry.contains(choice.family))
      kernel->fail("family", "unknown kernel '" + choice.family + "'; accepted: " + registry.joined_names(),
                   &family_node);
    const kernels::FamilySpec& family = registry.get(choice.family);
    const YAML::Node variant_node = kernel->raw("variant");
    choice.variant = kernel->optional<std::string>("variant", family.variants.front().name);
    const kernels::VariantSpec* variant = nullptr;
    for (const auto& v : family.variants)
      if (v.name == choice.variant) variant = &v;
    if (variant == nullptr)
      kernel->fail("variant",
                   "unknown variant '" + choice.variant + "' of kernel '" + family.name + "'; accepted: " +
                       join(family.variants, ", ", [](const kernels::VariantSpec& v) { return v.name; }),
                   &variant_node);
    Goal resolved;
    read_shape_and_dtype(*kernel, kernel_signature(family), resolved);
    choice.shape = resolved.shape;
    choice.dtype = resolved.dtype;
    kernel->finish({"family", "variant", "shape", "dtype"});
    // Every parameter the device program takes must be one the simulated variant has.
    for (const auto& [name, values] : goal.space) {
      const bool known = std::any_of(variant->params.begin(), variant->params.end(),
                                     [&](const kernels::ParamSpec& p) { return p.name == name; });
      if (!known)
        kernel->fail("variant",
                     "the goal's parameter '" + name + "' is not a parameter of " + family.name + "/" +
                         variant->name + "; accepted: " +
                         join(variant->params, ", ", [](const kernels::ParamSpec& p) { return p.name; }),
                     &variant_node);
    }
  }
  screen.finish({"target", "keep", "propose", "correction", "kernel"});
  goal.screen = choice;
}

}  // namespace

std::vector<search::ParamValue> read_space_domain(ConfigReader& space, const std::string& key) {
  return read_domain(space, key);
}

std::vector<std::string> read_variants(ConfigReader& reader) {
  if (!reader.has("variants")) return {};
  const YAML::Node node = reader.raw("variants");
  auto variants = reader.required<std::vector<std::string>>("variants", "a list of variant names");
  for (std::size_t i = 0; i < variants.size(); ++i)
    if (std::find(variants.begin(), variants.begin() + static_cast<std::ptrdiff_t>(i), variants[i]) !=
        variants.begin() + static_cast<std::ptrdiff_t>(i))
      reader.fail("variants", "variant '" + variants[i] + "' is listed twice", &node);
  return variants;
}

void read_kernel_section(ConfigReader& top, Goal& goal) { read_kernel(top, goal); }

Json yaml_value_json(const YAML::Node& node) { return yaml_to_json(node); }

void read_search_strategy(ConfigReader& search, std::string& strategy, Json& options) {
  const YAML::Node strategy_node = search.raw("strategy");
  strategy = search.optional<std::string>("strategy", strategy);
  if (!search::strategy_registry().contains(strategy))
    search.fail(
        "strategy",
        "unknown strategy '" + strategy + "'; accepted: " + search::strategy_registry().joined_names(),
        &strategy_node);
  const YAML::Node options_node = search.raw("options");
  options = yaml_to_json(options_node);
  if (options.is_null()) options = Json::object();
  if (!options.is_object()) search.fail("options", "expected a mapping of strategy options", &options_node);
  try {
    search::check_strategy_options(strategy, options);
  } catch (const UserError& e) {
    search.fail("options", e.what(), &options_node);
  }
}

KernelSignature kernel_signature(const kernels::FamilySpec& family) {
  KernelSignature signature;
  signature.kernel = family.name;
  signature.shape_args = family.shape_args;
  signature.default_shape = family.default_shape;
  for (auto d : family.dtypes) signature.dtypes.emplace_back(sim::dtype_name(d));
  signature.check_shape = family.check_shape;
  return signature;
}

const char* to_string(Objective objective) {
  switch (objective) {
    case Objective::latency:
      return "latency";
    case Objective::throughput:
      return "throughput";
    case Objective::mfu:
      return "mfu";
  }
  return "?";
}

Goal load_goal(const std::filesystem::path& path) {
  Goal goal;
  goal.file = path;
  const YAML::Node document = load_yaml_file(path);
  goal.where = KeyLocations(document, path.string());
  if (!document || document.IsNull()) throw UserError(path.string() + ": the goal file is empty");
  ConfigReader top(document, path.string());
  if (document.IsMap() && top.has("tasks") && !top.has("kernel")) {
    const YAML::Node tasks = top.raw("tasks");
    top.fail(
        "tasks",
        "this is a suite, not a goal (docs/suite.md); run it with `autotune suite " + path.string() + "`",
        &tasks);
  }
  goal.name = top.name("name", path.stem().string());

  read_target(top, goal);
  read_kernel(top, goal);
  if (top.has("kernel_source")) {
    const YAML::Node node = top.raw("kernel_source");
    std::filesystem::path source = top.required<std::string>("kernel_source", "a C++ kernel source path");
    if (source.is_relative()) source = goal.file.parent_path() / source;
    source = source.lexically_normal();
    if (std::filesystem::is_directory(source))
      top.fail("kernel_source", source.string() + " is a directory; a C++ source file is expected", &node);
    if (!std::filesystem::is_regular_file(source))
      top.fail("kernel_source", "file not found: " + source.string(), &node);
    if (!target_kind_registry().get(goal.target.kind).runs_kernel_sources)
      top.fail("kernel_source", "needs a simulated target (sim)", &node);
    goal.kernel_source = source;
  }
  goal.objective = parse_objective(top);

  if (auto section = top.maybe_child("goal")) {
    goal.improvement = section->maybe<double>("improvement");
    const YAML::Node improvement_node = section->node()["improvement"];
    if (goal.improvement && (*goal.improvement <= -1 || !std::isfinite(*goal.improvement)))
      section->fail("improvement", "must be a fraction above -1 (0.20 = 20% better)", &improvement_node);
    if (goal.improvement && goal.objective == Objective::latency && *goal.improvement >= 1)
      section->fail("improvement",
                    "must be below 1 for the latency objective: it is 1 - best / baseline "
                    "(0.5 = latency halved), which no latency above zero reaches at 1",
                    &improvement_node);
    const char* keys[] = {"latency_s", "throughput_flops_per_s", "mfu_percent"};
    const char* wanted = goal.objective == Objective::latency      ? "latency_s"
                         : goal.objective == Objective::throughput ? "throughput_flops_per_s"
                                                                   : "mfu_percent";
    for (const char* key : keys) {
      if (!section->has(key)) continue;
      const YAML::Node node = section->raw(key);
      if (std::string(key) != wanted)
        section->fail(
            key, std::string("does not match objective '") + to_string(goal.objective) + "'; use " + wanted,
            &node);
      goal.absolute = section->required<double>(key);
      if (*goal.absolute <= 0 || !std::isfinite(*goal.absolute))
        section->fail(key, "must be positive", &node);
      if (goal.objective == Objective::mfu && *goal.absolute > 100)
        section->fail(key, "must be at most 100: no kernel uses more than the whole of the peak", &node);
    }
    section->finish({"improvement", "latency_s", "throughput_flops_per_s", "mfu_percent"});
  }
  if (!goal.improvement && !goal.absolute) goal.improvement = 0.20;

  goal.max_iterations = top.optional<int>("max_iterations", 5);
  if (goal.max_iterations < 1) top.fail("max_iterations", "must be at least 1");
  if (auto budget = top.maybe_child("budget")) {
    goal.budget_evaluations = budget->optional<int>("evaluations", goal.budget_evaluations);
    goal.budget_wall_time_s = budget->optional_seconds("wall_time_s", goal.budget_wall_time_s);
    if (goal.budget_evaluations < 1) budget->fail("evaluations", "must be at least 1");
    budget->finish({"evaluations", "wall_time_s"});
  }
  if (auto search = top.maybe_child("search")) {
    read_search_strategy(*search, goal.strategy, goal.strategy_options);
    goal.batch_size = search->optional<int>("batch_size", 0);
    if (goal.batch_size < 0)
      search->fail("batch_size", "must be at least 1 (0: the number of parallel workers)");
    if (auto space = search->maybe_child("space")) {
      for (const auto& key : space->keys()) goal.space.emplace_back(key, read_domain(*space, key));
    }
    goal.constraints = search->optional<std::vector<std::string>>("constraints", {}, "a list of expressions");
    goal.transfer = search->optional<bool>("transfer", false);
    search->finish({"strategy", "options", "batch_size", "space", "constraints", "transfer"});
  }
  if (auto start = top.maybe_child("start")) {
    goal.start_variant = start->optional<std::string>("variant", "");
    const YAML::Node params = start->raw("params");
    if (params && !params.IsNull()) {
      if (!params.IsMap()) start->fail("params", "expected a mapping parameter: value", &params);
      goal.start_params = yaml_to_json(params);
    }
    start->finish({"variant", "params"});
  }
  goal.variants = read_variants(top);
  goal.parallel = static_cast<int>(top.optional_count("parallel", 1, 1, kMaxParallel));
  goal.timeout_s = top.optional_seconds("timeout_s", goal.timeout_s);
  if (auto verification = top.maybe_child("verification")) {
    goal.tolerance = verification->maybe<double>("tolerance");
    if (goal.tolerance && *goal.tolerance <= 0) verification->fail("tolerance", "must be positive");
    goal.verification_seed = verification->optional<std::uint64_t>("seed", 0);
    verification->finish({"tolerance", "seed"});
  }
  if (auto roles = top.maybe_child("roles")) {
    for (const auto& key : roles->keys()) {
      const auto role = roles->required<std::string>(key, kernels::accepted_roles());
      const auto parsed = kernels::parse_role(role);
      if (!parsed) roles->fail(key, "'" + role + "' is not a role; accepted: " + kernels::accepted_roles());
      goal.roles[key] = kernels::role_name(*parsed);
    }
  }
  goal.seed = top.optional<std::uint64_t>("seed", 0);
  goal.llm = top.raw("llm");
  if (goal.llm && !goal.llm.IsNull() && !goal.llm.IsMap())
    top.fail("llm", "expected a mapping {endpoint, model, api_key_env, timeout_s}", &goal.llm);
  if (auto llm_section = top.maybe_child("llm")) goal.llm_config = llm::parse_llm_config(*llm_section);
  goal.skills = top.raw("skills");
  goal.plugins = skills::parse_plugin_skills(top, goal.file.parent_path());
  read_screen(top, goal);
  top.finish(kTopKeys);
  return goal;
}

void resolve_kernel_shape(Goal& goal, const KernelSignature& signature) {
  if (!goal.kernel_spec || !goal.kernel_spec.IsMap()) {
    goal.shape = signature.default_shape;
    goal.kernel_name = signature.kernel;
    goal.shape_args = signature.shape_args;
    goal.default_shape = true;
    goal.dtype = signature.dtypes.empty() ? "" : signature.dtypes.front();
    return;
  }
  ConfigReader kernel(goal.kernel_spec, goal.file.string(), "kernel");
  read_shape_and_dtype(kernel, signature, goal);
}

namespace {

// In the kernel's argument order; a goal built in code (a model's kernel
// goals) may not have it, nor a kernel name: then its family's.
std::string goal_shape_text(const Goal& goal) {
  std::vector<std::string> order = goal.shape_args;
  if (order.empty() && kernels::family_registry().contains(goal.family))
    order = kernels::family_registry().get(goal.family).shape_args;
  std::vector<std::string> items;
  for (const auto& arg : order)
    if (const auto it = goal.shape.find(arg); it != goal.shape.end())
      items.push_back(arg + "=" + std::to_string(it->second));
  if (items.size() != goal.shape.size()) {
    items.clear();
    for (const auto& [arg, value] : goal.shape) items.push_back(arg + "=" + std::to_string(value));
  }
  return join(items, ",");
}

std::string goal_kernel_name(const Goal& goal) {
  return goal.kernel_name.empty() ? goal.family : goal.kernel_name;
}

}  // namespace

std::string kernel_text(const Goal& goal) {
  if (goal.shape.empty()) return "";
  return goal_kernel_name(goal) + ", shape " + goal_shape_text(goal) +
         (goal.default_shape ? " (the kernel's default: the goal gives no kernel.shape)" : "") + ", " +
         goal.dtype;
}

Json kernel_json(const Goal& goal) {
  if (goal.shape.empty()) return nullptr;
  return {{"name", goal_kernel_name(goal)},
          {"shape", goal.shape},
          {"shape_source", goal.default_shape ? "default" : "goal"},
          {"dtype", goal.dtype}};
}

std::string to_yaml(const Goal& goal) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << goal.name;
  out << YAML::Key << "kernel" << YAML::Value << YAML::BeginMap;
  if (!goal.family.empty()) out << YAML::Key << "family" << YAML::Value << goal.family;
  if (!goal.shape.empty()) {
    out << YAML::Key << "shape" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [k, v] : goal.shape) out << YAML::Key << k << YAML::Value << v;
    out << YAML::EndMap;
  }
  if (!goal.dtype.empty()) out << YAML::Key << "dtype" << YAML::Value << goal.dtype;
  out << YAML::EndMap;
  if (!goal.kernel_source.empty())
    out << YAML::Key << "kernel_source" << YAML::Value << goal.kernel_source.string();
  out << YAML::Key << "target" << YAML::Value;
  const TargetKind& target_kind = target_kind_registry().get(goal.target.kind);
  if (target_kind.write)
    target_kind.write(out, goal);
  else
    out << goal.target.spec;
  out << YAML::Key << "objective" << YAML::Value << to_string(goal.objective);
  out << YAML::Key << "goal" << YAML::Value << YAML::BeginMap;
  if (goal.improvement) out << YAML::Key << "improvement" << YAML::Value << *goal.improvement;
  if (goal.absolute)
    out << YAML::Key
        << (goal.objective == Objective::latency      ? "latency_s"
            : goal.objective == Objective::throughput ? "throughput_flops_per_s"
                                                      : "mfu_percent")
        << YAML::Value << *goal.absolute;
  out << YAML::EndMap;
  out << YAML::Key << "max_iterations" << YAML::Value << goal.max_iterations;
  out << YAML::Key << "budget" << YAML::Value << YAML::BeginMap << YAML::Key << "evaluations" << YAML::Value
      << goal.budget_evaluations << YAML::Key << "wall_time_s" << YAML::Value << goal.budget_wall_time_s
      << YAML::EndMap;
  out << YAML::Key << "search" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "strategy" << YAML::Value << goal.strategy;
  out << YAML::Key << "options" << YAML::Value;
  emit_json(out, goal.strategy_options);
  out << YAML::Key << "batch_size" << YAML::Value << goal.effective_batch_size();
  // Written only when set, so goals resolved before the key existed read the same.
  if (goal.transfer) out << YAML::Key << "transfer" << YAML::Value << true;
  out << YAML::Key << "space" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, values] : goal.space) {
    out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& v : values) emit_value(out, v);
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  out << YAML::Key << "constraints" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : goal.constraints) out << c;
  out << YAML::EndSeq << YAML::EndMap;
  if (goal.screen) {
    const ScreenChoice& screen = *goal.screen;
    out << YAML::Key << "screen" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "target" << YAML::Value << screen.target;
    out << YAML::Key << "keep" << YAML::Value << screen.keep;
    out << YAML::Key << "propose" << YAML::Value << screen.propose;
    out << YAML::Key << "correction" << YAML::Value << screen.correction;
    if (goal.target.kind == "command") {
      out << YAML::Key << "kernel" << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "family" << YAML::Value << screen.family;
      out << YAML::Key << "variant" << YAML::Value << screen.variant;
      out << YAML::Key << "shape" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : screen.shape) out << YAML::Key << k << YAML::Value << v;
      out << YAML::EndMap;
      out << YAML::Key << "dtype" << YAML::Value << screen.dtype << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::Key << "start" << YAML::Value << YAML::BeginMap << YAML::Key << "variant" << YAML::Value
      << goal.start_variant << YAML::Key << "params" << YAML::Value;
  emit_json(out, goal.start_params);
  out << YAML::EndMap;
  out << YAML::Key << "variants" << YAML::Value << YAML::Flow << goal.variants;
  if (!goal.roles.empty()) {
    out << YAML::Key << "roles" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : goal.roles) out << YAML::Key << k << YAML::Value << v;
    out << YAML::EndMap;
  }
  out << YAML::Key << "parallel" << YAML::Value << goal.parallel;
  out << YAML::Key << "timeout_s" << YAML::Value << goal.timeout_s;
  out << YAML::Key << "verification" << YAML::Value << YAML::BeginMap;
  if (goal.tolerance) out << YAML::Key << "tolerance" << YAML::Value << *goal.tolerance;
  out << YAML::Key << "seed" << YAML::Value << goal.verification_seed << YAML::EndMap;
  out << YAML::Key << "seed" << YAML::Value << goal.seed;
  if (goal.llm && !goal.llm.IsNull()) out << YAML::Key << "llm" << YAML::Value << goal.llm;
  if (goal.skills && !goal.skills.IsNull()) out << YAML::Key << "skills" << YAML::Value << goal.skills;
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace autotune::orchestrator
