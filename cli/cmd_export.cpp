// autotune export RUN [TRIAL] [--nki] [--db F] -o FILE
// autotune export --kernel K [--variant V] [--shape A=1,B=2] [--dtype D] [--param N=V]... [--target T]
//                 [--nki] -o FILE
//
// The second form exports a configuration that is no stored trial (what a
// command target's measuring program does for each candidate it is given,
// examples/trainium/), checked like `autotune profile` checks it: known
// family, variant and parameters, a shape and dtype the family takes, the
// variant's constraints on the target.
//
// With --nki, writes the trial's kernel as an NKI kernel in Python for the
// Neuron SDK (kernels/external/export_nki.hpp), for NKI 0.6 or with
// --nki-version legacy for the neuronxcc.nki namespace. With --cachefile,
// writes every trial of the run as a Kernel Tuner cachefile (below), the
// space a sweep measured replayed offline by `autotune search-bench` or a
// replay target. Otherwise writes a
// standalone C++ source for one trial (default: the run's best
// verified trial): the variant's template instantiated with the trial's
// parameters, declared as a user kernel, with a header comment naming the
// run, goal, variant, parameters, shape, dtype, target and the measured
// figures (kernels/external/export_source.hpp). `autotune profile
// --kernel-source FILE.cc` measures it again in an isolated worker.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "cli/kernel_flags.hpp"
#include "cli/store_options.hpp"
#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/outcome.hpp"
#include "core/output_file.hpp"
#include "core/text.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/external/export_nki.hpp"
#include "kernels/external/export_source.hpp"
#include "report/stored_kernel.hpp"
#include "sim/program.hpp"
#include "sim/target.hpp"
#include "skills/benchmark_runner.hpp"
#include "skills/targets/replay_target.hpp"
#include "store/store.hpp"

namespace autotune::cli {
namespace {

struct ExportOptions {
  DatabaseOption db;
  std::optional<int64_t> run;
  std::string kernel, variant, shape, dtype, target;
  std::vector<std::string> params;
  std::optional<int64_t> trial;
  std::string output;
  bool nki = false;
  std::optional<std::string> nki_version;  // given: --nki-version
  bool cachefile = false;
};

// The NKI to write for: --nki-version, 0.6 when not given.
std::string nki_version(const ExportOptions& o) { return o.nki_version.value_or("0.6"); }

// SBUF bytes per partition of the run's simulated target; trn1's when the
// goal's target cannot be read again.
std::int64_t target_sbuf_bytes(const std::string& name) {
  try {
    return sim::load_target(name).sbuf_bytes_per_partition;
  } catch (const UserError&) {
    return sim::load_target("trn1").sbuf_bytes_per_partition;
  }
}

// Writes `source` to o.output (stdout for "" or "-"), saying what was written.
int write_export(const ExportOptions& o, const std::string& source, const std::string& what) {
  if (o.output.empty() || o.output == "-") {
    std::cout << source;
    return 0;
  }
  write_output_file(o.output, source, "-o", store::database_files(o.db.path()));
  std::cout << "wrote " << o.output << (o.nki ? " (NKI)" : "") << ": " << what << "\n";
  return 0;
}

// The configuration given by --kernel, --variant, --shape, --dtype, --param and --target.
int export_configuration(const ExportOptions& o) {
  const auto& family = kernels::family_registry().get(o.kernel);
  const kernels::VariantSpec& variant =
      family.variant(o.variant.empty() ? family.baseline_variant : o.variant);
  const std::string target_name = o.target.empty() ? "trn1" : o.target;
  const sim::TargetSpec target = sim::load_target(target_name);
  const kernels::Shape shape = kernels::parse_shape(family, o.shape);
  const sim::Dtype dtype = resolve_dtype(family, o.dtype);
  const kernels::ParamValues params = kernels::resolve_params(variant, parse_param_flags(o.params));
  check_constraints(variant, params, target, shape, dtype);
  kernels::external::ExportProvenance provenance;
  provenance.run = "parameters given to autotune export --kernel (no stored trial)";
  provenance.target = target_name;
  const std::string name = kernels::external::export_kernel_name(family.name, variant.name, "given");
  const std::string source =
      o.nki ? kernels::external::export_nki(family, variant, shape, dtype, params, name, provenance,
                                            target.sbuf_bytes_per_partition,
                                            kernels::external::parse_nki_version(nki_version(o)))
            : kernels::external::export_source(family, variant, shape, dtype, params, name, provenance);
  return write_export(o, source, family.name + " / " + variant.name + ", the parameters given");
}

// A parameter value as Kernel Tuner writes it into a cache key (Python's str()).
std::string key_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_number_float()) {
    std::string text = value.dump();
    if (text.find_first_of(".eE") == std::string::npos) text += ".0";
    return text;
  }
  return value.dump();
}

