// The built-in skills on synthetic inputs: the analyzer's rules, the
// generator's regions, the explorer's budget and the runner's ordering,
// commits, cache and timeouts.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "skills/benchmark_runner.hpp"
#include "skills/flat_space.hpp"
#include "skills/kernel_generator.hpp"
#include "skills/param_explorer.hpp"
#include "skills/profile_analyzer.hpp"
#include "skills/targets/replay_target.hpp"
#include "skills/targets/sim_target.hpp"
#include "store/store.hpp"

using namespace autotune;
using namespace autotune::skills;

namespace {

const Finding* find(const std::vector<Finding>& findings, const std::string& kind) {
  for (const auto& f : findings)
    if (f.kind == kind) return &f;
  return nullptr;
}

VariantSpace make_variant(const std::string& name) {
  VariantSpace v;
  v.name = name;
  v.parameters = {
      search::ParameterSpec::ordered("a", {std::int64_t(32), std::int64_t(64), std::int64_t(128)}),
      search::ParameterSpec::ordered("b", {std::int64_t(1), std::int64_t(2), std::int64_t(3)}),
      search::ParameterSpec::ordered("c", {std::int64_t(1), std::int64_t(2), std::int64_t(4)})};
  v.roles = {{"a", kRoleTile}, {"b", kRolePipelineDepth}, {"c", kRoleUnroll}};
  v.defaults = {{"a", 64}, {"b", 1}, {"c", 1}};
  build_space(v);
  return v;
}

// Latency as a smooth function of the parameters; "slow" adds a constant.
class FakeTarget : public MeasurementTarget {
 public:
  std::string kind() const override { return "fake"; }
  std::string description() const override { return "fake"; }
  std::string cache_identity() const override { return identity; }
  Measurement measure(const Candidate& c, const MeasureOptions& options) override {
    ++calls;
    if (stop_at_deadline) {  // as a child process killed at the deadline reports it
      std::this_thread::sleep_for(std::chrono::duration<double>(options.deadline_s));
      Measurement m;
      m.status = Outcome::timeout;
      m.error = "timed out after " + std::to_string(options.deadline_s) + " s";
      return m;
    }
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    Measurement m;
    const double a = c.params.value("a", 64), b = c.params.value("b", 1), cc = c.params.value("c", 1);
    if (a == 128 && cc == 4) {
      m.status = Outcome::invalid;
      m.error = "sbuf_overflow: does not fit";
      return m;
    }
    m.status = Outcome::ok;
    m.metrics = {{"latency_s", 1.0 / a + 0.5 / b + 0.2 / cc + (c.variant == "slow" ? 1.0 : 0.0)}};
    m.verification = {{"passed", true}};
    m.profile = {{"total_time", m.metrics["latency_s"]}};
    return m;
  }
  std::optional<TimeLimit> own_time_limit() const override { return own_limit; }
  std::string identity = "fake:1";
  std::atomic<int> calls{0};
  int sleep_ms = 0;
  std::optional<TimeLimit> own_limit;
  bool stop_at_deadline = false;
};

// Variants named `names` (see make_variant), the first one's a=64 b=2 c=1 the baseline.
VariantCatalog catalog_of(const std::vector<std::string>& names) {
  VariantCatalog catalog;
  for (const auto& name : names) catalog.variants.push_back(make_variant(name));
  catalog.baseline = {names.front(), {{"a", 64}, {"b", 2}, {"c", 1}}};
  return catalog;
}

// A generation request on `catalog` (which must outlive it) from its baseline.
GenerationRequest request_for(const VariantCatalog& catalog) {
  GenerationRequest request;
  request.catalog = &catalog;
  request.best = catalog.baseline;
  return request;
}

int64_t new_run(store::Store& s) {
  store::Run run;
  run.goal_name = "test";
  return s.create_run(run);
}

}  // namespace

TEST_CASE(
    "a candidate's text for people drops the placeholder of a variant without parameters, its key keeps it") {
  const skills::Candidate naive{"naive", {{"_", 0}}};
  CHECK(naive.text() == "naive");
  CHECK(naive.key() == "naive{_=0}");  // the identity config hashes and cache keys are made of
  CHECK(skills::Candidate{"naive", Json::object()}.text() == "naive");
  const skills::Candidate tiled{"tiled", {{"tile_size", 256}, {"engine", "vector"}}};
  CHECK(tiled.text() == "tiled{engine=vector,tile_size=256}");
  CHECK(tiled.text() == tiled.key());
}

TEST_CASE("configurations below a start lower its ordered parameters, one alone then all together") {
  VariantSpace v;
  v.name = "v";
  v.parameters = {
      search::ParameterSpec::ordered("a", {std::int64_t(32), std::int64_t(64), std::int64_t(128)}),
      search::ParameterSpec::categorical("engine", {"vector", "scalar"}),
      search::ParameterSpec::ordered("b",
                                     {std::int64_t(1), std::int64_t(2), std::int64_t(4), std::int64_t(8)})};
  v.constraints = {"a * b <= 512"};
  build_space(v);
  const Json start = {{"a", 128}, {"engine", "scalar"}, {"b", 8}};  // 1024: outside the constraint itself
  const auto below = configurations_below(v, start, 10);
  const std::vector<Json> expected = {
      {{"a", 64}, {"engine", "scalar"}, {"b", 8}},   // a one step down
      {{"a", 128}, {"engine", "scalar"}, {"b", 4}},  // b one step down
      // both one step down (64 * 4) is valid; both two steps down (32 * 2) too; three: a stays at 32
      {{"a", 64}, {"engine", "scalar"}, {"b", 4}},
      {{"a", 32}, {"engine", "scalar"}, {"b", 2}},
      {{"a", 32}, {"engine", "scalar"}, {"b", 1}}};
  CHECK(below == expected);
  CHECK(configurations_below(v, start, 2).size() == 2);
  // At the bottom already: nothing below.
  CHECK(configurations_below(v, {{"a", 32}, {"engine", "vector"}, {"b", 1}}, 10).empty());
}

TEST_CASE("analyzer: a DMA-bound profile without overlap asks for a deeper pipeline first") {
  ProfileAnalyzer analyzer;
  AnalysisRequest request;
  request.candidate = {"v", {{"a", 64}}};
  request.metrics = {{"latency_s", 1e-3}, {"roofline_bound_s", 1e-4}, {"compulsory_bytes", 1e6}};
  request.profile = {{"total_time", 1e-3},
                     {"tensor_engine_active_time_percent", 10},
                     {"vector_engine_active_time_percent", 40},
                     {"scalar_engine_active_time_percent", 5},
                     {"dma_active_time_percent", 60},
                     {"compute_active_time_percent", 40},
                     {"dma_compute_overlap_percent", 2},
                     {"hbm_read_bytes", 0.6e6},
                     {"hbm_write_bytes", 0.5e6},
                     {"dma_transfer_count", 10},
                     {"dma_transfer_average_bytes", 128 * 4096}};
  const auto result = analyzer.analyze(request);
  REQUIRE_FALSE(result.result.findings.empty());
  CHECK(result.result.findings.front().kind == "dma_bound_no_overlap");
  CHECK(result.result.findings.front().roles == std::vector<std::string>{kRolePipelineDepth});
  CHECK(result.result.bound == "memory");
  CHECK(result.decision.evidence.contains("dma_active_time_percent"));
  CHECK_FALSE(result.result.at_roofline);
}

TEST_CASE(
    "analyzer: memory-bound with the DMA idle between overlapped transfers asks for a deeper pipeline") {
  ProfileAnalyzer analyzer;
  AnalysisRequest request;
  request.candidate = {"v", {{"a", 64}}};
  request.metrics = {{"latency_s", 1.25e-3}, {"roofline_bound_s", 1e-3}, {"compulsory_bytes", 1e6}};
  request.profile = {{"total_time", 1.25e-3},
                     {"tensor_engine_active_time_percent", 40},
                     {"vector_engine_active_time_percent", 70},
                     {"dma_active_time_percent", 85},
                     {"compute_active_time_percent", 95},
                     {"dma_compute_overlap_percent", 84},
                     {"hbm_read_bytes", 0.5e6},
                     {"hbm_write_bytes", 0.5e6}};
  auto result = analyzer.analyze(request);
  CHECK(result.result.bound == "memory");
  const Finding* idle = find(result.result.findings, "memory_bound_dma_idle");
  REQUIRE(idle != nullptr);
  CHECK(idle->action == "raise");
  CHECK(idle->roles == std::vector<std::string>{kRolePipelineDepth});
  CHECK(idle->expected_gain == doctest::Approx(0.15));  // the idle share, within the roofline's 0.2
  CHECK(find(result.result.findings, "dma_bound_no_overlap") == nullptr);

  // Busy DMA queues: nothing to fill.
  request.profile["dma_active_time_percent"] = 95;
  request.profile["dma_compute_overlap_percent"] = 94;
  result = analyzer.analyze(request);
  CHECK(find(result.result.findings, "memory_bound_dma_idle") == nullptr);

  // At the roofline: nothing to gain.
  request.profile["dma_active_time_percent"] = 85;
  request.profile["dma_compute_overlap_percent"] = 84;
  request.metrics["latency_s"] = 1.04e-3;
  result = analyzer.analyze(request);
  CHECK(find(result.result.findings, "memory_bound_dma_idle") == nullptr);

  // Poor overlap is the other finding's.
  request.metrics["latency_s"] = 1.25e-3;
  request.profile["dma_compute_overlap_percent"] = 10;
  result = analyzer.analyze(request);
  CHECK(find(result.result.findings, "memory_bound_dma_idle") == nullptr);
  CHECK(find(result.result.findings, "dma_bound_no_overlap") != nullptr);
}

