// Extension points are registries filled from files: a target kind registered
// by this file (as orchestrator/targets/*.cpp register theirs) is read, named
// in errors and prepared by the goal reader with no list edited; the kernel
// families, skills and strategies the goal reader accepts are the registered
// ones.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "kernels/family.hpp"
#include "orchestrator/goal.hpp"
#include "orchestrator/target_kind.hpp"
#include "search/strategy.hpp"
#include "skills/plugin/plugin_skill.hpp"
#include "skills/skill.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using namespace autotune::orchestrator;
using autotune::testing::TempDir;

namespace {

int recorded_alias_prepared = 0;

// A kind that measures like `replay` under its own name. It reaches the
// replay kind through the registry at run time, never at registration.
TargetKind recorded_alias_kind() {
  TargetKind kind;
  kind.description = "a test kind: replay under another name";
  kind.read = [](ConfigReader& target, Goal& goal) {
    target_kind_registry().get("replay").read(target, goal);
  };
  kind.brings_own_space = true;
  kind.own_space_family = "alias_family";
  kind.prepare = [](Goal& goal) {
    ++recorded_alias_prepared;
    return target_kind_registry().get("replay").prepare(goal);
  };
  return kind;
}

const TargetKindRegistration registration("test_recorded_alias", recorded_alias_kind());

std::string cachefile() {
  return (std::filesystem::path(AUTOTUNE_SOURCE_DIR) / "../shared/data/tuning/convolution/RTX_3090.json")
      .lexically_normal()
      .string();
}

std::string goal_text(const std::string& kind) {
  return "target: {kind: " + kind + ", cachefile: " + cachefile() +
         "}\nobjective: latency\nmax_iterations: 2\nbudget: {evaluations: 8}\n";
}

}  // namespace

TEST_CASE("a target kind registered from its own file is read and prepared by the goal reader") {
  TempDir dir;
  auto goal = load_goal(dir.write("alias.yaml", goal_text("test_recorded_alias")));
  CHECK(goal.target.kind == "test_recorded_alias");
  CHECK(goal.target.cachefile == cachefile());
  CHECK(goal.family == "alias_family");  // its own space: `kernel:` defaults to the kind's family

  const int before = recorded_alias_prepared;
  auto setup = prepare_run(goal);
  CHECK(recorded_alias_prepared == before + 1);
  REQUIRE(setup.target != nullptr);
  CHECK(setup.catalog.variants.size() >= 1);
}

TEST_CASE("an unknown target kind is refused with the registered kinds") {
  TempDir dir;
  std::string message;
  try {
    load_goal(dir.write("unknown.yaml", goal_text("no_such_kind")));
  } catch (const UserError& e) {
    message = e.what();
  }
  CHECK(message.find("unknown.yaml:1") != std::string::npos);
  CHECK(message.find("no_such_kind") != std::string::npos);
  for (const auto& name : target_kind_registry().names()) CHECK(message.find(name) != std::string::npos);
  CHECK(message.find("test_recorded_alias") != std::string::npos);
}

TEST_CASE("the built-in kinds, families, skills and strategies are registered by their files") {
  for (const char* kind : {"sim", "replay", "command"}) CHECK(target_kind_registry().contains(kind));
  CHECK(target_kind_registry().get("sim").runs_kernel_sources);
  CHECK_FALSE(target_kind_registry().get("replay").runs_kernel_sources);

  // Every file under kernels/families/ that defines a family registers it.
  for (const char* family : {"exp", "gemm", "rmsnorm", "attention", "add", "silu_mul", "silu", "rope", "transpose"})
    CHECK(kernels::family_registry().contains(family));
  for (const auto& [name, family] : kernels::family_registry().entries()) CHECK(family.name == name);

  // A plugin may take the role of any registered skill that does not refuse plugins, in the loop's order.
  const auto roles = skills::plugin_roles();
  CHECK(roles ==
        std::vector<std::string>{skills::kProfileAnalyzer, skills::kKernelGenerator, skills::kParamExplorer});
  CHECK(skills::skill_registry().names().size() == roles.size() + 1);
  CHECK_FALSE(skills::skill_registry().get(skills::kBenchmarkRunner).plugin_refusal.empty());

  for (const char* strategy : {"grid", "random", "bayes", "genetic", "annealing"})
    CHECK(search::strategy_registry().contains(strategy));
}