// What a measured trial records in a cachefile: the objective's field, its
// value and its individual runs.
struct RecordedValue {
  std::string field;
  double value = 0;
  nlohmann::json runs = nlohmann::json::array();
};

// A measured trial's figure in the units its target measured: a replayed
// trial's recorded value as recorded (metrics "recorded_<field>"); a command
// trial whose objective is another metric than latency_s, that metric
// (metrics "objective"); otherwise "time", the latency in ms (the cachefile
// convention). Runs come from the trial's repeats: numbers, or each run's
// JSON object (a command target's).
RecordedValue recorded_value(const store::Trial& trial, double latency_s) {
  RecordedValue out{"time", latency_s * 1e3};
  std::string metric = "latency_s";
  double scale = 1e3;
  for (const auto& [key, value] : trial.metrics.items())
    if (key.starts_with("recorded_") && value.is_number()) {
      out = {key.substr(9), value.get<double>()};
      metric = key;
      scale = 1;
    }
  if (const auto named = trial.metrics.find("objective");
      named != trial.metrics.end() && named->is_string() && trial.metric(named->get<std::string>())) {
    out = {named->get<std::string>(), *trial.metric(named->get<std::string>())};
    metric = out.field;
    scale = 1;
  }
  if (trial.repeats.is_array())
    for (const auto& r : trial.repeats) {
      if (r.is_number())
        out.runs.push_back(r.get<double>() * scale);
      else if (r.is_object() && r.contains(metric) && r[metric].is_number())
        out.runs.push_back(r[metric].get<double>() * scale);
    }
  if (out.runs.empty()) out.runs.push_back(out.value);
  return out;
}

// A trial that says nothing about its configuration: stopped by the run's
// wall-time budget before it finished (skills::kBudgetCutError).
bool never_fully_measured(const store::Trial& trial) {
  return trial.status == Outcome::timeout && trial.error == skills::kBudgetCutError;
}

// The value `text` (as the stored goal writes a domain's value) stands for,
// typed as the trials store it when one of them has it, else as YAML reads it.
nlohmann::json typed_value(const std::string& text, const std::vector<nlohmann::json>& seen) {
  for (const auto& value : seen)
    if (key_text(value) == text || value.dump() == text) return value;
  try {
    std::size_t used = 0;
    const long long integer = std::stoll(text, &used);
    if (used == text.size()) return integer;
    const double number = std::stod(text, &used);
    if (used == text.size()) return number;
  } catch (const std::exception&) {
  }
  return text;
}

