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

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/kernel_flags.hpp"
#include "cli/store_options.hpp"
#include "core/error.hpp"
#include "core/outcome.hpp"
#include "core/output_file.hpp"
#include "core/text.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/external/export_nki.hpp"
#include "kernels/external/export_source.hpp"
#include "report/stored_kernel.hpp"
#include "sim/program.hpp"
#include "sim/target.hpp"
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
  std::string nki_version = "0.6";
  bool cachefile = false;
};

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
                                            kernels::external::parse_nki_version(o.nki_version))
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

// Every trial of the run as a Kernel Tuner cachefile: tune_params are the
// variant's declared domains in declaration order, a measured trial's record
// holds its latency in ms as "time" (the cachefile convention), and a trial
// that did not run correctly holds "RuntimeFailedConfig" (did not fit the
// target: "CompilationFailedConfig"), so it costs an evaluation in a replay.
// Configurations the constraints rule out were never trials and are absent:
// outside the space. One variant only: a cachefile has one parameter list.
int export_cachefile(const ExportOptions& o) {
  if (o.trial) throw UserError("--cachefile exports every trial of a run; give RUN without TRIAL");
  if (o.nki) throw UserError("--cachefile and --nki are two different exports; give one");
  auto store = open_store_for_reading(o.db);
  const auto run = store->run(*o.run);
  if (!run)
    throw UserError("no run " + std::to_string(*o.run) + " in " + store->location() +
                    " (see `autotune runs`)");
  const auto trials = store->trials(*o.run, std::nullopt, store::Ranking{});
  if (trials.empty()) throw UserError("run " + std::to_string(run->id) + " has no trials to export");
  for (const auto& trial : trials)
    if (trial.variant != trials.front().variant)
      throw UserError("run " + std::to_string(run->id) + " measured variants " + trials.front().variant +
                      " and " + trial.variant +
                      "; a cachefile holds one variant's parameters: sweep a goal with `variants: [V]`");
  const report::StoredKernel kernel = report::resolve_stored_kernel(*run, trials.front());
  const kernels::VariantSpec& variant = *kernel.variant;
  nlohmann::ordered_json tune_params = nlohmann::ordered_json::object();
  std::vector<std::string> keys;
  for (const auto& p : variant.params) {
    keys.push_back(p.name);
    tune_params[p.name] = p.values;
  }
  if (keys.empty())
    throw UserError("run " + std::to_string(run->id) + ": variant " + variant.name +
                    " has no parameters, so its space is one configuration; nothing to replay");
  nlohmann::json problem_size = nlohmann::json::array();
  for (const auto& arg : kernel.family->shape_args) problem_size.push_back(kernel.shape.at(arg));
  nlohmann::ordered_json cache = nlohmann::ordered_json::object();
  for (const auto& trial : trials) {
    std::vector<std::string> parts;
    nlohmann::ordered_json record = nlohmann::ordered_json::object();
    for (const auto& name : keys) {
      if (!trial.params.contains(name))
        throw UserError("run " + std::to_string(run->id) + ", trial " + std::to_string(trial.id) +
                        ": no value for parameter " + name);
      parts.push_back(key_text(trial.params.at(name)));
      record[name] = trial.params.at(name);
    }
    const std::string key = join(parts, ",");
    if (cache.contains(key)) continue;  // a configuration measured again: its first trial stands
    const auto latency = trial.metric("latency_s");
    if (is_measured(trial.status) && latency) {
      record["time"] = *latency * 1e3;
      nlohmann::json times = nlohmann::json::array();
      if (trial.repeats.is_array())
        for (const auto& r : trial.repeats)
          if (r.is_number()) times.push_back(r.get<double>() * 1e3);
      record["times"] = times.empty() ? nlohmann::json::array({*latency * 1e3}) : times;
    } else {
      record["time"] = trial.status == Outcome::invalid ? "CompilationFailedConfig" : "RuntimeFailedConfig";
    }
    cache[key] = record;
  }
  const nlohmann::ordered_json document = {
      {"device_name", kernel.target_name},
      {"kernel_name", kernel.family->name + "/" + variant.name},
      {"problem_size", problem_size},
      {"dtype", std::string(sim::dtype_name(kernel.dtype))},
      {"simulator_version", run->simulator_version},
      {"source", "autotune run " + std::to_string(run->id) + " (goal " + run->goal_name + ")"},
      {"tune_params_keys", keys},
      {"tune_params", tune_params},
      {"objective", "time"},
      {"cache", cache}};
  return write_export(o, document.dump(1) + "\n",
                      std::to_string(cache.size()) + " configurations of " + kernel.family->name + " / " +
                          variant.name + " from run " + std::to_string(run->id) +
                          " as a Kernel Tuner cachefile");
}

int run_export(const ExportOptions& o) {
  if (o.cachefile) {
    if (!o.run) throw UserError("--cachefile exports a run's trials: give RUN (see `autotune runs`)");
    if (!o.kernel.empty()) throw UserError("--cachefile exports a stored run; it does not take --kernel");
    return export_cachefile(o);
  }
  if (!o.nki && o.nki_version != "0.6") throw UserError("--nki-version is for --nki exports");
  if (o.nki) kernels::external::parse_nki_version(o.nki_version);  // refused before any work
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
                                            kernels::external::parse_nki_version(o.nki_version))
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