TEST_CASE("analyzer: repeated loads ask for a structural variant, at the roofline it says stop") {
  ProfileAnalyzer analyzer;
  AnalysisRequest request;
  request.metrics = {{"latency_s", 1e-3}, {"roofline_bound_s", 1e-4}, {"compulsory_bytes", 1e6}};
  request.profile = {{"dma_active_time_percent", 95},
                     {"compute_active_time_percent", 90},
                     {"tensor_engine_active_time_percent", 90},
                     {"dma_compute_overlap_percent", 88},
                     {"hbm_read_bytes", 40e6},
                     {"hbm_write_bytes", 0.5e6}};
  auto result = analyzer.analyze(request);
  REQUIRE_FALSE(result.result.findings.empty());
  CHECK(result.result.findings.front().kind == "repeated_loads");
  CHECK(result.result.findings.front().action == "structural");

  // At 1.1x the bound a kernel can still gain 10%: only within 1.05x does it stop.
  request.metrics["latency_s"] = 1.1e-4;
  CHECK_FALSE(analyzer.analyze(request).result.at_roofline);
  request.metrics["latency_s"] = 1.04e-4;
  result = analyzer.analyze(request);
  CHECK(result.result.at_roofline);
  CHECK(result.result.findings.front().action == "stop");
}

TEST_CASE("analyzer: without a profile there are no findings, only the metrics") {
  ProfileAnalyzer analyzer;
  AnalysisRequest request;
  request.metrics = {{"latency_s", 2.0}};
  const auto result = analyzer.analyze(request);
  CHECK(result.result.findings.empty());
  CHECK(result.result.bound == "unknown");
}

TEST_CASE("generator: a raise finding searches the role's higher values with the rest fixed") {
  const VariantCatalog catalog = catalog_of({"fast", "slow"});
  KernelGenerator generator;
  GenerationRequest request = request_for(catalog);
  request.measured_variants = {"fast"};
  request.analysis.findings.push_back({"dma_bound_no_overlap", "", {}, "raise", {kRolePipelineDepth}, 0.3});
  request.analysis.findings.push_back({"repeated_loads", "", {}, "structural", {}, 0.1});
  const auto generation = generator.generate(request);
  REQUIRE(generation.result.ideas.size() >= 2);
  const Idea& raise = generation.result.ideas[0];
  CHECK(raise.kind == "raise");
  REQUIRE(raise.region.count("b"));
  CHECK(raise.region.at("b").size() == 2);  // 2 and 3
  CHECK(raise.region.at("a").size() == 1);
  const auto region = catalog.variant("fast").region(raise.region);
  REQUIRE(region.has_value());
  CHECK(region->size() == 2);
  const Idea& structural = generation.result.ideas[1];
  CHECK(structural.kind == "structural");
  REQUIRE(structural.probes.size() == 1);
  CHECK(structural.probes[0].variant == "slow");
  CHECK(structural.probes[0].params.at("b") == 2);  // carried over

  request.tried_ideas.insert(raise.id);
  const auto again = generator.generate(request);
  CHECK(again.result.ideas.front().id != raise.id);

  // Every value above the best's, walked one step at a time while each
  // step improves (a line search), not all measured.
  request.best = {"fast", {{"a", 64}, {"b", 1}, {"c", 1}}};
  const auto from_lowest = generator.generate(request).result.ideas.front();
  REQUIRE(from_lowest.region.count("b"));
  CHECK(from_lowest.region.at("b") ==
        std::vector<search::ParamValue>{std::int64_t(1), std::int64_t(2), std::int64_t(3)});
  CHECK(from_lowest.strategy == "coordinate");
  CHECK(from_lowest.strategy_options.value("line", false));
}

TEST_CASE(
    "generator: a raise whose first step does not fit beside the memory-holding parameters also probes it "
    "with them stepped down") {
  VariantCatalog catalog = catalog_of({"fast"});
  // a a tile, b a pipeline depth; the space holds a * b <= 128 (a larger tile
  // fits only with fewer buffers).
  VariantSpace& fast = catalog.variants[0];
  fast.constraints = {"a * b <= 128"};
  build_space(fast);
  KernelGenerator generator;
  GenerationRequest request = request_for(catalog);
  request.measured_variants = {"fast"};
  request.best = {"fast", {{"a", 64}, {"b", 2}, {"c", 1}}};
  request.analysis.findings.push_back({"small_transfers", "", {}, "raise", {kRoleTile}, 0.3});
  const auto ideas = generator.generate(request).result.ideas;
  REQUIRE_FALSE(ideas.empty());
  const Idea& raise = ideas.front();
  CHECK(raise.kind == "raise");
  // a = 128 with b = 2 is outside the space: probed with b one step down.
  REQUIRE(raise.probes.size() == 1);
  CHECK(raise.probes[0] == Candidate{"fast", {{"a", 128}, {"b", 1}, {"c", 1}}});
  CHECK(raise.rationale.find("stepped down") != std::string::npos);

  // Where the step fits, nothing is traded.
  request.best = {"fast", {{"a", 32}, {"b", 2}, {"c", 1}}};
  CHECK(generator.generate(request).result.ideas.front().probes.empty());
}

TEST_CASE(
    "generator: a structural variant that overflowed with the settings carried over is probed again, its "
    "memory-holding parameters stepped down to the largest settings not predicted to overflow") {
  VariantCatalog catalog = catalog_of({"fast", "slow"});
  // slow: a a tile, b a pipeline depth, c a block (b and c hold memory).
  catalog.variants[1].roles = {{"a", kRoleTile}, {"b", kRolePipelineDepth}, {"c", kRoleBlock}};
  const VariantSpace& slow = catalog.variant("slow");
  const auto at = [&](std::int64_t a, std::int64_t b, std::int64_t c) {
    return search::configuration_from_json(*slow.space, {{"a", a}, {"b", b}, {"c", c}});
  };
  KernelGenerator generator;
  GenerationRequest request = request_for(catalog);
  request.measured_variants = {"fast"};
  request.measured_values = {{"fast", {1.0}}};
  request.analysis.findings.push_back({"repeated_loads", "", {}, "structural", {}, 0.1});
  // The structural probe of slow, the best's settings carried over, overflowed.
  request.tried_ideas = {"structural:slow"};
  request.measured_failures["slow"] = {
      search::Observation::failed(at(128, 3, 4), "sbuf_overflow: the kernel needs 300000 bytes")};
  auto refit = [&]() -> std::optional<Idea> {
    for (const auto& idea : generator.generate(request).result.ideas)
      if (idea.kind == "structural") return idea;
    return std::nullopt;
  };
  auto first = refit();
  REQUIRE(first.has_value());
  REQUIRE(first->probes.size() == 1);
  CHECK(first->variant == "slow");
  // One step down together along b and c; the tile a is kept.
  CHECK(first->probes[0] == Candidate{"slow", {{"a", 128}, {"b", 2}, {"c", 2}}});
  CHECK(first->rationale.find("sbuf_overflow") != std::string::npos);

  // An overflow measured at (128, 2, 1) predicts one at (128, 2, 2), which
  // holds at least as much: the next rung down is probed instead.
  request.measured_failures["slow"].push_back(search::Observation::failed(at(128, 2, 1), "psum_overflow: x"));
  auto second = refit();
  REQUIRE(second.has_value());
  CHECK(second->probes.at(0) == Candidate{"slow", {{"a", 128}, {"b", 1}, {"c", 1}}});

  // The lowest rung overflowed: nothing is left to probe, and the log says so.
  request.tried_ideas.insert(second->id);
  request.measured_failures["slow"].push_back(search::Observation::failed(at(128, 1, 1), "sbuf_overflow: x"));
  CHECK_FALSE(refit().has_value());
  CHECK(generator.generate(request).decision.alternatives.dump().find("refit:slow") != std::string::npos);

  // A variant that failed for another reason, or ran once, is not refitted.
  request.measured_failures["slow"] = {search::Observation::failed(at(128, 3, 4), "wrong_answer: mismatch")};
  CHECK_FALSE(refit().has_value());
  request.measured_failures["slow"] = {search::Observation::failed(at(128, 3, 4), "sbuf_overflow: x")};
  request.measured_values["slow"] = {2.0};
  CHECK_FALSE(refit().has_value());
}

TEST_CASE("explorer: enumerates a small region, respects the budget, never repeats") {
  const VariantSpace variant = make_variant("fast");
  ParamExplorer explorer;
  ExplorationRequest request;
  request.variant = &variant;
  request.region = variant.space;
  request.strategy = "random";
  request.seed = 3;
  request.batch_size = 4;
  request.budget = 10;
  std::set<std::string> seen;
  int calls = 0;
  MeasureBatch measure = [&](const std::vector<Candidate>& batch) {
    std::vector<search::Observation> out;
    for (const auto& c : batch) {
      CHECK(seen.insert(c.key()).second);
      ++calls;
      out.push_back(search::Observation::success({}, c.params.at("a").get<double>()));
    }
    return out;
  };
  const auto plan = explorer.plan(request);
  CHECK(plan.result.strategy == "random");  // 27 > 10
  const auto result = explorer.explore(request, plan.result, measure, {});
  CHECK(result.evaluations == 10);
  CHECK(calls == 10);

  request.budget = 100;
  const auto full = explorer.plan(request);
  CHECK(full.result.strategy == "grid");
  CHECK(full.result.budget == int(variant.space->size()));
  // The alternatives: the request's strategy and the grid, exactly one chosen; one entry when they are one.
  const Json& both = full.decision.alternatives;
  REQUIRE(both.size() == 2);
  CHECK(both[0].at("chosen").get<bool>() != both[1].at("chosen").get<bool>());
  request.strategy = "grid";
  const Json one = explorer.plan(request).decision.alternatives;
  CHECK(one == Json::array({{{"strategy", "grid"}, {"chosen", true}}}));
}

