// The orchestrator's loop with the built-in skills on a small simulated GEMM,
// one skill wrapped where a test needs a situation the built-ins only reach
// on long runs.
#include <doctest/doctest.h>

#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "skills/kernel_generator.hpp"
#include "store/store.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using autotune::testing::TempDir;

namespace {

// The built-in generator, with one idea in front: a region holding only the
// best itself, measured already, so the explorer settles it without measuring.
class SpentRegionFirst : public skills::GeneratorSkill {
 public:
  std::string name() const override { return skills::kKernelGenerator; }
  skills::SkillResult<skills::Generation> generate(const skills::GenerationRequest& request) override {
    auto out = builtin_.generate(request);
    skills::Idea spent;
    spent.kind = "explore";
    spent.variant = request.best.variant;
    spent.id = "only-the-best:" + request.best.key();
    if (request.tried_ideas.count(spent.id)) return out;
    for (const auto& [name, value] : request.best.params.items())
      spent.region[name] = {search::param_value_from_json(value, name)};
    spent.rationale = "a region holding only the best";
    out.result.ideas.insert(out.result.ideas.begin(), spent);
    return out;
  }

 private:
  skills::KernelGenerator builtin_;
};

// A generator proposing nothing but the spent region, under a new id each time.
class OnlySpentRegions : public skills::GeneratorSkill {
 public:
  std::string name() const override { return skills::kKernelGenerator; }
  skills::SkillResult<skills::Generation> generate(const skills::GenerationRequest& request) override {
    skills::SkillResult<skills::Generation> out;
    skills::Idea spent;
    spent.kind = "explore";
    spent.variant = request.best.variant;
    spent.id = "spent-" + std::to_string(++proposed);
    for (const auto& [name, value] : request.best.params.items())
      spent.region[name] = {search::param_value_from_json(value, name)};
    out.result.ideas.push_back(spent);
    out.decision.action = "propose:explore";
    return out;
  }
  int proposed = 0;
};

orchestrator::PreparedGoal small_gemm(const TempDir& dir, int max_iterations) {
  return orchestrator::load_and_prepare(dir.write("goal.yaml",
                                                  "name: unspent\n"
                                                  "kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, "
                                                  "dtype: bf16}\n"
                                                  "goal: {improvement: 0.95}\n"
                                                  "max_iterations: " +
                                                      std::to_string(max_iterations) +
                                                      "\n"
                                                      "budget: {evaluations: 6, wall_time_s: 60}\n"
                                                      "search: {strategy: random, batch_size: 2}\n"
                                                      "start: {variant: tiled}\n"
                                                      "seed: 5\n"));
}

}  // namespace

TEST_CASE("loop: an idea that settles without measuring does not use up the iteration") {
  TempDir dir;
  auto prepared = small_gemm(dir, 1);
  auto store = store::open_store(":memory:");
  orchestrator::RunContext context{prepared.goal, prepared.setup.catalog,           *prepared.setup.target,
                                   *store,        prepared.setup.simulator_version, {}};
  orchestrator::SkillSet skills;
  skills.generator = std::make_unique<SpentRegionFirst>();
  const auto summary = orchestrator::Orchestrator(context, std::move(skills)).run();

  int measured_in_iteration_1 = 0;
  for (const auto& trial : store->trials(summary.run_id)) measured_in_iteration_1 += trial.iteration == 1;
  CHECK(measured_in_iteration_1 > 0);  // the next idea got the iteration
  bool said_so = false;
  for (const auto& d : store->decisions(summary.run_id, std::string("orchestrator")))
    said_so = said_so || d.rationale.find("settled without a measurement") != std::string::npos;
  CHECK(said_so);
}

TEST_CASE("loop: a skill proposing spent regions under new ids cannot hold the loop in place") {
  TempDir dir;
  auto prepared = small_gemm(dir, 2);
  auto store = store::open_store(":memory:");
  orchestrator::RunContext context{prepared.goal, prepared.setup.catalog,           *prepared.setup.target,
                                   *store,        prepared.setup.simulator_version, {}};
  orchestrator::SkillSet skills;
  auto generator = std::make_unique<OnlySpentRegions>();
  const auto* proposals = generator.get();
  skills.generator = std::move(generator);
  const auto summary = orchestrator::Orchestrator(context, std::move(skills)).run();
  CHECK(summary.stop_reason.starts_with("max_iterations"));
  CHECK(summary.evaluations == 1);      // the baseline
  CHECK(proposals->proposed == 8 + 2);  // eight handed their iteration on; then each iteration was spent
}
