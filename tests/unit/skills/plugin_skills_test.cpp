// Plugin skills behind the skill interface: result checks per role, and the
// wrappers' behaviour for `after` and `replaces` plugins (answers, failures,
// records for the decision log).
#include "skills/plugin/plugin_skills.hpp"

#include <doctest/doctest.h>

#include "core/error.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using namespace autotune::skills;
using autotune::testing::TempDir;

namespace {

VariantCatalog small_catalog() {
  VariantCatalog catalog;
  catalog.kernel = "k";
  for (const char* name : {"a", "b"}) {
    VariantSpace v;
    v.name = name;
    v.parameters = {
        search::ParameterSpec::ordered("tile", {std::int64_t(32), std::int64_t(64), std::int64_t(128)}),
        search::ParameterSpec::ordered("depth", {std::int64_t(1), std::int64_t(2)})};
    v.constraints = {"tile * depth <= 128"};
    v.defaults = {{"tile", 32}, {"depth", 1}};
    v.roles = {{"tile", "tile"}, {"depth", "pipeline_depth"}};
    build_space(v);
    catalog.variants.push_back(std::move(v));
  }
  catalog.baseline = {"a", {{"tile", 32}, {"depth", 1}}};
  return catalog;
}

// A built-in stand-in with a fixed answer, counting its calls.
class FixedAnalyzer : public AnalyzerSkill {
 public:
  int calls = 0;
  std::string name() const override { return kProfileAnalyzer; }
  SkillResult<Analysis> analyze(const AnalysisRequest&) override {
    ++calls;
    SkillResult<Analysis> out;
    out.result.bound = "memory";
    out.result.findings.push_back({"small_transfers", "transfers under 2 KiB", {}, "raise", {"tile"}, 0.3});
    out.decision.action = "findings:small_transfers";
    return out;
  }
};

PluginSkillConfig plugin(const TempDir& dir, const std::string& name, const std::string& body, bool replaces,
                         double timeout_s = 10) {
  PluginSkillConfig config;
  config.name = name;
  config.command = {dir.python_script(name + ".py", body).string()};
  config.role = kProfileAnalyzer;
  (replaces ? config.replaces : config.after) = kProfileAnalyzer;
  config.timeout_s = timeout_s;
  config.max_restarts = 0;
  config.workdir = dir.path();
  return config;
}

const char* kAddFinding = R"(
import json, sys
for line in sys.stdin:
    request = json.loads(line)["request"]
    analysis = request.get("builtin") or {}
    findings = analysis.get("findings", [])
    findings.append({"kind": "seen_goal", "summary": request["goal"]["name"],
                     "evidence": {"params": request["candidate"]["params"]}})
    print(json.dumps({"result": {"findings": findings},
                      "decision": {"action": "add_finding", "rationale": "one more", "evidence": {"n": 1}}}),
          flush=True)
)";

const char* kCrash = R"(
import sys
sys.stdin.readline()
sys.exit(4)
)";

struct Wired {
  std::unique_ptr<AnalyzerSkill> analyzer;
  std::unique_ptr<GeneratorSkill> generator;
  std::unique_ptr<ExplorerSkill> explorer;
  PluginWiring wiring;
  FixedAnalyzer* builtin = nullptr;
};

Wired wire(const std::vector<PluginSkillConfig>& plugins) {
  Wired w;
  auto builtin = std::make_unique<FixedAnalyzer>();
  w.builtin = builtin.get();
  w.analyzer = std::move(builtin);
  w.wiring = install_plugins(plugins, {{"name", "unit"}}, w.analyzer, w.generator, w.explorer);
  return w;
}

AnalysisRequest request() {
  return {{"a", {{"tile", 64}, {"depth", 1}}}, {{"latency_s", 1e-3}}, nullptr, {}};
}

}  // namespace

TEST_CASE("an analysis from a plugin keeps the base's keys it leaves out and is checked") {
  Analysis base{"memory", {}, false, 2.5};
  std::string error;
  auto merged = analysis_from_plugin({{"findings", {{{"kind", "x"}, {"action", "none"}}}}}, base, &error);
  REQUIRE_MESSAGE(merged, error);
  CHECK(merged->bound == "memory");
  CHECK(merged->headroom == 2.5);
  REQUIRE(merged->findings.size() == 1);
  CHECK(merged->findings[0].kind == "x");

  CHECK_FALSE(analysis_from_plugin({{"findings", {{{"kind", "x"}, {"action", "jump"}}}}}, base, &error));
  CHECK(error == "findings[0].action must be one of raise, vary, structural, stop, none");
  CHECK_FALSE(analysis_from_plugin({{"findings", {{{"kind", 3}}}}}, base, &error));
  CHECK(error == "findings[0].kind must be a non-empty string");
  CHECK_FALSE(analysis_from_plugin({{"findings", "many"}}, base, &error));
  CHECK(error == "\"findings\" must be a list");
}

