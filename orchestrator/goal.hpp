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
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/llm/llm_client.hpp"
#include "search/parameter.hpp"
#include "skills/candidate.hpp"
#include "skills/plugin/plugin_skill.hpp"

namespace autotune::orchestrator {

using Json = nlohmann::json;

enum class Objective { latency, throughput, mfu };
const char* to_string(Objective objective);

struct TargetChoice {
  std::string kind = "sim";  // sim | replay | command
  std::string name = "trn1";  // sim: the target spec; replay: the cachefile's device
  std::filesystem::path cachefile;  // replay: resolved against the goal file's folder
  std::string replay_objective;     // replay: the cachefile field to minimise (default: its "objective")
  YAML::Node spec;                  // the whole `target:` mapping as written (command targets read it)
};

struct Goal {
  std::filesystem::path file;
  // A user kernel source (docs/kernel_sources.md) measured instead of the
  // family's built-in variants; resolved against the goal file's folder.
  std::filesystem::path kernel_source;
  std::string name;
  // kernel
  std::string family;  // sim: a registered family; replay: the cachefile's kernel name
  std::map<std::string, std::int64_t> shape;
  std::string dtype;
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
  // Accepted and stored; used by issue-6 extensions.
  YAML::Node llm;
  std::optional<llm::LlmConfig> llm_config;  // `llm:` validated (docs/llm.md); the key is never here
  YAML::Node skills;
  std::vector<PluginSkillConfig> plugins;  // `skills:` validated (docs/plugins.md)

  int effective_batch_size() const { return batch_size > 0 ? batch_size : parallel; }
};

// Reads and resolves a goal. Throws UserError (file:line:key) on any misuse.
Goal load_goal(const std::filesystem::path& path);

// The resolved goal as YAML (what the store keeps).
std::string to_yaml(const Goal& goal);

}  // namespace autotune::orchestrator