// The parameters a run's stored goal declares, in order, with their values:
// a replay's recording's tune_params (when the file can still be read), else
// the goal's search.space, its values typed as the trials store them.
std::vector<std::pair<std::string, nlohmann::json>> declared_space(
    const YAML::Node& goal, const std::map<std::string, std::vector<nlohmann::json>>& seen) {
  std::vector<std::pair<std::string, nlohmann::json>> declared;
  const YAML::Node target = goal["target"];
  if (target && target.IsMap() && target["kind"] && target["kind"].Scalar() == "replay" &&
      target["cachefile"]) {
    try {
      std::ifstream in(target["cachefile"].Scalar());
      const nlohmann::json recording =
          parse_json(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
      for (const auto& name : recording.at("tune_params_keys"))
        declared.emplace_back(name.get<std::string>(),
                              recording.at("tune_params").at(name.get<std::string>()));
      return declared;
    } catch (const nlohmann::json::exception&) {  // gone or changed: the goal and the trials say it
      declared.clear();
    }
  }
  const YAML::Node space = goal["search"] && goal["search"].IsMap() ? goal["search"]["space"] : YAML::Node();
  if (!space || !space.IsMap()) return declared;
  for (const auto& entry : space) {
    const std::string name = entry.first.Scalar();
    const auto trial_values = seen.find(name);
    nlohmann::json values = nlohmann::json::array();
    if (entry.second.IsSequence())
      for (const auto& v : entry.second)
        if (v.IsScalar())
          values.push_back(typed_value(
              v.Scalar(), trial_values == seen.end() ? std::vector<nlohmann::json>{} : trial_values->second));
    declared.emplace_back(name, values);
  }
  return declared;
}

// The space of a run that is no built-in family (a command target, a replay,
// a kernel source): the parameters its trials hold, in the order its goal
// declares them (declared_space; sorted when it does not declare them all),
// each with the declared values in order, then any other value its trials
// hold.
void stored_space(const YAML::Node& goal, const std::vector<store::Trial>& trials,
                  std::vector<std::string>& keys, nlohmann::ordered_json& tune_params) {
  std::map<std::string, std::vector<nlohmann::json>> seen;
  for (const auto& trial : trials)
    if (trial.params.is_object())
      for (const auto& [name, value] : trial.params.items()) {
        auto& values = seen[name];
        if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
      }
  auto declared = declared_space(goal, seen);
  const bool declared_all = std::all_of(seen.begin(), seen.end(), [&](const auto& entry) {
    return std::any_of(declared.begin(), declared.end(),
                       [&](const auto& d) { return d.first == entry.first; });
  });
  if (!declared_all) {
    declared.clear();
    for (const auto& [name, values] : seen) declared.emplace_back(name, nlohmann::json::array());
  }
  for (auto& [name, values] : declared) {
    if (!seen.contains(name)) continue;  // a parameter no trial has is no parameter of the export
    std::vector<nlohmann::json> rest;
    for (const auto& v : seen[name])
      if (std::find(values.begin(), values.end(), v) == values.end()) rest.push_back(v);
    std::sort(rest.begin(), rest.end());
    for (auto& v : rest) values.push_back(std::move(v));
    keys.push_back(name);
    tune_params[name] = values;
  }
}

// Every trial of the run as a Kernel Tuner cachefile: a built-in family's
// tune_params are the variant's declared domains in declaration order (a
// command target's, a replay's or a kernel source's: the goal's space and the
// values its trials hold); a measured trial's record holds its figure under
// the objective's field (recorded_value), and a trial that did not run
// correctly "RuntimeFailedConfig" (did not fit the target:
// "CompilationFailedConfig"), so it costs an evaluation in a replay. A trial
// the run's wall-time budget stopped was never fully measured and is left out,
// as are configurations the constraints rule out (never trials: outside the
// space). One variant only: a cachefile has one parameter list. A run with no
// measured trial is refused: search-bench and replay targets refuse such a
// file.
int export_cachefile(const ExportOptions& o) {
  if (o.trial) throw UserError("--cachefile exports every trial of a run; give RUN without TRIAL");
  if (o.nki) throw UserError("--cachefile and --nki are two different exports; give one");
  auto store = open_store_for_reading(o.db);
  const auto run = store->run(*o.run);
  if (!run)
    throw UserError("no run " + std::to_string(*o.run) + " in " + store->location() +
                    " (see `autotune runs`)");
  const std::string of_run = "run " + std::to_string(run->id);
  const auto trials = store->trials(*o.run, std::nullopt, store::Ranking{});
  if (trials.empty()) throw UserError(of_run + " has no trials to export");
  for (const auto& trial : trials)
    if (trial.variant != trials.front().variant)
      throw UserError(of_run + " measured variants " + trials.front().variant + " and " + trial.variant +
                      "; a cachefile holds one variant's parameters: sweep a goal with `variants: [V]`");
  const YAML::Node goal = load_yaml_text(run->goal_yaml, of_run + "'s stored goal");
  const YAML::Node target = goal["target"];
  const bool simulated_family =
      !goal["kernel_source"] && (!target || target.IsScalar() ||
                                 (target.IsMap() && target["kind"] && target["kind"].Scalar() == "sim"));
  // A replayed failure is written back as the recording has it.
  const bool replayed = target && target.IsMap() && target["kind"] && target["kind"].Scalar() == "replay";
  std::vector<std::string> keys;
  nlohmann::ordered_json tune_params = nlohmann::ordered_json::object();
  nlohmann::ordered_json document = nlohmann::ordered_json::object();
  std::string what;
  if (simulated_family) {
    const report::StoredKernel kernel = report::resolve_stored_kernel(*run, trials.front());
    const kernels::VariantSpec& variant = *kernel.variant;
    for (const auto& p : variant.params) {
      keys.push_back(p.name);
      tune_params[p.name] = p.values;
    }
    nlohmann::json problem_size = nlohmann::json::array();
    for (const auto& arg : kernel.family->shape_args) problem_size.push_back(kernel.shape.at(arg));
    document["device_name"] = kernel.target_name;
    document["kernel_name"] = kernel.family->name + "/" + variant.name;
    document["problem_size"] = problem_size;
    document["dtype"] = std::string(sim::dtype_name(kernel.dtype));
    what = kernel.family->name + " / " + variant.name;
  } else {
    stored_space(goal, trials, keys, tune_params);
    const std::string& variant = trials.front().variant;
    document["device_name"] = run->target;
    document["kernel_name"] = run->kernel == variant ? variant : run->kernel + "/" + variant;
    what = run->kernel == variant ? variant : run->kernel + " / " + variant;
  }
  if (keys.empty())
    throw UserError(of_run + ": variant " + trials.front().variant +
                    " has no parameters, so its space is one configuration; nothing to replay");

  nlohmann::ordered_json cache = nlohmann::ordered_json::object();
  std::optional<std::string> field;
  int left_out = 0, measured = 0;
  for (const auto& trial : trials) {
    if (never_fully_measured(trial)) {
      ++left_out;
      continue;
    }
    std::vector<std::string> parts;
    nlohmann::ordered_json record = nlohmann::ordered_json::object();
    for (const auto& name : keys) {
      if (!trial.params.contains(name))
        throw UserError(of_run + ", trial " + std::to_string(trial.id) + ": no value for parameter " + name);
      parts.push_back(key_text(trial.params.at(name)));
      record[name] = trial.params.at(name);
    }
    const std::string key = join(parts, ",");
    if (cache.contains(key)) continue;  // a configuration measured again: its first trial stands
    const auto latency = trial.metric("latency_s");
    std::string failure;
    if (is_measured(trial.status) && latency) {
      RecordedValue value = recorded_value(trial, *latency);
      if (field && *field != value.field)
        throw UserError(of_run + ": its trials record their figure as '" + *field + "' and as '" +
                        value.field + "'; a cachefile has one objective");
      field = value.field;
      record[value.field] = value.value;
      record["times"] = value.runs;
      ++measured;
    } else {
      record["time"] = replayed && trial.error.starts_with(skills::kRecordedFailurePrefix)
                           ? trial.error.substr(std::string_view(skills::kRecordedFailurePrefix).size())
                       : trial.status == Outcome::invalid ? "CompilationFailedConfig"
                                                          : "RuntimeFailedConfig";
    }
    cache[key] = record;
  }
  if (measured == 0)
    throw UserError(of_run + " has no measured trial (" + std::to_string(cache.size()) + " failed" +
                    (left_out ? ", " + std::to_string(left_out) + " stopped by its wall-time budget" : "") +
                    "): search-bench and replay targets refuse a cachefile in which every configuration "
                    "failed");
  // A failure sits in the objective's field, where readers look for it.
  if (*field != "time")
    for (auto& record : cache)
      if (record.contains("time") && record["time"].is_string()) {
        record[*field] = record["time"];
        record.erase("time");
      }
  document["simulator_version"] = run->simulator_version;
  document["source"] = "autotune " + of_run + " (goal " + run->goal_name + ")";
  document["tune_params_keys"] = keys;
  document["tune_params"] = tune_params;
  document["objective"] = *field;
  document["cache"] = cache;
  std::string summary = std::to_string(cache.size()) + " configurations of " + what + " from " + of_run +
                        " as a Kernel Tuner cachefile";
  if (left_out)
    summary += "; " + std::to_string(left_out) + " left out, stopped by the run's wall-time budget before " +
               (left_out == 1 ? "its measurement" : "their measurements") + " finished";
  return write_export(o, document.dump(1) + "\n", summary);
}

int run_export(const ExportOptions& o) {
  if (o.cachefile) {
    if (!o.run) throw UserError("--cachefile exports a run's trials: give RUN (see `autotune runs`)");
    if (!o.kernel.empty()) throw UserError("--cachefile exports a stored run; it does not take --kernel");
    std::vector<std::string> given;
    if (!o.variant.empty()) given.push_back("--variant");
    if (!o.shape.empty()) given.push_back("--shape");
    if (!o.dtype.empty()) given.push_back("--dtype");
    if (!o.params.empty()) given.push_back("--param");
    if (!o.target.empty()) given.push_back("--target");
    if (o.nki_version) given.push_back("--nki-version");
    if (!given.empty())
      throw UserError("--cachefile exports every trial of the run as measured; it does not take " +
                      join(given, ", "));
    return export_cachefile(o);
  }
  if (!o.nki && o.nki_version) throw UserError("--nki-version is for --nki exports");
  if (o.nki) kernels::external::parse_nki_version(nki_version(o));  // refused before any work
  const bool given = !o.kernel.empty();
  const bool configuration_flags =
      !o.variant.empty() || !o.shape.empty() || !o.dtype.empty() || !o.target.empty() || !o.params.empty();
  if (given && (o.run || o.trial))
    throw UserError("give RUN [TRIAL] (a stored trial) or --kernel K with its configuration, not both");
  if (given) return export_configuration(o);
  if (!o.run)
    throw UserError(configuration_flags
                        ? "--variant, --shape, --dtype, --param and --target describe a configuration of "
                          "--kernel K; give --kernel too, or RUN [TRIAL] for a stored trial"
                        : "give RUN [TRIAL] (see `autotune runs`) or --kernel K (see `autotune kernels`)");
  if (configuration_flags)
    throw UserError(
        "--variant, --shape, --dtype, --param and --target go with --kernel; a stored trial (RUN "
        "[TRIAL]) brings its own configuration");
  auto store = open_store_for_reading(o.db);
  const auto run = store->run(*o.run);
  if (!run)
    throw UserError("no run " + std::to_string(*o.run) + " in " + store->location() +
                    " (see `autotune runs`)");
  std::optional<store::Trial> trial;
  if (o.trial) {
    trial = store->trial(*o.run, *o.trial);
    if (!trial)
      throw UserError("run " + std::to_string(*o.run) + " has no trial " + std::to_string(*o.trial) +
                      " (see `autotune trials " + std::to_string(*o.run) + "`)");
  } else {
    if (run->best_trial) trial = store->trial(*o.run, *run->best_trial);
    if (!trial || !is_measured(trial->status)) trial = store->best_trial(*o.run);
    if (!trial) throw UserError("run " + std::to_string(*o.run) + " has no verified trial to export");
  }

  // Shape, dtype and target come from the goal as the run resolved it.
  const report::StoredKernel kernel = report::resolve_stored_kernel(*run, *trial);
  const kernels::FamilySpec& family = *kernel.family;
  const kernels::VariantSpec* variant = kernel.variant;
  kernels::external::ExportProvenance provenance;
  provenance.run = "run " + std::to_string(run->id) + " (goal " + run->goal_name + ", seed " +
                   std::to_string(run->seed) + ", simulator " + run->simulator_version + ")";
  provenance.trial =
      "trial " + std::to_string(trial->id) + " (" + std::string(to_string(trial->status)) + ")";
  provenance.target = kernel.target_name;
  provenance.metrics = trial->metrics.is_object() ? trial->metrics : nlohmann::json::object();
  provenance.verification = trial->verification;
  const std::string name = kernels::external::export_kernel_name(
      family.name, variant->name, "run" + std::to_string(run->id) + "_trial" + std::to_string(trial->id));
  const std::string source =
      o.nki ? kernels::external::export_nki(family, *variant, kernel.shape, kernel.dtype, kernel.params, name,
                                            provenance, target_sbuf_bytes(kernel.target_name),
                                            kernels::external::parse_nki_version(nki_version(o)))
            : kernels::external::export_source(family, *variant, kernel.shape, kernel.dtype, kernel.params,
                                               name, provenance);

  return write_export(o, source,
                      family.name + " / " + variant->name + ", trial " + std::to_string(trial->id) +
                          " of run " + std::to_string(run->id));
}

const CommandRegistration registration{
    "export",
    "Write a trial's kernel as a standalone C++ source, or with --nki as an NKI kernel in Python for "
    "Trainium",
    [](CLI::App& command) -> CommandAction {
      auto o = std::make_shared<ExportOptions>();
      command.add_option("RUN", o->run, "Run id (see `autotune runs`); or give --kernel instead")
          ->check(check_id);
      auto* positional =
          command.add_option("TRIAL", o->trial, "Trial id (default: the run's best verified trial)")
              ->check(check_id);
      command.add_option("--trial", o->trial, "Trial id, as TRIAL")->excludes(positional)->check(check_id);
      command.add_option("-o,--output", o->output, "Where to write the source (default: stdout)");
      command.add_flag(
          "--nki", o->nki,
          "Write an NKI kernel (Python, @nki.jit) with the variant's tiles, loops and buffers and the "
          "trial's parameters, instead of C++ against autotune's kernel API");
      command.add_option(
          "--nki-version", o->nki_version,
          "NKI to write for: 0.6 (default; NKI 0.6 in Neuron SDK 2.32, `import nki`) or legacy "
          "(the neuronxcc.nki namespace of SDKs before 2.27)");
      command.add_flag("--cachefile", o->cachefile,
                       "Write every trial of RUN (a sweep's space) as a Kernel Tuner cachefile: "
                       "`autotune search-bench` and replay targets take it");
      command.add_option(
          "--kernel", o->kernel,
          "Export a configuration that is no stored trial: kernel family (see `autotune kernels`)");
      command
          .add_option("--variant", o->variant, "With --kernel: the variant (default: the family's baseline)")
          ->check(check_not_empty);
      command.add_option("--shape", o->shape,
                         "With --kernel: shape, e.g. M=256,N=512,K=512 (default: the family's)");
      command.add_option("--dtype", o->dtype, "With --kernel: data type (default: the family's first)")
          ->check(check_not_empty);
      command.add_option("--param", o->params,
                         "With --kernel: parameter NAME=VALUE; repeatable (others take their defaults)");
      command.add_option("--target", o->target, "With --kernel: target name or YAML path (default: trn1)");
      add_database_option(command, o->db);
      return [o] { return run_export(*o); };
    }};

}  // namespace
}  // namespace autotune::cli