TEST_CASE("ideas from a plugin must name the catalog's variants, parameters and values") {
  const VariantCatalog catalog = small_catalog();
  GenerationRequest request;
  request.catalog = &catalog;
  std::string error;
  const Json good = {
      {"ideas",
       {{{"id", "bigger"}, {"kind", "raise"}, {"variant", "a"}, {"region", {{"tile", {64, 128}}}}},
        {{"id", "try-b"},
         {"kind", "structural"},
         {"variant", "b"},
         {"probes", {{{"params", {{"depth", 2}}}}}}}}}};
  auto generation = generation_from_plugin(good, request, &error);
  REQUIRE_MESSAGE(generation, error);
  REQUIRE(generation->ideas.size() == 2);
  CHECK(generation->ideas[0].region.at("tile").size() == 2);
  REQUIRE(generation->ideas[1].probes.size() == 1);
  CHECK(generation->ideas[1].probes[0] ==
        Candidate{"b", {{"tile", 32}, {"depth", 2}}});  // defaults fill the rest

  // A whole number written as a real (Python's 128 / 2) is the domain's integer, as the target takes it.
  generation = generation_from_plugin(
      {{"ideas", {{{"id", "half"}, {"variant", "a"}, {"probes", {{{"params", {{"tile", 64.0}}}}}}}}}},
      request, &error);
  REQUIRE_MESSAGE(generation, error);
  REQUIRE(generation->ideas[0].probes.size() == 1);
  CHECK(generation->ideas[0].probes[0].params.at("tile").is_number_integer());
  CHECK(generation->ideas[0].probes[0].params.at("tile") == 64);

  auto rejected = [&](const Json& idea) {
    std::string why;
    CHECK_FALSE(generation_from_plugin({{"ideas", {idea}}}, request, &why));
    return why;
  };
  CHECK(rejected({{"id", "x"}, {"variant", "c"}}) ==
        "ideas[0]: unknown variant 'c'; this run's variants: a, b");
  CHECK(rejected({{"id", "x"}, {"variant", "a"}, {"region", {{"width", {1}}}}}) ==
        "ideas[0]: variant 'a' has no parameter 'width'");
  CHECK(rejected({{"id", "x"}, {"variant", "a"}, {"region", {{"tile", {48}}}}}) ==
        "ideas[0]: region.tile: 48 is not in its domain");
  CHECK(
      rejected({{"id", "x"}, {"variant", "a"}, {"probes", {{{"params", {{"tile", 128}, {"depth", 2}}}}}}}) ==
      "ideas[0]: probe a{depth=2,tile=128} violates the variant's constraints");
  CHECK(rejected({{"variant", "a"}}) == "ideas[0]: \"id\" must be a non-empty string");
  CHECK(rejected({{"id", "x"}, {"variant", "a"}, {"kind", "magic"}}) ==
        "ideas[0]: \"kind\" must be one of raise, vary, structural, explore, handover");

  // An idea settled earlier is left out, not refused; the others stay.
  GenerationRequest later = request;
  later.tried_ideas = {"bigger"};
  std::vector<std::string> settled;
  generation = generation_from_plugin(good, later, &error, &settled);
  REQUIRE_MESSAGE(generation, error);
  REQUIRE(generation->ideas.size() == 1);
  CHECK(generation->ideas[0].id == "try-b");
  CHECK(settled == std::vector<std::string>{"bigger"});
  later.tried_ideas = {"bigger", "try-b"};
  CHECK_FALSE(generation_from_plugin(good, later, &error));
  CHECK(error ==
        "every idea offered settled earlier (bigger, try-b); a settled region is not searched again");

  // The handover (the built-in's, passed on by an after plugin): its variants as one flat space.
  generation = generation_from_plugin(
      {{"ideas", {{{"id", "h"}, {"kind", "handover"}, {"variant", "a"}, {"variants", {"a", "b"}}}}}}, request,
      &error);
  REQUIRE_MESSAGE(generation, error);
  CHECK(generation->ideas[0].variants == std::vector<std::string>{"a", "b"});
  generation = generation_from_plugin({{"ideas", {{{"id", "h"}, {"kind", "handover"}, {"variant", "a"}}}}},
                                      request, &error);
  REQUIRE_MESSAGE(generation, error);
  CHECK(generation->ideas[0].variants == std::vector<std::string>{"a"});
  CHECK(rejected({{"id", "h"}, {"kind", "handover"}, {"variant", "a"}, {"variants", {"a", "c"}}}) ==
        "ideas[0]: \"variants\": unknown variant \"c\"; this run's variants: a, b");
}