TEST_CASE("explorer: a plan that runs another strategy than the request's runs it with its own defaults") {
  const VariantSpace variant = make_variant("fast");
  ParamExplorer explorer;
  ExplorationRequest request;
  request.variant = &variant;
  request.region = variant.space;
  request.strategy = "bayes";
  request.strategy_options = {{"initial", 2}};  // bayes's, which the grid does not take
  request.batch_size = 4;
  request.budget = 100;
  MeasureBatch measure = [](const std::vector<Candidate>& batch) {
    std::vector<search::Observation> out;
    for (const auto& c : batch)
      out.push_back(search::Observation::success({}, c.params.at("a").get<double>()));
    return out;
  };
  const auto plan = explorer.plan(request);
  REQUIRE(plan.result.strategy == "grid");  // the region fits in the budget
  CHECK(explorer.explore(request, plan.result, measure, {}).evaluations > 0);

  // A plugin's plan: coordinate's options stay with coordinate.
  request.strategy = "coordinate";
  request.strategy_options = {{"passes", 1}, {"line", true}};
  request.strategy_chosen = true;
  request.budget = 5;
  CHECK(explorer.explore(request, {"random", 5, variant.space->size()}, measure, {}).evaluations == 5);
}

TEST_CASE("explorer: a configuration holding more than one that overflowed is predicted to, not measured") {
  // Memory held: b (pipeline depth) x c (block); a is a tile size, which
  // predicts nothing (a smaller tile along the partitions can hold more).
  VariantSpace variant = make_variant("fast");
  variant.roles = {{"a", kRoleTile}, {"b", kRolePipelineDepth}, {"c", kRoleBlock}};
  auto holds = [](const search::Configuration& c) {
    return search::numeric_value(c[1]) * search::numeric_value(c[2]);
  };
  ParamExplorer explorer;
  ExplorationRequest request;
  request.variant = &variant;
  request.region = variant.space;
  request.strategy = "grid";
  request.seed = 1;
  request.batch_size = 1;
  request.budget = 100;
  // Known before: (a 64, b 2, c 2) overflowed; a wrong answer predicts nothing.
  const auto at = [&](std::int64_t a, std::int64_t b, std::int64_t c) {
    return search::configuration_from_json(*variant.space, {{"a", a}, {"b", b}, {"c", c}});
  };
  request.known = {search::Observation::failed(at(64, 2, 2), "sbuf_overflow: needs 200000 bytes"),
                   search::Observation::failed(at(32, 1, 1), "wrong_answer: mismatch")};
  std::vector<search::Configuration> measured, overflowed;
  MeasureBatch measure = [&](const std::vector<Candidate>& batch) {
    std::vector<search::Observation> out;
    for (const auto& candidate : batch) {
      const auto c = search::configuration_from_json(*variant.space, candidate.params);
      measured.push_back(c);
      if (holds(c) >= 6) {
        overflowed.push_back(c);
        out.push_back(search::Observation::failed(c, "sbuf_overflow: does not fit"));
      } else {
        out.push_back(search::Observation::success(c, -double(measured.size())));  // each better: no patience
      }
    }
    return out;
  };
  const auto plan = explorer.plan(request);
  const auto result = explorer.explore(request, plan.result, measure, {});
  auto dominates = [](const search::Configuration& c, const search::Configuration& f) {
    return search::same_value(c[0], f[0]) && search::numeric_value(c[1]) >= search::numeric_value(f[1]) &&
           search::numeric_value(c[2]) >= search::numeric_value(f[2]);
  };
  // Nothing holding at least what the known overflow held is measured...
  for (const auto& c : measured) CHECK_FALSE(dominates(c, at(64, 2, 2)));
  // ... nor what holds at least a configuration that overflowed earlier in this search.
  for (std::size_t i = 0; i < overflowed.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) CHECK_FALSE(dominates(overflowed[i], overflowed[j]));
  // A larger tile is measured: tile sizes predict nothing.
  CHECK(std::find(measured.begin(), measured.end(), at(128, 2, 2)) != measured.end());
  CHECK(std::find(measured.begin(), measured.end(), at(32, 2, 1)) != measured.end());
  // Every configuration is measured, known or predicted, and the count adds up.
  CHECK(result.evaluations == int(measured.size()));
  CHECK(measured.size() + result.predicted_failures.size() + 2 == variant.space->size());
  CHECK(result.predicted_failures.size() >= 3);  // (64, 2|3, 2|4) but (64, 2, 2)
  CHECK(result.predicted_failures.front().at("rule") == "sbuf_overflow");
  CHECK(result.settled);

  // Without parameters of those roles nothing is predicted.
  variant.roles = {{"a", kRoleTile}, {"b", kRoleTile}, {"c", kRoleTile}};
  measured.clear();
  overflowed.clear();
  const auto without_roles = explorer.explore(request, plan.result, measure, {});
  CHECK(without_roles.predicted_failures.empty());
  CHECK(std::find(measured.begin(), measured.end(), at(64, 3, 4)) != measured.end());
}

TEST_CASE("runner: results in request order, committed, re-used within the run and across runs") {
  auto store = store::open_store(":memory:");
  FakeTarget target;
  const int64_t run = new_run(*store);
  std::vector<TrialRequest> requests;
  const VariantSpace variant = make_variant("fast");
  for (std::uint64_t i = 0; i < 8; ++i)
    requests.push_back(
        {{"fast", search::to_json(*variant.space, variant.space->configuration_at(i))}, 1, std::nullopt});
  requests.push_back(requests.front());  // a duplicate within the batch
  {
    BenchmarkRunner runner(target, *store, run, {3, 10});
    const auto batch = runner.measure(requests);
    REQUIRE(batch.result.size() == requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i)
      CHECK(batch.result[i].trial.params == requests[i].candidate.params);
    CHECK(batch.result.back().fresh == false);
    CHECK(target.calls == 8);
    CHECK(store->trials(run).size() == 8);
    CHECK(runner.counters().evaluations == 8);
    // Again in the same run: nothing new.
    runner.measure({requests[2]});
    CHECK(target.calls == 8);
    CHECK(store->trials(run).size() == 8);
  }
  const int64_t second = new_run(*store);
  BenchmarkRunner runner(target, *store, second, {2, 10});
  const auto batch = runner.measure({requests[0], requests[1]});
  CHECK(target.calls == 8);
  CHECK(runner.counters().cache_hits == 2);
  CHECK(batch.result[0].trial.cache_hit);
  CHECK(store->trials(second).size() == 2);

  // Another identity (another shape, simulator version...): no re-use.
  target.identity = "fake:2";
  const int64_t third = new_run(*store);
  BenchmarkRunner other(target, *store, third, {2, 10});
  other.measure({requests[0]});
  CHECK(target.calls == 9);
}

TEST_CASE("runner: trial ids follow the proposal order, whichever worker finishes first") {
  // The first candidate is the slowest to measure; with four workers the
  // others finish first, yet every id follows the order of the requests.
  class SlowFirst : public FakeTarget {
   public:
    Measurement measure(const Candidate& c, const MeasureOptions& o) override {
      if (c.params.value("a", 0) == 16) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return FakeTarget::measure(c, o);
    }
  } target;
  auto store = store::open_store(":memory:");
  const int64_t run = new_run(*store);
  RunnerOptions options;
  options.jobs = 4;
  options.commit_every = 1;
  BenchmarkRunner runner(target, *store, run, options);
  std::vector<TrialRequest> requests;
  for (int a : {16, 32, 64, 128})
    requests.push_back({{"fast", {{"a", a}, {"b", 1}, {"c", 1}}}, 1, std::nullopt});
  const auto batch = runner.measure(requests);
  for (std::size_t i = 1; i < batch.result.size(); ++i)
    CHECK(batch.result[i].trial.id == batch.result[i - 1].trial.id + 1);
  const auto trials = store->trials(run);
  REQUIRE(trials.size() == 4);
  for (std::size_t i = 0; i < trials.size(); ++i) CHECK(trials[i].params == requests[i].candidate.params);
}

TEST_CASE("runner: a candidate past its timeout is a timeout trial and the batch goes on") {
  auto store = store::open_store(":memory:");
  FakeTarget target;
  target.sleep_ms = 400;
  const int64_t run = new_run(*store);
  RunnerOptions options;
  options.jobs = 2;
  options.timeout_s = 0.05;
  BenchmarkRunner runner(target, *store, run, options);
  const auto batch = runner.measure({{{"fast", {{"a", 32}, {"b", 1}, {"c", 1}}}, 1, std::nullopt}});
  CHECK(batch.result[0].trial.status == Outcome::timeout);
  CHECK(batch.result[0].trial.error == "exceeded the per-candidate timeout of 0.05 s (the goal's timeout_s)");
  CHECK(store->trials(run).size() == 1);
}

TEST_CASE("runner: a measurement the wall-time budget cut short says so, whoever stopped it") {
  // The target stops itself at the deadline it was given (the budget's end),
  // before the runner's own check: the trial still says the budget ran out,
  // so that it is known as never fully measured.
  auto store = store::open_store(":memory:");
  FakeTarget target;
  target.stop_at_deadline = true;
  const int64_t run = new_run(*store);
  RunnerOptions options;
  options.timeout_s = 30;
  options.stop_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  BenchmarkRunner runner(target, *store, run, options);
  const auto batch = runner.measure({{{"fast", {{"a", 32}, {"b", 1}, {"c", 1}}}, 1, std::nullopt}});
  CHECK(batch.result[0].trial.status == Outcome::timeout);
  CHECK(batch.result[0].trial.error == kBudgetCutError);
}

