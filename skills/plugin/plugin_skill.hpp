#pragma once
// The transport for plugin skills: an external executable that speaks JSON
// lines on stdin/stdout (docs/plugins.md).
//
// Each request is one line
//   {"protocol": "autotune-skill/1", "role": "<role>", "request": {...}}
// and the plugin answers with one line, either
//   {"result": {...}, "decision": {"action": "...", "rationale": "...", "evidence": {...}}}
// or
//   {"error": "<why it cannot answer>"}.
//
// Lifecycle: the process is started once (start(), normally when the run
// starts), serves any number of requests in order, and gets end-of-file on
// stdin at stop() (or destruction), after which it should exit; it is killed
// if it has not exited after a short grace. After a crash, a timeout or a line
// that is not JSON the process is killed and started again on the next call,
// at most `max_restarts` times (JsonLinesProcess); then the plugin counts as
// dead and every call fails at once.
//
// Nothing here throws for what a plugin does: every failure is a PluginReply
// with a kind and a one-line reason naming the plugin, so the caller can log it
// and continue on the built-in path. Misconfiguration in the goal is a
// UserError at parse time.
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config_reader.hpp"
#include "core/subprocess.hpp"

namespace autotune::skills {

inline constexpr const char* kPluginProtocol = "autotune-skill/1";

// The roles a plugin can take, in the loop's order; they are also the names
// of the built-in skills it can replace or follow. A registered skill that
// refuses plugins (its plugin_refusal) is not among them.
std::vector<std::string> plugin_roles();

struct PluginSkillConfig {
  std::string name;                  // unique among the goal's plugins
  std::vector<std::string> command;  // argv; never run through a shell
  std::string role;                  // one of plugin_roles()
  std::string replaces;              // built-in skill replaced (equals role), or empty
  std::string after;                 // built-in skill this one runs after, or empty
  double timeout_s = 30.0;           // per request
  int max_restarts = 2;
  // Where the plugin runs: the goal file's folder, so a relative command path
  // such as ./plugins/my_analyzer.py is found next to the goal.
  std::filesystem::path workdir;
};

// Reads one entry of a goal's `skills:` list: {name, command, role, replaces |
// after, timeout_s, max_restarts}. Exactly one of replaces/after is required;
// a plugin that replaces a skill must have that skill's role. Unknown keys are
// rejected. A command whose program cannot be found is a UserError.
PluginSkillConfig parse_plugin_skill(ConfigReader& entry, const std::filesystem::path& goal_dir);

// Reads the goal's optional `skills:` list (absent: none); rejects duplicate names.
std::vector<PluginSkillConfig> parse_plugin_skills(ConfigReader& goal, const std::filesystem::path& goal_dir);

enum class PluginFailure {
  none,
  cannot_start,  // the command could not be started
  crashed,       // exited or was killed before replying
  timed_out,     // no reply within timeout_s
  malformed,     // the reply is not JSON, or not the envelope above
  plugin_error,  // the plugin answered {"error": ...}
  dead,          // no restarts left after earlier failures; nothing was sent
};
std::string to_string(PluginFailure failure);

struct PluginReply {
  PluginFailure failure = PluginFailure::none;
  std::string error;  // one line: "plugin 'name': <what happened>"
  nlohmann::json result = nlohmann::json::object();
  // {"action": string, "rationale": string, "evidence": object ({} when absent)}
  nlohmann::json decision = nlohmann::json::object();
  double latency_ms = 0.0;

  bool ok() const { return failure == PluginFailure::none; }
};

class PluginSkillClient {
 public:
  explicit PluginSkillClient(PluginSkillConfig config);
  ~PluginSkillClient();  // stop()
  PluginSkillClient(const PluginSkillClient&) = delete;
  PluginSkillClient& operator=(const PluginSkillClient&) = delete;

  // Starts the plugin now; false (with the reason) when it cannot be started.
  // Optional: the first call() starts it otherwise.
  bool start(std::string* error = nullptr);

  // Sends one request for this plugin's role and reads the reply. Calls on one
  // client are serialized; use one client per worker for parallel requests.
  PluginReply call(const nlohmann::json& request);

  // Closes the plugin's stdin and waits briefly for it to exit. Idempotent.
  void stop();

  const PluginSkillConfig& config() const { return config_; }
  int starts() const;  // process starts so far (1 + restarts)

  // The request line's JSON for `role` (exposed for documentation and tests).
  static nlohmann::json envelope(const std::string& role, const nlohmann::json& request);
  // Validates a plugin's reply against the envelope; `failure` is none,
  // plugin_error or malformed. The error text does not name the plugin.
  static PluginReply read_reply(const nlohmann::json& reply);

 private:
  PluginSkillConfig config_;
  std::unique_ptr<JsonLinesProcess> process_;
};

}  // namespace autotune::skills