TEST_CASE("a plan from a plugin may change the strategy and lower the budget, nothing else") {
  ExplorationRequest request;
  request.budget = 8;
  const ExplorationPlan base{"bayes", 8, 6};
  std::string error;
  auto plan = plan_from_plugin({{"strategy", "random"}, {"budget", 4}}, request, base, &error);
  REQUIRE_MESSAGE(plan, error);
  CHECK(plan->strategy == "random");
  CHECK(plan->budget == 4);
  CHECK(plan->region_size == 6);
  CHECK_FALSE(plan_from_plugin({{"budget", 9}}, request, base, &error));
  CHECK(error == "\"budget\" must be between 1 and 8");
  CHECK_FALSE(plan_from_plugin({{"strategy", "psychic"}}, request, base, &error));
  CHECK(error.starts_with("unknown strategy 'psychic'"));
}

TEST_CASE("an after plugin amends the built-in analysis and leaves a record under its name") {
  TempDir dir;
  auto w = wire({plugin(dir, "adder", kAddFinding, false)});
  CHECK(w.analyzer->name() == kProfileAnalyzer);
  auto answer = w.analyzer->analyze(request());
  CHECK(w.builtin->calls == 1);
  CHECK(answer.decision.action ==
        "findings:small_transfers");  // the skill's own decision stays the built-in's
  auto records = w.wiring.records->take();
  REQUIRE(records.size() == 1);
  INFO(records[0].decision.outcome);
  REQUIRE(answer.result.findings.size() == 2);
  CHECK(answer.result.findings[0].kind == "small_transfers");
  CHECK(answer.result.findings[1].kind == "seen_goal");
  CHECK(answer.result.findings[1].summary == "unit");
  CHECK(answer.result.bound == "memory");
  CHECK(records[0].skill == kProfileAnalyzer);
  CHECK(records[0].decision.proposer == "plugin:adder");
  CHECK(records[0].decision.action == "add_finding");
  CHECK(records[0].decision.evidence["n"] == 1);
  CHECK(records[0].decision.evidence["findings_added"].size() == 1);
  CHECK(records[0].decision.outcome == "amended the built-in analysis: 1 finding(s) added, 0 removed");
  CHECK(w.wiring.records->take().empty());
}

TEST_CASE("a replacing plugin answers instead of the built-in, when it crashes the built-in answers") {
  TempDir dir;
  SUBCASE("answers") {
    auto w = wire({plugin(dir, "solo", kAddFinding, true)});
    auto answer = w.analyzer->analyze(request());
    CHECK(w.builtin->calls == 0);
    CHECK(answer.decision.proposer == "plugin:solo");
    REQUIRE(answer.result.findings.size() == 1);
    CHECK(answer.result.findings[0].kind == "seen_goal");
    CHECK(answer.result.bound == "unknown");
    CHECK(w.wiring.records->take().empty());
  }
  SUBCASE("crashes") {
    auto w = wire({plugin(dir, "fragile", kCrash, true)});
    auto answer = w.analyzer->analyze(request());
    CHECK(w.builtin->calls == 1);
    CHECK(answer.decision.proposer == "rules");
    CHECK(answer.result.findings.size() == 1);
    auto records = w.wiring.records->take();
    REQUIRE(records.size() == 1);
    CHECK(records[0].decision.proposer == "plugin:fragile");
    CHECK(records[0].decision.action == "plugin_failed");
    CHECK(records[0].decision.evidence["failure"] == "crashed");
    CHECK(records[0].decision.outcome.starts_with("crashed: plugin 'fragile': exited with code 4"));
    CHECK(records[0].decision.outcome.ends_with("; the built-in result is used"));
    // No restarts left: the next call fails at once and the built-in answers again.
    w.analyzer->analyze(request());
    CHECK(w.builtin->calls == 2);
    records = w.wiring.records->take();
    REQUIRE(records.size() == 1);
    CHECK(records[0].decision.evidence["failure"] == "dead");
  }
}

TEST_CASE("a replacing plugin wraps the built-in before after plugins, whatever the goal's order") {
  TempDir dir;
  auto w = wire({plugin(dir, "adder", kAddFinding, false), plugin(dir, "solo", kAddFinding, true)});
  auto answer = w.analyzer->analyze(request());
  CHECK(w.builtin->calls == 0);
  CHECK(answer.decision.proposer == "plugin:solo");
  // solo's one finding, then adder's on top of it.
  REQUIRE(answer.result.findings.size() == 2);
  auto records = w.wiring.records->take();
  REQUIRE(records.size() == 1);
  CHECK(records[0].decision.proposer == "plugin:adder");
}