TEST_CASE(
    "runner: a target whose own settings allow its runs longer than the goal's timeout gets that time") {
  // A command target allowing 1 s per run, 2 runs, under a goal timeout of
  // 0.05 s: the candidate's runs may take 2 s, and are not killed at 0.05 s.
  auto store = store::open_store(":memory:");
  FakeTarget target;
  target.sleep_ms = 300;
  target.own_limit = TimeLimit{2.0, "target.timeout_s 1 s x target.repeats 2"};
  const int64_t run = new_run(*store);
  RunnerOptions options;
  options.timeout_s = 0.05;
  BenchmarkRunner runner(target, *store, run, options);
  const auto batch = runner.measure({{{"fast", {{"a", 32}, {"b", 1}, {"c", 1}}}, 1, std::nullopt}});
  CHECK(batch.result[0].trial.status == Outcome::ok);
  // Past it, the message names the setting that set the limit.
  target.own_limit = TimeLimit{0.1, "target.timeout_s 0.1 s"};
  BenchmarkRunner shorter(target, *store, run, options);
  const auto late = shorter.measure({{{"fast", {{"a", 64}, {"b", 1}, {"c", 1}}}, 1, std::nullopt}});
  CHECK(late.result[0].trial.status == Outcome::timeout);
  CHECK(late.result[0].trial.error == "exceeded the per-candidate timeout of 0.1 s (target.timeout_s 0.1 s)");
  // A goal's timeout_s longer than the target's needs stands.
  options.timeout_s = 30;
  CHECK(candidate_time_limit(target, options.timeout_s).seconds == 30);
  CHECK(candidate_time_limit(target, options.timeout_s).setting == "the goal's timeout_s");
}

TEST_CASE("runner: resumed trials are served from the store, not measured again") {
  auto store = store::open_store(":memory:");
  FakeTarget target;
  const int64_t run = new_run(*store);
  const Candidate c{"fast", {{"a", 32}, {"b", 1}, {"c", 1}}};
  {
    BenchmarkRunner runner(target, *store, run, {1, 10});
    runner.measure({{c, 1, std::nullopt}});
  }
  BenchmarkRunner resumed(target, *store, run, {1, 10});
  resumed.resume(store->trials(run));
  const auto batch = resumed.measure({{c, 1, std::nullopt}});
  CHECK(target.calls == 1);
  CHECK(batch.result[0].fresh);
  CHECK(resumed.counters().resumed == 1);
  CHECK(store->trials(run).size() == 1);
}

TEST_CASE("runner: a measurement again committed before a resume is served, each counted once") {
  auto store = store::open_store(":memory:");
  FakeTarget target;
  const int64_t run = new_run(*store);
  const Candidate c{"fast", {{"a", 32}, {"b", 1}, {"c", 1}}};
  int64_t first_id = 0, again_id = 0;
  {
    BenchmarkRunner runner(target, *store, run, {1, 10});
    const auto first = runner.measure({{c, 1, std::nullopt}});
    first_id = first.result[0].trial.id;
    const auto again = runner.measure({{c, 1, std::nullopt, first.result[0].trial}});
    again_id = again.result[0].trial.id;
    CHECK(runner.counters().evaluations == 2);
  }
  REQUIRE(target.calls == 2);
  REQUIRE(again_id != first_id);
  BenchmarkRunner resumed(target, *store, run, {1, 10});
  resumed.resume(store->trials(run));
  // The replay asks as the first life did: the candidate, then its measurement again.
  const auto first = resumed.measure({{c, 1, std::nullopt}});
  CHECK(first.result[0].trial.id == first_id);
  CHECK(first.result[0].fresh);
  const auto again = resumed.measure({{c, 1, std::nullopt, first.result[0].trial}});
  CHECK(again.result[0].trial.id == again_id);
  CHECK(again.result[0].fresh);
  CHECK(target.calls == 2);
  CHECK(resumed.counters().evaluations == 2);
  CHECK(resumed.counters().resumed == 2);
  CHECK(resumed.counters().measured == 0);
  CHECK(store->trials(run).size() == 2);
  // Asked for later, the candidate stands as its measurement again.
  const auto later = resumed.measure({{c, 2, std::nullopt}});
  CHECK(later.result[0].trial.id == again_id);
  CHECK_FALSE(later.result[0].fresh);
}

TEST_CASE("replay target: recorded times are latencies, recorded failures are invalid") {
  ReplayTarget target(std::string(AUTOTUNE_SHARED_DIR) + "/data/tuning/convolution/RTX_3090.json", "");
  const VariantSpace space = target.recorded_space();
  CHECK(space.allowed.size() > 1000);
  int ok = 0, invalid = 0;
  VariantSpace built = space;
  build_space(built);
  for (std::uint64_t i = 0; i < 200; ++i) {
    const Candidate c{"recorded", search::to_json(*built.space, built.space->configuration_at(i))};
    const auto m = target.measure(c, {});
    if (m.status == Outcome::ok) {
      ++ok;
      CHECK(m.metrics.at("latency_s").get<double>() > 0);
      CHECK(m.repeats.is_array());  // Kernel Tuner's individual runs ("times")
    } else {
      ++invalid;
      CHECK_FALSE(m.error.empty());
    }
  }
  CHECK(ok > 0);
  // A candidate that is not a recorded configuration (another value, a missing parameter) is invalid, not an
  // error.
  Json unrecorded = search::to_json(*built.space, built.space->configuration_at(0));
  unrecorded[built.parameters.front().name()] = 123456;
  CHECK(target.measure({"recorded", unrecorded}, {}).status == Outcome::invalid);
  unrecorded.erase(built.parameters.front().name());
  CHECK(target.measure({"recorded", unrecorded}, {}).status == Outcome::invalid);
}

TEST_CASE("explorer: a region settles only after its patience without improvement, never on a budget cut") {
  VariantSpace variant;
  variant.name = "wide";
  std::vector<search::ParamValue> eight, six, five;
  for (std::int64_t i = 0; i < 8; ++i) eight.push_back(i);
  for (std::int64_t i = 0; i < 6; ++i) six.push_back(i);
  for (std::int64_t i = 0; i < 5; ++i) five.push_back(i);
  variant.parameters = {search::ParameterSpec::ordered("a", eight), search::ParameterSpec::ordered("b", six),
                        search::ParameterSpec::ordered("c", five)};
  variant.defaults = {{"a", 0}, {"b", 0}, {"c", 0}};
  build_space(variant);
  REQUIRE(variant.space->size() == 240);
  const int patience = region_patience(*variant.space, 2);
  CHECK(patience == 24);  // a tenth of the region, more than three batches of two

  ParamExplorer explorer;
  ExplorationRequest request;
  request.variant = &variant;
  request.region = variant.space;
  request.strategy = "random";
  request.seed = 5;
  request.batch_size = 2;
  int calls = 0;
  // Flat: nothing ever improves on the first value.
  MeasureBatch flat = [&](const std::vector<Candidate>& batch) {
    calls += int(batch.size());
    return std::vector<search::Observation>(batch.size(), search::Observation::success({}, 1.0));
  };

  request.budget = 100;
  auto plan = explorer.plan(request);
  auto result = explorer.explore(request, plan.result, flat, {});
  CHECK(result.settled);
  CHECK(result.evaluations == patience + 2);  // the first batch sets the region's best
  CHECK(result.stop_reason.find("no improvement") != std::string::npos);

  calls = 0;
  request.budget = 10;
  plan = explorer.plan(request);
  result = explorer.explore(request, plan.result, flat, {});
  CHECK_FALSE(result.settled);  // cut by the budget: the idea may be continued
  CHECK(result.evaluations == 10);

  // Earlier stale measurements count towards the patience, unless the search
  // is a continuation, which gets a fresh stretch.
  std::vector<search::Observation> known;
  for (std::uint64_t i = 0; i <= std::uint64_t(patience); ++i)  // the first sets the best
    known.push_back(search::Observation::success(variant.space->configuration_at(i), 1.0));
  request.known = known;
  request.budget = 100;
  plan = explorer.plan(request);
  result = explorer.explore(request, plan.result, flat, {});
  CHECK(result.settled);
  CHECK(result.evaluations == 0);
  request.carry_patience = false;
  result = explorer.explore(request, plan.result, flat, {});
  CHECK(result.settled);
  CHECK(result.evaluations == patience);
}

TEST_CASE("generator: with every idea settled, the budget left goes on in the best's unexhausted space") {
  const VariantCatalog catalog = catalog_of({"fast", "slow"});
  KernelGenerator generator;
  GenerationRequest request = request_for(catalog);
  request.measured_variants = {"fast", "slow"};
  request.measured_counts = {{"fast", 10}, {"slow", 27}};
  auto generation = generator.generate(request);
  REQUIRE_FALSE(generation.result.ideas.empty());
  CHECK(generation.result.ideas.front().kind == "handover");  // no finding proposes anything
  for (const auto& idea : generation.result.ideas) {
    CHECK_FALSE(idea.continuation);
    request.tried_ideas.insert(idea.id);
  }
  request.tried_ideas.insert("space:slow");
  generation = generator.generate(request);
  REQUIRE(generation.result.ideas.size() == 1);  // "slow" is exhausted
  CHECK(generation.result.ideas[0].variant == "fast");
  CHECK(generation.result.ideas[0].continuation);

  request.measured_counts["fast"] = 27;
  CHECK(generator.generate(request).result.ideas.empty());
}

TEST_CASE("generator: without any evidence the whole space comes before the best's surroundings") {
  const VariantCatalog catalog = catalog_of({"fast"});
  KernelGenerator generator;
  GenerationRequest request = request_for(catalog);
  request.measured_variants = {"fast"};
  request.measured_counts = {{"fast", 1}};
  request.analysis.bound = "unknown";       // what the analyzer says without a profile
  request.tried_ideas = {"handover:fast"};  // the handover (below) is first; the alternatives after it
  auto ideas = generator.generate(request).result.ideas;
  REQUIRE(ideas.size() >= 2);
  CHECK(ideas.front().id == "space:fast");
  CHECK(ideas.front().region.empty());
  CHECK(ideas[1].id.starts_with("neighbourhood:"));

  // A profile that names a bound is evidence the best's surroundings are the place to look, even with no
  // finding left to act on.
  request.analysis.bound = "memory";
  ideas = generator.generate(request).result.ideas;
  REQUIRE(ideas.size() >= 2);
  CHECK(ideas.front().id.starts_with("neighbourhood:"));
  CHECK(ideas.back().id == "space:fast");
}

