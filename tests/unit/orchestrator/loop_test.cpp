// The orchestrator's loop with the built-in skills on a small simulated GEMM,
// one skill wrapped where a test needs a situation the built-ins only reach
// on long runs.
#include <doctest/doctest.h>

#include <cstdio>

#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "skills/kernel_generator.hpp"
#include "store/store.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using autotune::testing::TempDir;

namespace {

// An idea whose region holds only the best itself, measured already, so the
// explorer settles it without measuring.
skills::Idea spent_region(const skills::Candidate& best, const std::string& id) {
  skills::Idea spent;
  spent.kind = "explore";
  spent.variant = best.variant;
  spent.id = id;
  for (const auto& [name, value] : best.params.items())
    spent.region[name] = {search::param_value_from_json(value, name)};
  spent.rationale = "a region holding only the best";
  return spent;
}

// The built-in generator, with the spent region in front (once).
class SpentRegionFirst : public skills::GeneratorSkill {
 public:
  std::string name() const override { return skills::kKernelGenerator; }
  skills::SkillResult<skills::Generation> generate(const skills::GenerationRequest& request) override {
    auto out = builtin_.generate(request);
    const std::string id = "only-the-best:" + request.best.key();
    if (!request.tried_ideas.count(id))
      out.result.ideas.insert(out.result.ideas.begin(), spent_region(request.best, id));
    return out;
  }

 private:
  skills::KernelGenerator builtin_;
};

// A generator proposing nothing but the spent region, under a new id each
// time; counts its proposals in `proposed` (which outlives the run's skills).
class OnlySpentRegions : public skills::GeneratorSkill {
 public:
  explicit OnlySpentRegions(int& proposed) : proposed(proposed) {}
  std::string name() const override { return skills::kKernelGenerator; }
  skills::SkillResult<skills::Generation> generate(const skills::GenerationRequest& request) override {
    skills::SkillResult<skills::Generation> out;
    out.result.ideas.push_back(spent_region(request.best, "spent-" + std::to_string(++proposed)));
    out.decision.action = "propose:explore";
    return out;
  }
  int& proposed;
};

// A small GEMM goal run to its end with `generator` in place of the built-in one.
orchestrator::RunSummary run_small_gemm(int max_iterations, std::unique_ptr<skills::GeneratorSkill> generator,
                                        store::Store& store, int budget = 6,
                                        const std::string& strategy = "random") {
  TempDir dir;
  auto prepared =
      orchestrator::load_and_prepare(dir.write("goal.yaml",
                                               "name: unspent\n"
                                               "kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, "
                                               "dtype: bf16}\n"
                                               "goal: {improvement: 0.95}\n"
                                               "max_iterations: " +
                                                   std::to_string(max_iterations) +
                                                   "\n"
                                                   "budget: {evaluations: " +
                                                   std::to_string(budget) +
                                                   ", wall_time_s: 60}\n"
                                                   "search: {strategy: " +
                                                   strategy +
                                                   ", batch_size: 2}\n"
                                                   "start: {variant: tiled}\n"
                                                   "seed: 5\n"));
  orchestrator::RunContext context{prepared.goal, prepared.setup.catalog,           *prepared.setup.target,
                                   store,         prepared.setup.simulator_version, {}};
  orchestrator::SkillSet skills;
  skills.generator = std::move(generator);
  return orchestrator::Orchestrator(context, std::move(skills)).run();
}

}  // namespace

TEST_CASE("loop: an idea that settles without measuring does not use up the iteration") {
  auto store = store::open_store(":memory:");
  const auto summary = run_small_gemm(1, std::make_unique<SpentRegionFirst>(), *store);

  int measured_in_iteration_1 = 0;
  for (const auto& trial : store->trials(summary.run_id)) measured_in_iteration_1 += trial.iteration == 1;
  CHECK(measured_in_iteration_1 > 0);  // the next idea got the iteration
  bool said_so = false;
  for (const auto& d : store->decisions(summary.run_id, std::string("orchestrator")))
    said_so = said_so || d.rationale.find("settled without a measurement") != std::string::npos;
  CHECK(said_so);
}

TEST_CASE("loop: a skill proposing spent regions under new ids cannot hold the loop in place") {
  auto store = store::open_store(":memory:");
  int proposed = 0;
  const auto summary = run_small_gemm(2, std::make_unique<OnlySpentRegions>(proposed), *store);
  CHECK(summary.stop_reason.starts_with("max_iterations"));
  CHECK(summary.evaluations == 1);  // the baseline
  CHECK(proposed == 8 + 2);         // eight handed their iteration on; then each iteration was spent
}

TEST_CASE("loop: when no finding proposes anything new, the rest of the budget goes to the goal's strategy") {
  auto store = store::open_store(":memory:");
  const auto summary = run_small_gemm(6, std::make_unique<skills::KernelGenerator>(), *store, 30, "bayes");
  REQUIRE(summary.evaluations == 30);
  const auto decisions = store->decisions(summary.run_id);
  const auto handover = std::find_if(decisions.begin(), decisions.end(), [](const store::Decision& d) {
    return d.skill == skills::kKernelGenerator && d.action == "propose:handover";
  });
  REQUIRE(handover != decisions.end());
  // The log says why: no finding proposed anything new, which variants were kept and which set aside.
  const nlohmann::json& evidence = handover->evidence.at("handover");
  CHECK(evidence.at("why").get<std::string>().find("no finding") != std::string::npos);
  REQUIRE_FALSE(evidence.at("kept").empty());
  for (const auto& kept : evidence.at("kept")) CHECK(kept.contains("why"));
  for (const auto& dropped : evidence.at("set_aside"))
    CHECK(dropped.at("times_the_best").get<double>() > evidence.at("spread").get<double>());
  CHECK(evidence.at("history").get<int>() > 0);

  // The policy hands it every evaluation left, and the explorer searches the kept variants with the goal's
  // strategy, told what was measured; nothing after it is a neighbourhood search.
  bool tried = false, searched = false;
  for (auto d = handover; d != decisions.end(); ++d) {
    if (d->skill == "orchestrator" && d->action == "try:handover") {
      tried = true;
      CHECK(d->rationale.find("hand the remaining budget") != std::string::npos);
      int budget = 0, left = 0;  // "...; budget N of M left over K iterations"
      REQUIRE(std::sscanf(d->rationale.substr(d->rationale.rfind("; budget ")).c_str(), "; budget %d of %d",
                          &budget, &left) == 2);
      CHECK(budget == left);
    }
    if (d->skill == skills::kParamExplorer && d->inputs.contains("variants")) {
      searched = true;
      CHECK(d->inputs.at("variants") == evidence.at("kept_variants"));
      CHECK(d->inputs.at("known").get<int>() == evidence.at("history").get<int>());
    }
    if (d->skill == "orchestrator" && d->inputs.contains("idea"))
      CHECK_FALSE(d->inputs.at("idea").get<std::string>().starts_with("neighbourhood:"));
  }
  CHECK(tried);
  CHECK(searched);
}
