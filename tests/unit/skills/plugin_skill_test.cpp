#include "skills/plugin/plugin_skill.hpp"

#include <doctest/doctest.h>

#include "core/error.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using namespace autotune::skills;
using autotune::testing::TempDir;

namespace {

const char* kGoodPlugin = R"(
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    assert message["protocol"] == "autotune-skill/1"
    request = message["request"]
    if request.get("unsupported"):
        print(json.dumps({"error": "cannot analyse this kernel"}), flush=True)
        continue
    if request.get("half-envelope"):
        print(json.dumps({"result": {}}), flush=True)
        continue
    finding = {"kind": "small_transfers", "role": message["role"], "seen": request.get("latency_s")}
    print(json.dumps({"result": {"findings": [finding]},
                      "decision": {"action": "raise_tile_size", "rationale": "transfers under 2 KiB",
                                   "evidence": {"median_transfer_bytes": 1024}}}), flush=True)
)";

const char* kCrashingPlugin = R"(
import sys
sys.stdin.readline()
sys.stderr.write("Traceback: KeyError: 'findings'\n")
sys.exit(1)
)";

const char* kHangingPlugin = R"(
import sys, time
sys.stdin.readline()
time.sleep(60)
)";

const char* kGarbagePlugin = R"(
import sys
for line in sys.stdin:
    print("analysing...", flush=True)
)";

PluginSkillConfig plugin_config(const TempDir& dir, const char* body, double timeout_s = 20.0) {
  PluginSkillConfig config;
  config.name = "test-analyzer";
  config.command = {dir.python_script("plugin.py", body).string()};
  config.role = "profile_analyzer";
  config.after = "profile_analyzer";
  config.timeout_s = timeout_s;
  config.max_restarts = 1;
  config.workdir = dir.path();
  return config;
}

}  // namespace

TEST_CASE("plugin client exchanges the envelope with a well-behaved plugin") {
  TempDir dir;
  skills::PluginSkillClient client(plugin_config(dir, kGoodPlugin));
  std::string error;
  REQUIRE_MESSAGE(client.start(&error), error);
  for (double latency : {2.0, 1.5}) {
    skills::PluginReply reply = client.call({{"latency_s", latency}});
    REQUIRE_MESSAGE(reply.ok(), reply.error);
    CHECK(reply.result["findings"][0]["kind"] == "small_transfers");
    CHECK(reply.result["findings"][0]["role"] == "profile_analyzer");
    CHECK(reply.result["findings"][0]["seen"] == latency);
    CHECK(reply.decision["action"] == "raise_tile_size");
    CHECK(reply.decision["rationale"] == "transfers under 2 KiB");
    CHECK(reply.decision["evidence"]["median_transfer_bytes"] == 1024);
  }
  CHECK(client.starts() == 1);

  skills::PluginReply refused = client.call({{"unsupported", true}});
  CHECK(refused.failure == PluginFailure::plugin_error);
  CHECK(refused.error == "plugin 'test-analyzer': reported an error: cannot analyse this kernel");
  skills::PluginReply half = client.call({{"half-envelope", true}});
  CHECK(half.failure == PluginFailure::malformed);
  CHECK(half.error == "plugin 'test-analyzer': malformed reply: \"decision\" must be an object");
  CHECK(client.call({{"latency_s", 1.0}}).ok());  // still the same process: the exchange stayed in step
  CHECK(client.starts() == 1);
  client.stop();
}

TEST_CASE("plugin client reports a plugin that crashes, then gives up after its restarts") {
  TempDir dir;
  skills::PluginSkillClient client(plugin_config(dir, kCrashingPlugin));
  skills::PluginReply first = client.call({{"latency_s", 1.0}});
  CHECK(first.failure == PluginFailure::crashed);
  CHECK(
      first.error ==
      "plugin 'test-analyzer': exited with code 1 before replying; stderr: Traceback: KeyError: 'findings'");
  CHECK(client.call({}).failure == PluginFailure::crashed);
  skills::PluginReply third = client.call({});
  CHECK(third.failure == PluginFailure::dead);
  CHECK(third.error.starts_with("plugin 'test-analyzer': not restarted after 2 start(s)"));
}

TEST_CASE("plugin client times out a plugin that hangs") {
  TempDir dir;
  skills::PluginSkillClient client(plugin_config(dir, kHangingPlugin, 0.5));
  skills::PluginReply reply = client.call({});
  CHECK(reply.failure == PluginFailure::timed_out);
  CHECK(reply.error == "plugin 'test-analyzer': timed out after 0.5 s waiting for a reply");
}

TEST_CASE("plugin client reports a plugin that prints garbage") {
  TempDir dir;
  skills::PluginSkillClient client(plugin_config(dir, kGarbagePlugin));
  skills::PluginReply reply = client.call({});
  CHECK(reply.failure == PluginFailure::malformed);
  CHECK(reply.error == "plugin 'test-analyzer': replied with a line that is not JSON: 'analysing...'");
}

TEST_CASE("plugin client reports a command that cannot start") {
  skills::PluginSkillConfig config;
  config.name = "missing";
  config.command = {"autotune-no-such-plugin"};
  config.role = "param_explorer";
  config.replaces = "param_explorer";
  skills::PluginSkillClient client(config);
  std::string error;
  CHECK_FALSE(client.start(&error));
  CHECK(error == "plugin 'missing': cannot start 'autotune-no-such-plugin': No such file or directory");
  CHECK(client.call({}).failure == PluginFailure::dead);
}