TEST_CASE("explorer: probes measured before are skipped, probes the budget cuts off come back") {
  const VariantSpace variant = make_variant("fast");
  ParamExplorer explorer;
  ExplorationRequest request;
  request.variant = &variant;
  request.batch_size = 2;
  for (int a : {32, 64, 128}) request.probes.push_back({"fast", {{"a", a}, {"b", 1}, {"c", 1}}});
  // a=64 was measured earlier in the run.
  request.known.push_back(search::Observation::success(
      search::configuration_from_json(*variant.space, request.probes[1].params), 1.0));
  std::vector<std::string> measured;
  MeasureBatch measure = [&](const std::vector<Candidate>& batch) {
    std::vector<search::Observation> out;
    for (const auto& c : batch) {
      measured.push_back(c.key());
      out.push_back(search::Observation::success({}, 1.0 / c.params.at("a").get<double>()));
    }
    return out;
  };

  request.budget = 1;
  auto result = explorer.explore(request, explorer.plan(request).result, measure, {});
  CHECK(result.evaluations == 1);
  CHECK_FALSE(result.settled);  // one probe left: the idea may come back
  REQUIRE(measured.size() == 1);
  CHECK(measured[0] == request.probes[0].key());

  request.known.push_back(search::Observation::success(
      search::configuration_from_json(*variant.space, request.probes[0].params), 1.0 / 32));
  request.budget = 5;
  const auto plan = explorer.plan(request);
  CHECK(plan.result.budget == 1);
  result = explorer.explore(request, plan.result, measure, {});
  CHECK(result.evaluations == 1);
  CHECK(result.settled);
  REQUIRE(measured.size() == 2);
  CHECK(measured[1] == request.probes[2].key());
}

namespace {

// A profile whose critical path (sim/critical_path.hpp's JSON) is `path`;
// engines mostly idle, so only the path speaks.
AnalysisRequest path_request(const nlohmann::json& path) {
  AnalysisRequest request;
  request.metrics = {{"latency_s", 1e-3}, {"roofline_bound_s", 2e-4}};
  request.profile = {{"total_time", 1e-3},
                     {"kernel_time", 1e-3},
                     {"tensor_engine_active_time_percent", 20},
                     {"vector_engine_active_time_percent", 40},
                     {"scalar_engine_active_time_percent", 60},
                     {"dma_active_time_percent", 10},
                     {"critical_path", path}};
  return request;
}

nlohmann::json path_of(nlohmann::json busy, nlohmann::json waits, nlohmann::json reached_by) {
  nlohmann::json path = {
      {"busy_percent", busy},          {"wait_percent", waits}, {"reached_by_percent", reached_by},
      {"tensor_transpose_percent", 0}, {"startup_percent", 0},  {"links", nlohmann::json::array()}};
  return path;
}

nlohmann::json link(const std::string& waiter, const std::string& waits_on, const std::string& kind,
                    double percent) {
  auto side = [](const std::string& engine_opcode_source) {
    const auto first = engine_opcode_source.find(' '), second = engine_opcode_source.rfind(' ');
    return nlohmann::json{{"engine", engine_opcode_source.substr(0, first)},
                          {"opcode", engine_opcode_source.substr(first + 1, second - first - 1)},
                          {"source", engine_opcode_source.substr(second + 1)}};
  };
  return {{"waiter", side(waiter)}, {"waits_on", side(waits_on)}, {"kind", kind}, {"percent", percent}};
}

const nlohmann::json kNoWaits = {{"semaphore", 0}, {"buffer", 0}, {"dma_fixed", 0},
                                 {"dma_queue", 0}, {"port", 0},   {"stationary_load", 0}};
const nlohmann::json kInOrder = {{"start", 0}, {"engine_order", 100}, {"data", 0}, {"buffer", 0}};

}  // namespace

TEST_CASE(
    "analyzer: transposing transfers waiting for descriptor generation ask to vary placement and tile") {
  ProfileAnalyzer analyzer;
  nlohmann::json waits = kNoWaits;
  waits["dma_descriptor"] = 40;
  nlohmann::json path =
      path_of({{"tensor", 10}, {"vector", 20}, {"scalar", 10}, {"gpsimd", 0}, {"dma", 20}}, waits, kInOrder);
  auto findings = analyzer.analyze(path_request(path)).result.findings;
  const Finding* descriptors = find(findings, "critical_path_dma_descriptors");
  REQUIRE(descriptors != nullptr);
  CHECK(descriptors->action == "vary");
  CHECK(descriptors->roles == std::vector<std::string>{kRolePlacement, kRoleTile});
  CHECK(descriptors->summary.find("40% of its length for DMA descriptor generation") != std::string::npos);
  CHECK(descriptors->expected_gain == doctest::Approx(0.5 * 0.40));
  // Descriptor generation is part of the transfers' latency on the path: with
  // the DMA's own 20% it passes the 30% at which more transfers in flight pay.
  const Finding* transfers = find(findings, "critical_path_dma_waits");
  REQUIRE(transfers != nullptr);
  CHECK(transfers->summary.find("DMA transfers are 60% of the critical path") != std::string::npos);
  CHECK(transfers->summary.find("40% descriptor generation") != std::string::npos);
  // The same wait for a free queue is another finding.
  waits["dma_descriptor"] = 0;
  waits["dma_queue"] = 40;
  path["wait_percent"] = waits;
  findings = analyzer.analyze(path_request(path)).result.findings;
  CHECK(find(findings, "critical_path_dma_descriptors") == nullptr);
  CHECK(find(findings, "critical_path_dma_queues") != nullptr);
}

TEST_CASE("analyzer: a critical path carried by a non-tensor engine asks to vary the placement parameters") {
  ProfileAnalyzer analyzer;
  nlohmann::json waits = kNoWaits;
  waits["semaphore"] = 8;
  waits["dma_queue"] = 5;
  nlohmann::json path =
      path_of({{"tensor", 10}, {"vector", 15}, {"scalar", 55}, {"gpsimd", 5}, {"dma", 2}}, waits, kInOrder);
  path["links"] = {link("scalar activation k.hpp:10", "vector tensor_scalar k.hpp:8", "data", 38)};
  auto findings = analyzer.analyze(path_request(path)).result.findings;
  const Finding* engine = find(findings, "critical_path_engine");
  REQUIRE(engine != nullptr);
  CHECK(engine->action == "vary");
  CHECK(engine->roles == std::vector<std::string>{kRolePlacement});
  CHECK(engine->summary.find("scalar engine is busy 55%") != std::string::npos);
  // The evidence names the link in words.
  CHECK(engine->summary.find(
            "scalar activation at k.hpp:10 waits on vector tensor_scalar at k.hpp:8 (data): 38% "
            "of the path") != std::string::npos);
  CHECK(engine->evidence.at("engine") == "scalar");
  CHECK(engine->evidence.at("engine_busy_percent").get<double>() == doctest::Approx(55));
  // What could move: the share above the tensor engine's.
  CHECK(engine->expected_gain == doctest::Approx(0.5 * 0.45));

  // Carried by the tensor engine's matmuls: nothing to move.
  path["busy_percent"] = {{"tensor", 80}, {"vector", 5}, {"scalar", 5}, {"gpsimd", 0}, {"dma", 2}};
  findings = analyzer.analyze(path_request(path)).result.findings;
  CHECK(std::none_of(findings.begin(), findings.end(), [](const Finding& f) { return f.action == "vary"; }));

  // Carried by the tensor engine with transposes that other engines or DMAs could make.
  path["tensor_transpose_percent"] = 30;
  findings = analyzer.analyze(path_request(path)).result.findings;
  engine = find(findings, "critical_path_engine");
  REQUIRE(engine != nullptr);
  CHECK(engine->action == "vary");
  CHECK(engine->evidence.at("engine") == "tensor");
  CHECK(engine->expected_gain == doctest::Approx(0.5 * 0.30));

  // The DMA's transfers carry more of the path than the scalar engine: moving
  // work between engines is not what it needs.
  path =
      path_of({{"tensor", 5}, {"vector", 5}, {"scalar", 35}, {"gpsimd", 0}, {"dma", 40}}, kNoWaits, kInOrder);
  findings = analyzer.analyze(path_request(path)).result.findings;
  CHECK(find(findings, "critical_path_engine") == nullptr);
}

TEST_CASE("analyzer: a path through buffer reuse asks for more rotating buffers") {
  ProfileAnalyzer analyzer;
  nlohmann::json waits = kNoWaits;
  waits["buffer"] = 3;
  waits["dma_fixed"] = 4;
  nlohmann::json path = path_of({{"tensor", 5}, {"vector", 40}, {"scalar", 30}, {"gpsimd", 0}, {"dma", 18}},
                                waits, {{"start", 1}, {"engine_order", 39}, {"data", 20}, {"buffer", 40}});
  path["links"] = {link("vector tensor_copy k.hpp:20", "scalar activation k.hpp:12", "data", 25),
                   link("scalar activation k.hpp:12", "vector tensor_copy k.hpp:20", "buffer", 20)};
  const auto findings = analyzer.analyze(path_request(path)).result.findings;
  const Finding* buffers = find(findings, "critical_path_buffer_waits");
  REQUIRE(buffers != nullptr);
  CHECK(buffers->action == "raise");
  CHECK(buffers->roles == std::vector<std::string>{kRolePipelineDepth});
  // At most the smaller of the two sides overlaps: half of min(40, 60).
  CHECK(buffers->expected_gain == doctest::Approx(0.5 * 0.40));
  // The evidence is the buffer link, not the heavier data link.
  CHECK(buffers->summary.find("(buffer): 20% of the path") != std::string::npos);
  CHECK(buffers->evidence.at("via_buffer_percent").get<double>() == doctest::Approx(40));

  // Little of the path through reused buffers: no finding.
  path["reached_by_percent"] = {{"start", 1}, {"engine_order", 69}, {"data", 20}, {"buffer", 10}};
  CHECK(find(analyzer.analyze(path_request(path)).result.findings, "critical_path_buffer_waits") == nullptr);
}

