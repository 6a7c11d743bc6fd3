#pragma once
// Plugin skills in the loop: wrappers that put a plugin (PluginSkillClient) in
// front of, or behind, a built-in skill, behind the same skill interface, so
// the orchestrator's loop does not change (docs/plugins.md has the request
// and result of each role).
//
//  - `replaces`: the plugin answers instead of the wrapped skill. When the
//    plugin fails (cannot start, crashes, times out, answers malformed JSON or
//    a result that does not fit the role's schema, or refuses), the wrapped
//    skill answers instead.
//  - `after`: the wrapped skill answers first; the plugin receives its result
//    (`builtin` in the request) and returns the result to use, which may amend
//    it (e.g. one more finding). When the plugin fails, the wrapped skill's
//    result stands.
//
// Roles: profile_analyzer (analyze), kernel_generator (generate),
// param_explorer (plan: strategy and budget; the search itself stays
// built-in). benchmark_runner plugins are refused at goal validation: an
// external measurement is the command target's job.
//
// Every plugin call leaves one decision record with proposer = the plugin's
// name: a replacing plugin's answer is the skill's own decision; every other
// call (an `after` plugin's answer, any failure) is queued in
// PluginCallRecords for the orchestrator to log right after the skill's
// decision. A failure's outcome starts with the failure kind (crashed,
// timed_out, malformed, ...) and says that the built-in result was used.
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "skills/plugin/plugin_skill.hpp"
#include "skills/skill.hpp"

namespace autotune::skills {

// Decision records of plugin calls not returned as a skill's own decision.
// Thread-safe.
class PluginCallRecords {
 public:
  struct Record {
    std::string skill;  // the role, as the decision log's skill column
    SkillDecision decision;
  };
  void add(Record record);
  std::vector<Record> take();  // in call order; empties the queue

 private:
  std::mutex mutex_;
  std::vector<Record> records_;
};

struct PluginWiring {
  std::shared_ptr<PluginCallRecords> records = std::make_shared<PluginCallRecords>();
  // Plugin name -> the client, for reporting (starts, ...).
  std::vector<std::shared_ptr<PluginSkillClient>> clients;
};

// Wraps the given skills with the goal's plugins. For each role the replacing
// plugin (at most one) wraps the built-in first, then the `after` plugins in
// the goal's order. `goal` is sent with every request as "goal" (a summary:
// name, kernel, target, objective). Plugins start on their first call and
// stop when the wrappers are destroyed.
PluginWiring install_plugins(const std::vector<PluginSkillConfig>& plugins, const Json& goal,
                             std::unique_ptr<AnalyzerSkill>& analyzer,
                             std::unique_ptr<GeneratorSkill>& generator,
                             std::unique_ptr<ExplorerSkill>& explorer);

// The role's request as sent to a plugin (exposed for docs/plugins.md and tests).
Json analysis_request_json(const AnalysisRequest& request);
Json generation_request_json(const GenerationRequest& request);
Json exploration_request_json(const ExplorationRequest& request);

// A plugin's result checked against the role's schema and the run's catalog.
// `base` is the built-in result the plugin amends (after), or the fallback
// defaults (replaces); keys the plugin leaves out keep base's values. nullopt
// and *error when the result does not fit.
std::optional<Analysis> analysis_from_plugin(const Json& result, const Analysis& base, std::string* error);
// An idea whose id is among request.tried_ideas (its region settled earlier)
// is left out and its id goes to *settled; a result of nothing but such ideas
// does not fit.
std::optional<Generation> generation_from_plugin(const Json& result, const GenerationRequest& request,
                                                 std::string* error,
                                                 std::vector<std::string>* settled = nullptr);
std::optional<ExplorationPlan> plan_from_plugin(const Json& result, const ExplorationRequest& request,
                                                const ExplorationPlan& base, std::string* error);

}  // namespace autotune::skills
