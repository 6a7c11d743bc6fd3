#include "skills/plugin/plugin_skill.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"
#include "skills/skill.hpp"

namespace autotune::skills {
namespace {

bool is_plugin_role(const std::string& name) { return skill_registry().contains(name); }

PluginFailure failure_of(JsonLinesFailure failure) {
  switch (failure) {
    case JsonLinesFailure::none:
      return PluginFailure::none;
    case JsonLinesFailure::cannot_start:
      return PluginFailure::cannot_start;
    case JsonLinesFailure::ended:
      return PluginFailure::crashed;
    case JsonLinesFailure::timed_out:
      return PluginFailure::timed_out;
    case JsonLinesFailure::malformed:
      return PluginFailure::malformed;
    case JsonLinesFailure::gave_up:
      return PluginFailure::dead;
    case JsonLinesFailure::bad_request:
      return PluginFailure::malformed;
  }
  return PluginFailure::crashed;
}

}  // namespace

std::vector<std::string> plugin_roles() {
  std::vector<std::string> out;
  for (const auto& name : skills_in_loop_order())
    if (skill_registry().get(name).plugin_refusal.empty()) out.push_back(name);
  return out;
}

std::string to_string(PluginFailure failure) {
  switch (failure) {
    case PluginFailure::none:
      return "none";
    case PluginFailure::cannot_start:
      return "cannot_start";
    case PluginFailure::crashed:
      return "crashed";
    case PluginFailure::timed_out:
      return "timed_out";
    case PluginFailure::malformed:
      return "malformed";
    case PluginFailure::plugin_error:
      return "plugin_error";
    case PluginFailure::dead:
      return "dead";
  }
  return "unknown";
}

PluginSkillConfig parse_plugin_skill(ConfigReader& entry, const std::filesystem::path& goal_dir) {
  PluginSkillConfig config;
  const std::string roles = join(plugin_roles(), ", ");
  // The name goes into one-line messages and warnings.
  config.name = entry.name("name");
  if (config.name.empty()) entry.fail("name", "must not be empty");
  config.command =
      entry.required<std::vector<std::string>>("command", "a list of strings: the program and its arguments");
  if (config.command.empty() || config.command[0].empty()) {
    entry.fail("command", "must name a program, e.g. [python3, plugins/analyzer.py]");
  }
  config.role = entry.required<std::string>("role", roles);
  if (!is_plugin_role(config.role))
    entry.fail("role", "'" + config.role + "' is not a role; accepted: " + roles);
  config.replaces = entry.optional<std::string>("replaces", "");
  config.after = entry.optional<std::string>("after", "");
  if (config.replaces.empty() == config.after.empty()) {
    entry.fail("", "give exactly one of replaces or after (a built-in skill: " + roles + ")");
  }
  if (!config.replaces.empty()) {
    if (!is_plugin_role(config.replaces)) {
      entry.fail("replaces", "'" + config.replaces + "' is not a built-in skill; accepted: " + roles);
    }
    if (config.replaces != config.role) {
      entry.fail("replaces", "a plugin that replaces " + config.replaces + " must have role " +
                                 config.replaces + " (role is " + config.role + ")");
    }
  }
  if (!config.after.empty() && !is_plugin_role(config.after)) {
    entry.fail("after", "'" + config.after + "' is not a built-in skill; accepted: " + roles);
  }
  if (!config.after.empty() && config.after != config.role) {
    entry.fail("after", "a plugin that runs after " + config.after + " must have role " + config.after +
                            " (role is " + config.role + "): it receives that skill's result and amends it");
  }
  const std::string& refusal = skill_registry().get(config.role).plugin_refusal;
  if (!refusal.empty()) entry.fail("role", refusal);
  config.timeout_s = entry.optional_seconds("timeout_s", config.timeout_s);
  config.max_restarts = entry.optional<int>("max_restarts", config.max_restarts);
  if (config.max_restarts < 0) entry.fail("max_restarts", "must be 0 or more");
  entry.finish({"name", "command", "role", "replaces", "after", "timeout_s", "max_restarts"});
  config.workdir = goal_dir;
  if (!find_executable(config.command[0], config.workdir))
    entry.fail("command",
               missing_executable_reason(config.command[0], config.workdir, "the goal file's folder"));
  return config;
}

std::vector<PluginSkillConfig> parse_plugin_skills(ConfigReader& goal,
                                                   const std::filesystem::path& goal_dir) {
  std::vector<PluginSkillConfig> plugins;
  YAML::Node list = goal.raw("skills");
  if (!list || list.IsNull()) return plugins;
  if (!list.IsSequence()) goal.fail("skills", "expected a list of plugin skills", &list);
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    ConfigReader entry(item, goal.file(), goal.key_path("skills") + "[" + std::to_string(i) + "]");
    PluginSkillConfig plugin = parse_plugin_skill(entry, goal_dir);
    if (!names.insert(plugin.name).second)
      entry.fail("name", "'" + plugin.name + "' is used by another plugin");
    for (const auto& other : plugins)
      if (!plugin.replaces.empty() && other.replaces == plugin.replaces)
        entry.fail("replaces", plugin.replaces + " is already replaced by plugin '" + other.name + "'");
    plugins.push_back(std::move(plugin));
  }
  return plugins;
}