TEST_CASE(
    "analyzer: a path through DMA transfers and fixed costs asks for deeper pipelines and larger pieces") {
  ProfileAnalyzer analyzer;
  nlohmann::json waits = kNoWaits;
  waits["dma_fixed"] = 20;
  waits["semaphore"] = 6;
  nlohmann::json path =
      path_of({{"tensor", 10}, {"vector", 10}, {"scalar", 4}, {"gpsimd", 0}, {"dma", 50}}, waits, kInOrder);
  path["startup_percent"] = 4;
  auto findings = analyzer.analyze(path_request(path)).result.findings;
  const Finding* dma = find(findings, "critical_path_dma_waits");
  REQUIRE(dma != nullptr);
  CHECK(dma->action == "raise");
  CHECK(dma->roles == std::vector<std::string>{kRolePipelineDepth, kRoleTile});
  // Transfers 70% of the path, the rest 30%: at most 30% overlaps.
  CHECK(dma->expected_gain == doctest::Approx(0.5 * 0.30));
  // Semaphores 6 + DMA fixed 20 + start-up 4 = 30% of the path: fewer, larger instructions.
  const Finding* fixed = find(findings, "critical_path_fixed_costs");
  REQUIRE(fixed != nullptr);
  CHECK(fixed->action == "raise");
  CHECK(fixed->roles == std::vector<std::string>{kRoleTile, kRoleUnroll});
  CHECK(fixed->expected_gain == doctest::Approx(0.5 * 0.30));
  CHECK(fixed->evidence.at("fixed_cost_percent").get<double>() == doctest::Approx(30));
  // Strongest first: the findings are ranked by expected gain.
  for (std::size_t i = 1; i < findings.size(); ++i)
    if (findings[i].action != "stop" && findings[i - 1].action != "stop")
      CHECK(findings[i - 1].expected_gain >= findings[i].expected_gain);

  // A path of compute alone: neither.
  path =
      path_of({{"tensor", 90}, {"vector", 5}, {"scalar", 0}, {"gpsimd", 0}, {"dma", 2}}, kNoWaits, kInOrder);
  findings = analyzer.analyze(path_request(path)).result.findings;
  CHECK(find(findings, "critical_path_dma_waits") == nullptr);
  CHECK(find(findings, "critical_path_fixed_costs") == nullptr);
}

TEST_CASE("analyzer: a path that mostly waits asks for more steps in flight") {
  ProfileAnalyzer analyzer;
  nlohmann::json waits = kNoWaits;
  waits["dma_queue"] = 28;
  waits["dma_fixed"] = 16;
  waits["semaphore"] = 4;
  // Busy 2 + 20 + 22 + 3 + 3 = 50% of the path: it waits the other half.
  nlohmann::json path =
      path_of({{"tensor", 3}, {"vector", 22}, {"scalar", 20}, {"gpsimd", 3}, {"dma", 2}}, waits, kInOrder);
  path["links"] = {link("dma dma_copy k.hpp:30", "scalar activation k.hpp:12", "data", 47)};
  auto findings = analyzer.analyze(path_request(path)).result.findings;
  const Finding* latency = find(findings, "critical_path_latency");
  REQUIRE(latency != nullptr);
  CHECK(latency->action == "raise");
  CHECK(latency->roles == std::vector<std::string>{kRolePipelineDepth});
  CHECK(latency->expected_gain == doctest::Approx(0.5 * 0.50));
  CHECK(latency->evidence.at("waiting_percent").get<double>() == doctest::Approx(50));
  CHECK(latency->summary.find("waits 50% of its length") != std::string::npos);
  CHECK(latency->summary.find("dma dma_copy at k.hpp:30 waits on scalar activation") != std::string::npos);

  // Busy 80% of its length: the path computes, nothing to hide.
  path["busy_percent"] = {{"tensor", 40}, {"vector", 20}, {"scalar", 15}, {"gpsimd", 3}, {"dma", 2}};
  findings = analyzer.analyze(path_request(path)).result.findings;
  CHECK(find(findings, "critical_path_latency") == nullptr);

  // docs/loop.md's threshold: the path waits at least 35% of its length. Just above it the finding
  // fires, just below it does not.
  path["busy_percent"] = {{"tensor", 3}, {"vector", 22}, {"scalar", 20}, {"gpsimd", 3}, {"dma", 16}};
  findings = analyzer.analyze(path_request(path)).result.findings;  // busy 64%: waits 36%
  REQUIRE(find(findings, "critical_path_latency") != nullptr);
  CHECK(find(findings, "critical_path_latency")->evidence.at("waiting_percent").get<double>() ==
        doctest::Approx(36));
  path["busy_percent"]["dma"] = 18;
  findings = analyzer.analyze(path_request(path)).result.findings;  // busy 66%: waits 34%
  CHECK(find(findings, "critical_path_latency") == nullptr);
}

TEST_CASE("analyzer: a nearly full SBUF names the roles that can make room") {
  ProfileAnalyzer analyzer;
  AnalysisRequest request = path_request(
      path_of({{"tensor", 80}, {"vector", 5}, {"scalar", 5}, {"gpsimd", 0}, {"dma", 2}}, kNoWaits, kInOrder));
  request.target_facts = {{"sbuf_usable_bytes_per_partition", 200000}};
  request.profile["sbuf_peak_bytes_per_partition"] = 190000;
  auto findings = analyzer.analyze(request).result.findings;
  const Finding* room = find(findings, "sbuf_pressure");
  REQUIRE(room != nullptr);
  CHECK(room->action == "make_room");
  CHECK(room->roles == std::vector<std::string>{kRoleBlock});
  CHECK(room->summary.find("SBUF 95% full") != std::string::npos);

  request.profile["sbuf_peak_bytes_per_partition"] = 100000;
  CHECK(find(analyzer.analyze(request).result.findings, "sbuf_pressure") == nullptr);
}

TEST_CASE("generator: with on-chip memory short, a raise also tries the memory-holding roles one step down") {
  VariantCatalog catalog = catalog_of({"fast"});
  catalog.variants[0].roles["c"] = kRoleBlock;
  KernelGenerator generator;
  GenerationRequest request = request_for(catalog);
  request.best = {"fast", {{"a", 64}, {"b", 2}, {"c", 2}}};
  request.analysis.findings.push_back(
      {"critical_path_latency", "the critical path waits 50%", {}, "raise", {kRolePipelineDepth}, 0.25});
  const Idea plain = generator.generate(request).result.ideas.front();
  CHECK(plain.region.at("c") == std::vector<search::ParamValue>{std::int64_t(2)});

  request.analysis.findings.push_back({"sbuf_pressure", "SBUF 95% full", {}, "make_room", {kRoleBlock}, 0});
  const auto generation = generator.generate(request);
  const Idea& traded = generation.result.ideas.front();
  CHECK(traded.kind == "raise");
  CHECK(traded.region.at("b") == std::vector<search::ParamValue>{std::int64_t(2), std::int64_t(3)});
  CHECK(traded.region.at("c") == std::vector<search::ParamValue>{std::int64_t(1), std::int64_t(2)});
  CHECK(traded.region.at("a") == std::vector<search::ParamValue>{std::int64_t(64)});
  CHECK(traded.id != plain.id);  // a raise tried without room is not the same idea
  CHECK(traded.rationale.find("making room, also with c one step down (SBUF 95% full)") != std::string::npos);
  // make_room alone proposes nothing; the generator says what it did with it.
  CHECK(std::none_of(generation.result.ideas.begin(), generation.result.ideas.end(),
                     [](const Idea& i) { return i.finding == "sbuf_pressure"; }));
  CHECK(generation.decision.alternatives.dump().find("one step down") != std::string::npos);

  // At the lowest value there is nothing to give back.
  request.best = {"fast", {{"a", 64}, {"b", 2}, {"c", 1}}};
  CHECK(generator.generate(request).result.ideas.front().region.at("c") ==
        std::vector<search::ParamValue>{std::int64_t(1)});
}

TEST_CASE("analyzer: the critical path's findings come beside the others, which still fire") {
  ProfileAnalyzer analyzer;
  nlohmann::json path = path_of({{"tensor", 10}, {"vector", 15}, {"scalar", 55}, {"gpsimd", 5}, {"dma", 2}},
                                kNoWaits, kInOrder);
  AnalysisRequest request = path_request(path);
  request.profile["dma_active_time_percent"] = 60;
  request.profile["compute_active_time_percent"] = 60;
  request.profile["dma_compute_overlap_percent"] = 2;
  const auto result = analyzer.analyze(request);
  CHECK(find(result.result.findings, "dma_bound_no_overlap") != nullptr);
  CHECK(find(result.result.findings, "critical_path_engine") != nullptr);
  // The analysis' evidence carries the path's figures, flat and readable.
  const auto& evidence = result.decision.evidence.at("critical_path");
  CHECK(evidence.at("scalar_busy_percent").get<double>() == doctest::Approx(55));
  CHECK(evidence.contains("wait_semaphore_percent"));
}