TEST_CASE("a benchmark_runner plugin cannot be installed") {
  TempDir dir;
  auto config = plugin(dir, "runner", kCrash, true);
  config.role = config.replaces = kBenchmarkRunner;
  CHECK_THROWS_AS(wire({config}), UserError);
}

namespace {

class FixedGenerator : public GeneratorSkill {
 public:
  int calls = 0;
  std::string name() const override { return kKernelGenerator; }
  SkillResult<Generation> generate(const GenerationRequest&) override {
    ++calls;
    SkillResult<Generation> out;
    Idea idea;
    idea.id = "builtin-idea";
    idea.kind = "explore";
    idea.variant = "a";
    out.result.ideas.push_back(idea);
    return out;
  }
};

class FixedExplorer : public ExplorerSkill {
 public:
  std::string name() const override { return kParamExplorer; }
  SkillResult<ExplorationPlan> plan(const ExplorationRequest& request) override {
    return {{"grid", request.budget, 6}, {}};
  }
  Exploration explore(const ExplorationRequest&, const ExplorationPlan&, const MeasureBatch&,
                      const std::function<bool()>&) override {
    return {};
  }
};

// Answers generator requests with an idea for the last catalog variant, and
// explorer requests with half the budget; checks what each request carries.
const char* kGeneratorAndExplorer = R"(
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    request = message["request"]
    if message["role"] == "kernel_generator":
        variants = request["catalog"]["variants"]
        builtin = [i["id"] for i in request.get("builtin", {}).get("ideas", [])]
        idea = {"id": "plugin-idea", "kind": "raise", "variant": variants[-1]["name"],
                "region": {"tile": variants[-1]["parameters"]["tile"][:2]}, "rationale": ",".join(builtin)}
        reply = {"result": {"ideas": [idea]}, "decision": {"action": "propose", "rationale": "r"}}
    else:
        reply = {"result": {"budget": request["budget"] // 2},
                 "decision": {"action": "halve", "rationale": "r", "evidence": {"was": request["builtin"]["budget"]}}}
    print(json.dumps(reply), flush=True)
)";

}  // namespace

TEST_CASE("generator and explorer plugins: a replacing generator's ideas, an after explorer's budget") {
  TempDir dir;
  const VariantCatalog catalog = small_catalog();
  PluginSkillConfig generator_plugin;
  generator_plugin.name = "ideas";
  generator_plugin.command = {dir.python_script("both.py", kGeneratorAndExplorer).string()};
  generator_plugin.role = generator_plugin.replaces = kKernelGenerator;
  generator_plugin.workdir = dir.path();
  PluginSkillConfig explorer_plugin = generator_plugin;
  explorer_plugin.name = "planner";
  explorer_plugin.role = explorer_plugin.after = kParamExplorer;
  explorer_plugin.replaces.clear();

  std::unique_ptr<AnalyzerSkill> analyzer = std::make_unique<FixedAnalyzer>();
  auto fixed_generator = std::make_unique<FixedGenerator>();
  FixedGenerator* builtin_generator = fixed_generator.get();
  std::unique_ptr<GeneratorSkill> generator = std::move(fixed_generator);
  std::unique_ptr<ExplorerSkill> explorer = std::make_unique<FixedExplorer>();
  auto wiring =
      install_plugins({generator_plugin, explorer_plugin}, {{"name", "unit"}}, analyzer, generator, explorer);

  GenerationRequest generation_request;
  generation_request.catalog = &catalog;
  generation_request.best = catalog.baseline;
  auto generation = generator->generate(generation_request);
  CHECK(builtin_generator->calls == 0);
  CHECK(generation.decision.proposer == "plugin:ideas");
  REQUIRE(generation.result.ideas.size() == 1);
  CHECK(generation.result.ideas[0].id == "plugin-idea");
  CHECK(generation.result.ideas[0].variant == "b");
  CHECK(generation.result.ideas[0].rationale == "");  // a replacing plugin sees no built-in ideas
  CHECK(generation.result.ideas[0].region.at("tile").size() == 2);

  ExplorationRequest exploration_request;
  exploration_request.variant = &catalog.variants[0];
  exploration_request.region = catalog.variants[0].space;
  exploration_request.budget = 8;
  auto plan = explorer->plan(exploration_request);
  CHECK(plan.result.strategy == "grid");
  CHECK(plan.result.budget == 4);
  CHECK(plan.result.region_size == 6);
  auto records = wiring.records->take();
  REQUIRE(records.size() == 1);
  CHECK(records[0].skill == kParamExplorer);
  CHECK(records[0].decision.proposer == "plugin:planner");
  CHECK(records[0].decision.evidence["was"] == 8);
  CHECK(records[0].decision.outcome == "amended the built-in plan: grid, budget 8 -> grid, budget 4");
}