TEST_CASE("plugin replies are checked against the envelope") {
  CHECK(PluginSkillClient::read_reply(nlohmann::json::array()).error ==
        "malformed reply: expected a JSON object, got array");
  CHECK(PluginSkillClient::read_reply({{"error", 3}}).failure == PluginFailure::malformed);
  CHECK(PluginSkillClient::read_reply({{"result", 1}}).error ==
        "malformed reply: \"result\" must be an object");
  auto no_rationale = PluginSkillClient::read_reply(
      {{"result", nlohmann::json::object()}, {"decision", {{"action", "keep"}}}});
  CHECK(no_rationale.error == "malformed reply: \"decision.rationale\" must be a string");
  auto ok = PluginSkillClient::read_reply(
      {{"result", nlohmann::json::object()}, {"decision", {{"action", "keep"}, {"rationale", "fine"}}}});
  CHECK(ok.ok());
  CHECK(ok.decision["evidence"] == nlohmann::json::object());
  CHECK(PluginSkillClient::envelope("kernel_generator", {{"a", 1}}) ==
        nlohmann::json(
            {{"protocol", "autotune-skill/1"}, {"role", "kernel_generator"}, {"request", {{"a", 1}}}}));
}

TEST_CASE("plugin skills are read strictly from a goal's skills list") {
  TempDir dir;
  dir.python_script("plugins/analyzer.py", kGoodPlugin);
  auto parse = [&](const std::string& yaml) {
    ConfigReader goal(YAML::Load(yaml), "goal.yaml");
    return skills::parse_plugin_skills(goal, dir.path());
  };

  auto plugins = parse(
      "skills:\n"
      "  - {name: extra, command: [./plugins/analyzer.py, --verbose], role: profile_analyzer, after: "
      "profile_analyzer, timeout_s: 5}\n"
      "  - {name: explorer, command: [python3, x.py], role: param_explorer, replaces: param_explorer}\n");
  REQUIRE(plugins.size() == 2);
  CHECK(plugins[0].command == std::vector<std::string>{"./plugins/analyzer.py", "--verbose"});
  CHECK(plugins[0].after == "profile_analyzer");
  CHECK(plugins[0].timeout_s == 5.0);
  CHECK(plugins[0].workdir == dir.path());
  CHECK(plugins[1].replaces == "param_explorer");
  CHECK(plugins[1].timeout_s == 30.0);

  skills::PluginSkillConfig relative = plugins[0];
  relative.command = {"./plugins/analyzer.py"};
  skills::PluginSkillClient client(relative);  // the relative command is found from the goal's folder
  skills::PluginReply from_goal_dir = client.call({});
  CHECK_MESSAGE(from_goal_dir.ok(), from_goal_dir.error);

  CHECK(parse("name: x\n").empty());
  CHECK_THROWS_WITH_AS(
      parse("skills:\n  - {name: a, command: [python3], role: analyzer, after: profile_analyzer}\n"),
      "goal.yaml:2: skills[0].role: 'analyzer' is not a role; accepted: profile_analyzer, "
      "kernel_generator, param_explorer",
      UserError);
  CHECK_THROWS_WITH_AS(
      parse("skills:\n  - {name: a, command: [python3], role: param_explorer, after: "
            "param_explorer, timeout: 3}\n"),
      "goal.yaml:2: skills[0].timeout: unknown key (did you mean timeout_s?); accepted: name, command, role, "
      "replaces, after, timeout_s, "
      "max_restarts",
      UserError);
  CHECK_THROWS_WITH_AS(parse("skills:\n  - {name: a, command: [python3], role: param_explorer}\n"),
                       "goal.yaml:2: skills[0]: give exactly one of replaces or after (a built-in skill: "
                       "profile_analyzer, kernel_generator, param_explorer)",
                       UserError);
  CHECK_THROWS_AS(
      parse("skills:\n  - {name: a, command: [python3], role: param_explorer, replaces: kernel_generator}\n"),
      UserError);
  const std::string missing_program =
      "goal.yaml:2: skills[0].command: program './missing.py' is not an executable file: " +
      (std::filesystem::absolute(dir.path()) / "missing.py").lexically_normal().string() +
      " (a relative path is taken from the goal file's folder)";
  CHECK_THROWS_WITH_AS(
      parse("skills:\n  - {name: a, command: [./missing.py], role: param_explorer, after: param_explorer}\n"),
      missing_program.c_str(), UserError);
  CHECK_THROWS_AS(
      parse("skills:\n  - {name: a, command: [python3], role: param_explorer, after: param_explorer}\n"
            "  - {name: a, command: [python3], role: param_explorer, after: param_explorer}\n"),
      UserError);
  CHECK_THROWS_AS(parse("skills: {name: a}\n"), UserError);
  CHECK_THROWS_WITH_AS(
      parse("skills:\n  - {name: a, command: [python3], role: param_explorer, after: profile_analyzer}\n"),
      "goal.yaml:2: skills[0].after: a plugin that runs after profile_analyzer must have role "
      "profile_analyzer "
      "(role is param_explorer): it receives that skill's result and amends it",
      UserError);
  CHECK_THROWS_WITH_AS(
      parse(
          "skills:\n  - {name: a, command: [python3], role: benchmark_runner, replaces: benchmark_runner}\n"),
      "goal.yaml:2: skills[0].role: a benchmark_runner plugin is not supported: to measure through your own "
      "program use target: {kind: command, argv: [...]} (docs/goals.md)",
      UserError);
  CHECK_THROWS_WITH_AS(
      parse("skills:\n  - {name: a, command: [python3], role: param_explorer, replaces: param_explorer}\n"
            "  - {name: b, command: [python3], role: param_explorer, replaces: param_explorer}\n"),
      "goal.yaml:3: skills[1].replaces: param_explorer is already replaced by plugin 'a'", UserError);
}