TEST_CASE(
    "generator: a vary finding tries every value of the role's parameters, else probes variants having one") {
  VariantCatalog catalog = catalog_of({"fast", "slow"});
  catalog.variants[0].roles["b"] = kRolePlacement;
  catalog.variants[0].roles["c"] = kRolePlacement;
  KernelGenerator generator;
  GenerationRequest request = request_for(catalog);
  request.analysis.findings.push_back(
      {"critical_path_engine",
       "the scalar engine is busy 55% of the critical path; scalar activation at "
       "k.hpp:10 waits on vector tensor_scalar at k.hpp:8 (data): 38% of the path",
       {},
       "vary",
       {kRolePlacement},
       0.3});
  const auto generation = generator.generate(request);
  const auto idea = generation.result.ideas.front();
  CHECK(idea.kind == "vary");
  CHECK(idea.finding == "critical_path_engine");
  CHECK(idea.strategy == "coordinate");  // one parameter at a time, not their product
  REQUIRE(idea.region.count("b"));
  REQUIRE(idea.region.count("c"));
  CHECK(idea.region.at("b").size() == 3);  // every value, the best's included, below it too
  CHECK(idea.region.at("c").size() == 3);
  CHECK(idea.region.at("a") == std::vector<search::ParamValue>{std::int64_t(64)});  // the rest fixed
  // The rationale names the finding and its critical-path evidence.
  CHECK(idea.rationale.find("critical_path_engine: the scalar engine is busy 55%") != std::string::npos);
  CHECK(idea.rationale.find("waits on vector tensor_scalar at k.hpp:8") != std::string::npos);
  CHECK(idea.rationale.find("role placement") != std::string::npos);
  CHECK(generation.decision.rationale == idea.rationale);

  // A placement is chosen once per variant: a new best that differs elsewhere
  // does not vary it again.
  request.tried_ideas.insert(idea.id);
  request.best = {"fast", {{"a", 128}, {"b", 3}, {"c", 1}}};
  const auto later = generator.generate(request).result.ideas;
  CHECK(std::none_of(later.begin(), later.end(), [](const Idea& i) { return i.kind == "vary"; }));
  request.tried_ideas.clear();

  // The best's variant has no placement parameter: the variants that do are probed.
  request.best = {"slow", {{"a", 64}, {"b", 2}, {"c", 1}}};
  request.measured_variants = {"slow"};
  const auto structural = generator.generate(request).result.ideas.front();
  CHECK(structural.kind == "structural");
  CHECK(structural.finding == "critical_path_engine");
  REQUIRE(structural.probes.size() == 1);
  CHECK(structural.probes[0].variant == "fast");
  CHECK(structural.probes[0].params.at("b") == 2);  // the best's parameters carried over
  CHECK(structural.rationale.find("has no parameter of role placement") != std::string::npos);

  // No variant has one: no placement idea at all, and the generator says why.
  catalog.variants[0].roles["b"] = kRolePipelineDepth;
  catalog.variants[0].roles["c"] = kRoleUnroll;
  const auto none = generator.generate(request);
  CHECK(std::none_of(none.result.ideas.begin(), none.result.ideas.end(),
                     [](const Idea& i) { return i.finding == "critical_path_engine"; }));
  CHECK(none.decision.alternatives.dump().find("no parameter of role placement") != std::string::npos);
}

TEST_CASE(
    "sim target: a candidate that traces the very program of one measured before is not simulated again") {
  // With every block of P^T on transposing DMAs, the knob that places the
  // tensor-engine transposes' evacuation changes nothing: the same program.
  SimTarget target(
      {"attention", {{"seq", 640}, {"q_heads", 2}, {"kv_heads", 1}, {"head_dim", 128}}, "bf16", "trn2"});
  const nlohmann::json common = {
      {"kv_tile", 512}, {"q_tiles", 2}, {"pipeline_depth", 2}, {"stats_on_gpsimd", 1}};
  auto candidate = [&](int dma_transpose, int evacuate_on_scalar) {
    nlohmann::json params = common;
    params["dma_transpose"] = dma_transpose;
    params["evacuate_on_scalar"] = evacuate_on_scalar;
    return Candidate{"flash_banked", params};
  };
  const Measurement first = target.measure(candidate(4, 0), {});
  REQUIRE(first.status == Outcome::ok);
  const Measurement same = target.measure(candidate(4, 1), {});
  CHECK(same.status == Outcome::ok);
  CHECK(same.metrics == first.metrics);
  CHECK(same.verification.at("same_program_as") == candidate(4, 0).key());
  // A knob that changes the program is measured afresh.
  const Measurement other = target.measure(candidate(3, 1), {});
  CHECK(!other.verification.contains("same_program_as"));
  CHECK(other.metrics.at("cycles") != first.metrics.at("cycles"));
}

TEST_CASE(
    "sim target: a candidate that only allocates differently is measured once when its schedule is the "
    "same") {
  // N = tile_n = 512: unroll_factor 2 allocates operand and PSUM tiles for two
  // N tiles but there is only one, so the instructions and their dependencies
  // are unroll_factor 1's.
  SimTarget target({"gemm", {{"M", 256}, {"N", 512}, {"K", 512}}, "bf16", "trn1"});
  auto candidate = [](int unroll_factor, int tile_k) {
    return Candidate{"tiled",
                     {{"tile_m", 128},
                      {"tile_n", 512},
                      {"tile_k", tile_k},
                      {"pipeline_depth", 2},
                      {"unroll_factor", unroll_factor}}};
  };
  const Measurement first = target.measure(candidate(1, 128), {});
  REQUIRE(first.status == Outcome::ok);
  const Measurement same = target.measure(candidate(2, 128), {});
  CHECK(same.status == Outcome::ok);
  CHECK(same.metrics == first.metrics);
  CHECK(same.verification.at("same_schedule_as") == candidate(1, 128).key());
  CHECK(same.profile.at("sbuf_peak_bytes_per_partition").get<std::int64_t>() >
        first.profile.at("sbuf_peak_bytes_per_partition").get<std::int64_t>());  // its own allocation
  // Different instructions: measured afresh.
  const Measurement other = target.measure(candidate(2, 64), {});
  CHECK(!other.verification.contains("same_schedule_as"));
  CHECK(!other.verification.contains("same_program_as"));
}

TEST_CASE(
    "sim target: a candidate that only allocates differently but whose buffers add dependencies is measured "
    "afresh") {
  // rmsnorm's fused variant at hidden size 2048: tile_size 4096 runs the very instructions of 2048 (one
  // tile spans the row; the same layout-free hash), but its tiles are twice as large and the allocator
  // places them where they overlap slots still in use, which adds dependencies and time.
  const SimTargetConfig config{"rmsnorm", {{"rows", 512}, {"cols", 2048}}, "fp32", "trn1"};
  auto candidate = [](int tile_size) {
    return Candidate{"fused", {{"tile_size", tile_size}, {"pipeline_depth", 3}, {"unroll_factor", 1}}};
  };
  SimTarget target(config);
  const Measurement first = target.measure(candidate(2048), {});
  REQUIRE(first.status == Outcome::ok);
  const Measurement overlapping = target.measure(candidate(4096), {});
  REQUIRE(overlapping.status == Outcome::ok);
  CHECK(!overlapping.verification.contains("same_schedule_as"));
  CHECK(!overlapping.verification.contains("same_program_as"));
  // Its own latency: what a target that never measured the first candidate gives it, not the first's.
  const Measurement alone = SimTarget(config).measure(candidate(4096), {});
  REQUIRE(alone.status == Outcome::ok);
  CHECK(overlapping.metrics.at("cycles") == alone.metrics.at("cycles"));
  CHECK(overlapping.metrics.at("cycles") != first.metrics.at("cycles"));
}

TEST_CASE("flat space: the variants as one space, each one's valid configurations exactly, both ways") {
  VariantCatalog catalog = catalog_of({"fast", "slow"});
  // A third variant with a parameter of its own and a recorded (allowed-list) space.
  VariantSpace recorded;
  recorded.name = "recorded";
  recorded.parameters = {search::ParameterSpec::ordered("a", {std::int64_t(16), std::int64_t(64)}),
                         search::ParameterSpec::categorical("layout", {"row", "col"})};
  recorded.allowed = {{0, 1}, {1, 0}};
  recorded.defaults = {{"a", 16}, {"layout", "col"}};
  build_space(recorded);
  catalog.variants.push_back(recorded);

  const FlatSpace one = flatten(catalog, {"slow"});
  CHECK(one.space == catalog.variant("slow").space);  // one variant: its own space, shared
  CHECK(one.variant_parameter.empty());

  const FlatSpace flat = flatten(catalog, {"recorded", "fast"});
  CHECK(flat.variants == std::vector<std::string>{"fast", "recorded"});  // the catalog's order
  CHECK(flat.variant_parameter == "variant");
  const auto fast_size = catalog.variant("fast").space->size();
  REQUIRE(flat.space->size() == fast_size + 2);
  CHECK(flat_size(catalog, {"fast", "recorded"}) == fast_size + 2);
  CHECK(flat.space->parameter_index("a").has_value());
  CHECK(flat.space->parameters()[*flat.space->parameter_index("a")].size() == 4);  // 16, 32, 64, 128
  std::set<std::string> seen;
  for (std::uint64_t i = 0; i < flat.space->size(); ++i) {
    const Candidate c = flat.candidate(flat.space->configuration_at(i));
    CHECK(seen.insert(c.key()).second);
    const VariantSpace& own = catalog.variant(c.variant);
    const auto configuration = search::configuration_from_json(*own.space, c.params);
    REQUIRE(own.space->contains(configuration));
    const auto back = flat.configuration(c.variant, configuration);
    REQUIRE(back.has_value());
    CHECK(flat.space->index_of(*back) == i);
  }
  CHECK(seen.count("recorded{a=16,layout=col}"));
  CHECK_FALSE(seen.count("recorded{a=16,layout=row}"));  // not recorded, so not in the flat space either
  CHECK_FALSE(flat.configuration("slow", catalog.variant("slow").space->configuration_at(0)).has_value());
}

