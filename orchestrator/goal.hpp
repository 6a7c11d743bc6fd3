#pragma once
// A tuning goal, read from YAML (docs/goals.md lists every key and default).
//
// load_goal() reads strictly: unknown keys, wrong types, unknown kernels,
// variants and parameters, values outside a parameter's domain and infeasible
// spaces are UserErrors naming file:line:key, raised before anything runs.
// The Goal it returns is resolved: every default is filled in, and
// to_yaml(goal) is what the store keeps with the run.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config_reader.hpp"
#include "orchestrator/llm/llm_client.hpp"
#include "search/parameter.hpp"
#include "skills/candidate.hpp"
#include "skills/plugin/plugin_skill.hpp"

namespace autotune::kernels {
struct FamilySpec;
}

namespace autotune::orchestrator {

using Json = nlohmann::json;

enum class Objective { latency, throughput, mfu };
const char* to_string(Objective objective);

struct TargetChoice {
  std::string kind = "sim";         // sim | replay | command
  std::string name = "trn1";        // sim: the target spec; replay: the cachefile's device
  std::filesystem::path cachefile;  // replay: resolved against the goal file's folder
  std::string replay_objective;     // replay: the cachefile field to minimise (default: its "objective")
  YAML::Node spec;                  // the whole `target:` mapping as written (command targets read it)
};

// A simulated screen in front of a device target (the goal's `screen:`;
// docs/goals.md, docs/loop.md "Screened tuning"): each round the Param
// Explorer proposes `propose` candidates, the simulator ranks them, and only
// the best `keep` are measured on the device; the device's results correct
// the screen as they arrive.
struct ScreenChoice {
  std::string target;  // a target name or a (calibrated) target file, as `target:` takes them
  int keep = 0;        // device trials per round
  int propose = 0;     // proposals the simulator ranks per round (more than keep)
  // How device results correct the screen: "refit" (the target's fitted
  // constants refitted on the device trials, then a per-variant log ratio),
  // "ratio" (the per-variant log ratio alone) or "none".
  std::string correction = "refit";
  // What the simulator runs for a candidate: the goal's own kernel on a sim
  // target; on a command target, `screen.kernel` (the family variant the
  // device program runs, its shape and dtype). variant empty: the candidate's.
  std::string family, variant, dtype;
  std::map<std::string, std::int64_t> shape;
};

// The most workers a run or sweep may use: each is a thread (and, for
// command targets, a process); more than this only exhausts the machine.
inline constexpr int kMaxParallel = 256;

struct Goal {
  std::filesystem::path file;
  // Where each key of the goal file was written, for errors found after
  // reading (setup.cpp's checks against the kernel and the target).
  KeyLocations where;
  // A user kernel source (docs/kernel_sources.md) measured instead of the
  // family's built-in variants; resolved against the goal file's folder.
  std::filesystem::path kernel_source;
  std::string name;
  // kernel
  // sim: a registered family; empty for a kernel_source that gives its own
  // reference; replay: the cachefile's kernel name.
  std::string family;
  std::map<std::string, std::int64_t> shape;
  std::string kernel_name;              // the family, or the name a kernel source declares
  std::vector<std::string> shape_args;  // the kernel's shape arguments, in its order
  bool default_shape = false;           // the goal gives no kernel.shape: the kernel's default applies
  std::string dtype;
  // The `kernel:` mapping as written, when a kernel_source without
  // kernel.family declares the shape arguments and dtypes itself: checked
  // for form by load_goal, resolved by resolve_kernel_shape once the kernel
  // is described (setup.cpp). Null otherwise.
  YAML::Node kernel_spec;
  TargetChoice target;
  Objective objective = Objective::latency;
  // goal
  std::optional<double> improvement;  // relative, over the baseline (see docs/goals.md per objective)
  std::optional<double> absolute;     // in the objective's unit: latency_s, FLOP/s, MFU %
  int max_iterations = 5;
  // budget
  int budget_evaluations = 100;
  double budget_wall_time_s = 3600;
  // search
  std::string strategy = "bayes";
  Json strategy_options = Json::object();
  int batch_size = 0;  // 0: the number of parallel workers
  // Learn from earlier runs of the same kernel in the store: the strategy
  // starts from their best configurations (Strategy::learn_from).
  bool transfer = false;
  std::optional<ScreenChoice> screen;
  // Per parameter, the values the goal allows (in the order written); absent
  // parameters keep the family's domain.
  std::vector<std::pair<std::string, std::vector<search::ParamValue>>> space;
  std::vector<std::string> constraints;
  // start
  std::string start_variant;
  Json start_params = Json::object();
  std::vector<std::string> variants;
  std::map<std::string, std::string> roles;  // parameter -> role overrides
  int parallel = 1;
  double timeout_s = 120;
  // verification
  std::optional<double> tolerance;
  std::uint64_t verification_seed = 0;
  std::uint64_t seed = 0;
  // The `llm:` and `skills:` mappings as written (stored with the run).
  YAML::Node llm;
  std::optional<llm::LlmConfig> llm_config;  // `llm:` validated (docs/llm.md); the key is never here
  YAML::Node skills;
  std::vector<skills::PluginSkillConfig> plugins;  // `skills:` validated (docs/plugins.md)

  int effective_batch_size() const { return batch_size > 0 ? batch_size : parallel; }
};

// Reads and resolves a goal. Throws UserError (file:line:key) on any misuse.
Goal load_goal(const std::filesystem::path& path);

// What a kernel takes: its shape arguments in order, their defaults, its
// dtypes (the first is the default), and a shape check returning why a shape
// is not taken ("" when it is).
struct KernelSignature {
  std::string kernel;  // for messages
  std::vector<std::string> shape_args;
  std::map<std::string, std::int64_t> default_shape;
  std::vector<std::string> dtypes;
  std::function<std::string(const std::map<std::string, std::int64_t>&)> check_shape;
};

// A built-in family's signature.
KernelSignature kernel_signature(const kernels::FamilySpec& family);

// Sets goal.shape and goal.dtype from goal.kernel_spec (kernel.shape as a
// list in argument order or a mapping with every argument, or absent for the
// kernel's default shape; kernel.dtype) against `signature`. UserError
// (file:line:key) for an unknown or missing argument, a shape the check
// rejects, or a dtype the kernel does not take.
void resolve_kernel_shape(Goal& goal, const KernelSignature& signature);

// What the goal tunes, for the summaries of `run` and `sweep`: "gemm, shape
// M=256,N=512,K=512, bf16", saying when the shape is the kernel's default
// because the goal gives none; "" for a target that brings its own space.
std::string kernel_text(const Goal& goal);
// The same as {"name", "shape", "shape_source": "goal" | "default", "dtype"}; null when "".
Json kernel_json(const Goal& goal);

// The resolved goal as YAML (what the store keeps).
std::string to_yaml(const Goal& goal);

}  // namespace autotune::orchestrator