nlohmann::json PluginSkillClient::envelope(const std::string& role, const nlohmann::json& request) {
  // A null request (what `{}` builds in C++) is sent as an empty object.
  return {{"protocol", kPluginProtocol},
          {"role", role},
          {"request", request.is_null() ? nlohmann::json::object() : request}};
}

PluginReply PluginSkillClient::read_reply(const nlohmann::json& reply) {
  PluginReply out;
  auto malformed = [&](const std::string& why) {
    out.failure = PluginFailure::malformed;
    out.error = "malformed reply: " + why;
    out.result = nlohmann::json::object();
    out.decision = nlohmann::json::object();
    return out;
  };
  if (!reply.is_object()) return malformed("expected a JSON object, got " + std::string(reply.type_name()));
  if (reply.contains("error")) {
    if (!reply["error"].is_string()) return malformed("\"error\" must be a string");
    out.failure = PluginFailure::plugin_error;
    out.error = "reported an error: " + one_line_tail(reply["error"].get<std::string>(), 400);
    return out;
  }
  if (!reply.contains("result") || !reply["result"].is_object())
    return malformed("\"result\" must be an object");
  if (!reply.contains("decision") || !reply["decision"].is_object()) {
    return malformed("\"decision\" must be an object");
  }
  const auto& decision = reply["decision"];
  if (!decision.contains("action") || !decision["action"].is_string()) {
    return malformed("\"decision.action\" must be a string");
  }
  if (!decision.contains("rationale") || !decision["rationale"].is_string()) {
    return malformed("\"decision.rationale\" must be a string");
  }
  if (decision.contains("evidence") && !decision["evidence"].is_object()) {
    return malformed("\"decision.evidence\" must be an object");
  }
  out.result = reply["result"];
  out.decision = {{"action", decision["action"]},
                  {"rationale", decision["rationale"]},
                  {"evidence", decision.value("evidence", nlohmann::json::object())}};
  return out;
}

PluginSkillClient::PluginSkillClient(PluginSkillConfig config) : config_(std::move(config)) {
  JsonLinesOptions options;
  options.name = "plugin '" + config_.name + "'";
  options.workdir = config_.workdir;
  options.max_restarts = config_.max_restarts;
  process_ = std::make_unique<JsonLinesProcess>(config_.command, options);
}

PluginSkillClient::~PluginSkillClient() { stop(); }

bool PluginSkillClient::start(std::string* error) {
  std::string reason;
  if (process_->start(&reason)) return true;
  if (error) *error = "plugin '" + config_.name + "': " + reason;
  return false;
}

PluginReply PluginSkillClient::call(const nlohmann::json& request) {
  const auto begin = std::chrono::steady_clock::now();
  const auto timeout =
      std::chrono::milliseconds(static_cast<long long>(std::ceil(config_.timeout_s * 1000.0)));
  std::string reason;
  auto line = process_->request(envelope(config_.role, request), timeout, &reason);
  PluginReply reply;
  if (line) {
    reply = read_reply(*line);
  } else {
    reply.failure = failure_of(process_->last_failure());
    reply.error = reason;
  }
  if (!reply.ok()) reply.error = "plugin '" + config_.name + "': " + reply.error;
  reply.latency_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  return reply;
}

void PluginSkillClient::stop() { process_->stop(); }

int PluginSkillClient::starts() const { return process_->starts(); }

}  // namespace autotune::skills