TEST_CASE(
    "generator: when no finding proposes anything new, the budget goes to a flat search of the variants "
    "worth keeping") {
  const VariantCatalog catalog = catalog_of({"fast", "slow", "untried"});
  KernelGenerator generator;
  GenerationRequest request = request_for(catalog);
  request.best = {"fast", {{"a", 64}, {"b", 2}, {"c", 1}}};
  request.analysis.bound = "memory";
  request.measured_variants = {"fast", "slow"};
  request.measured_counts = {{"fast", 3}, {"slow", 1}};
  // Within "fast" the parameters moved the latency 1.5x; "slow" is 2x the best: no tuning seen here closes
  // that.
  request.measured_values = {{"fast", {1.0, 1.5, 1.2}}, {"slow", {2.0}}};
  auto generation = generator.generate(request);
  REQUIRE_FALSE(generation.result.ideas.empty());
  const Idea& idea = generation.result.ideas.front();
  CHECK(idea.kind == "handover");
  CHECK(idea.variant == "fast");
  CHECK(idea.variants == std::vector<std::string>{"fast", "untried"});  // nothing says "untried" is worse
  CHECK(idea.rationale.find("set aside slow (2.00x)") != std::string::npos);
  const Json& evidence = generation.decision.evidence.at("handover");
  CHECK(evidence.at("spread").get<double>() == doctest::Approx(1.5));
  CHECK(evidence.at("set_aside").size() == 1);
  CHECK(evidence.at("history").get<int>() == 3);
  // The neighbourhood searches stay as alternatives after it.
  CHECK(generation.result.ideas.size() > 1);
  CHECK(generation.result.ideas[1].id.starts_with("neighbourhood:"));

  // Where the parameters moved a variant further than the gap, it is kept.
  request.measured_values["fast"] = {1.0, 2.5};
  generation = generator.generate(request);
  CHECK(generation.result.ideas.front().variants == std::vector<std::string>{"fast", "slow", "untried"});

  // A finding with a new idea comes first; no handover then.
  Finding finding;
  finding.kind = "dma_bound_no_overlap";
  finding.action = "raise";
  finding.roles = {kRolePipelineDepth};
  finding.expected_gain = 0.3;
  request.analysis.findings = {finding};
  generation = generator.generate(request);
  CHECK(generation.result.ideas.front().kind == "raise");
  for (const auto& other : generation.result.ideas) CHECK(other.kind != "handover");
  CHECK_FALSE(generation.decision.evidence.contains("handover"));
}

TEST_CASE(
    "explorer: the handover searches the flat space across variants until its budget, without patience") {
  const VariantCatalog catalog = catalog_of({"fast", "slow"});
  auto flat = std::make_shared<const FlatSpace>(flatten(catalog, {"fast", "slow"}));
  ParamExplorer explorer;
  ExplorationRequest request;
  request.variant = &catalog.variant("fast");
  request.region = flat->space;
  request.flat = flat;
  request.strategy = "random";
  request.seed = 11;
  request.batch_size = 2;
  request.budget = 40;  // more than the patience (12): nothing ever improves below
  request.known = {search::Observation::success(
      *flat->configuration("fast", catalog.variant("fast").space->configuration_at(0)), 0.5)};
  std::set<std::string> variants, seen;
  MeasureBatch measure = [&](const std::vector<Candidate>& batch) {
    std::vector<search::Observation> out;
    for (const auto& c : batch) {
      variants.insert(c.variant);
      CHECK(seen.insert(c.key()).second);
      CHECK(catalog.variant(c.variant).space->contains(
          search::configuration_from_json(*catalog.variant(c.variant).space, c.params)));
      out.push_back(search::Observation::success({}, 1.0));
    }
    return out;
  };
  const auto plan = explorer.plan(request);
  CHECK(plan.result.strategy == "random");
  CHECK(plan.decision.inputs.at("variants") == Json::array({"fast", "slow"}));
  const auto result = explorer.explore(request, plan.result, measure, {});
  CHECK(result.evaluations == 40);
  CHECK_FALSE(result.settled);
  CHECK(variants == std::set<std::string>{"fast", "slow"});
  CHECK_FALSE(
      seen.count(Candidate{"fast", search::to_json(*catalog.variant("fast").space,
                                                   catalog.variant("fast").space->configuration_at(0))}
                     .key()));
}

TEST_CASE(
    "explorer: a handover whose whole flat space fits its budget still searches with the goal's strategy") {
  // Enumerating it in the grid's order would find the best no sooner than
  // its place in that order; the strategy proposes every configuration too.
  const VariantCatalog catalog = catalog_of({"fast", "slow"});
  auto flat = std::make_shared<const FlatSpace>(flatten(catalog, {"fast", "slow"}));
  ParamExplorer explorer;
  ExplorationRequest request;
  request.variant = &catalog.variant("fast");
  request.region = flat->space;
  request.flat = flat;
  request.strategy = "random";
  request.seed = 5;
  request.batch_size = 2;
  request.budget = int(flat->space->size()) + 10;
  std::set<std::string> seen;
  MeasureBatch measure = [&](const std::vector<Candidate>& batch) {
    std::vector<search::Observation> out;
    for (const auto& c : batch) {
      CHECK(seen.insert(c.key()).second);
      out.push_back(search::Observation::success({}, 1.0));
    }
    return out;
  };
  const auto plan = explorer.plan(request);
  CHECK(plan.result.strategy == "random");
  CHECK(plan.decision.action == "search:random");
  const auto result = explorer.explore(request, plan.result, measure, {});
  CHECK(result.settled);
  CHECK(seen.size() == flat->space->size());  // every configuration once, as the grid would
}

TEST_CASE("explorer, screened: probes are ranked with the strategy's proposals, never measured unchosen") {
  const VariantSpace variant = make_variant("fast");
  ParamExplorer explorer;
  ExplorationRequest request;
  request.variant = &variant;
  request.strategy = "random";
  request.seed = 3;
  request.batch_size = 2;
  request.budget = 6;
  request.region = variant.space;
  // A probe outside every region the strategy proposes from is still shown to the screen.
  request.probes = {{"other", {{"a", 32}, {"b", 1}, {"c", 1}}}, {"fast", {{"a", 128}, {"b", 3}, {"c", 4}}}};
  std::vector<std::vector<std::string>> shown;  // per round, what the screen was shown
  std::vector<std::string> measured;
  // The screen prefers larger a*b*c, and passes over the probe of "other" always.
  auto score = [](const Candidate& c) {
    return c.params.at("a").get<double>() * c.params.at("b").get<double>() * c.params.at("c").get<double>();
  };
  request.screening = ExplorationRequest::Screening{
      2, 8, [&](const std::vector<Candidate>& proposals, std::size_t keep) {
        shown.emplace_back();
        for (const auto& c : proposals) shown.back().push_back(c.key());
        std::vector<std::size_t> order;
        for (std::size_t i = 0; i < proposals.size(); ++i)
          if (proposals[i].variant == "fast") order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
          return score(proposals[x]) > score(proposals[y]);
        });
        if (order.size() > keep) order.resize(keep);
        return order;
      }};
  MeasureBatch measure = [&](const std::vector<Candidate>& batch) {
    std::vector<search::Observation> out;
    for (const auto& c : batch) {
      measured.push_back(c.key());
      out.push_back(search::Observation::success({}, 1.0 / score(c)));
    }
    return out;
  };
  auto result = explorer.explore(request, explorer.plan(request).result, measure, {});
  REQUIRE_FALSE(shown.empty());
  // The first round: both probes first, then the strategy's proposals (one repeating a probe dropped).
  CHECK(shown[0].size() >= 2 + 7);
  CHECK(std::set<std::string>(shown[0].begin(), shown[0].end()).size() == shown[0].size());
  CHECK(shown[0][0] == request.probes[0].key());
  CHECK(shown[0][1] == request.probes[1].key());
  // The device measured only what the screen chose, the "fast" probe (the screen's favourite) among them.
  CHECK(result.evaluations == int(measured.size()));
  CHECK(std::find(measured.begin(), measured.end(), request.probes[0].key()) == measured.end());
  CHECK(std::find(measured.begin(), measured.end(), request.probes[1].key()) != measured.end());
  // The unchosen probe is shown again in every later round.
  for (std::size_t r = 1; r < shown.size(); ++r) CHECK(shown[r][0] == request.probes[0].key());
  CHECK(measured.size() <= 6);

  // The screen choosing none settles the search without a measurement.
  measured.clear();
  request.screening->choose = [&](const std::vector<Candidate>&, std::size_t) {
    return std::vector<std::size_t>{};
  };
  result = explorer.explore(request, explorer.plan(request).result, measure, {});
  CHECK(result.evaluations == 0);
  CHECK(measured.empty());
  CHECK(result.settled);
  CHECK(result.stop_reason.find("screen") != std::string::npos);

  // Probes alone (a structural idea): ranked too, one round at a time.
  request.region = nullptr;
  shown.clear();
  request.screening->choose = [&](const std::vector<Candidate>& proposals, std::size_t keep) {
    shown.emplace_back();
    for (const auto& c : proposals) shown.back().push_back(c.key());
    return std::vector<std::size_t>{proposals.size() - 1};
  };
  result = explorer.explore(request, explorer.plan(request).result, measure, {});
  CHECK(shown.size() == 2);
  CHECK(measured == std::vector<std::string>{request.probes[1].key(), request.probes[0].key()});
  CHECK(result.settled);
}
