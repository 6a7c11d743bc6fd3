#pragma once
// The skill interface (DESIGN.md, "The four skills").
//
// A skill takes a typed request and returns a typed result plus a decision
// record: what it chose, from which alternatives, on which evidence. The
// orchestrator writes the record to the decision log and never reaches inside
// a skill. Each role (analyzer, generator, explorer, runner) is its own small
// interface; the built-ins implement them, and a plugin skill (an external
// program speaking JSON lines) implements the same interface by converting
// the request and result to and from JSON (skills/plugin/), so it can replace
// a built-in or follow it without the loop changing.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/registry.hpp"
#include "search/strategy.hpp"
#include "skills/candidate.hpp"
#include "skills/flat_space.hpp"
#include "skills/variant_catalog.hpp"

namespace autotune::skills {

// Skill names as they appear in the decision log.
inline constexpr const char* kProfileAnalyzer = "profile_analyzer";
inline constexpr const char* kKernelGenerator = "kernel_generator";
inline constexpr const char* kParamExplorer = "param_explorer";
inline constexpr const char* kBenchmarkRunner = "benchmark_runner";

// Actions the built-in skills log that `autotune explain` traces: the
// analyzer's "findings:<first finding>" or "no_findings", the generator's
// "propose:<first idea's kind>" or "nothing_left".
inline constexpr std::string_view kFindingsPrefix = "findings:";
inline constexpr const char* kNoFindings = "no_findings";
inline constexpr std::string_view kProposePrefix = "propose:";
inline constexpr const char* kNothingLeft = "nothing_left";

struct SkillDecision {
  std::string action;
  std::string proposer = "rules";
  Json inputs = Json::object();
  Json evidence = Json::object();
  Json alternatives = Json::array();
  std::string rationale;
  std::string outcome;
};

template <class Result>
struct SkillResult {
  Result result;
  SkillDecision decision;
};

class Skill {
 public:
  virtual ~Skill() = default;
  virtual std::string name() const = 0;  // one of the k* names above, or a plugin's name
};

// A built-in skill as `autotune skills` lists it and as a goal's plugin
// skills name its role. Each built-in registers itself from its own .cpp file
// under its decision-log name; the registry is what plugins may name.
struct SkillInfo {
  int step = 0;                // its place in an iteration (1 analyze ... 4 measure); orders listings
  std::string does;            // one line
  std::string plugins;         // how a plugin can take part in its role
  std::string plugin_refusal;  // non-empty: plugins cannot take this role, and what to use instead
};
Registry<SkillInfo>& skill_registry();
// The registered skills' names in the loop's order (SkillInfo::step).
std::vector<std::string> skills_in_loop_order();

struct SkillRegistration : Registration<SkillInfo> {
  SkillRegistration(const std::string& name, SkillInfo info)
      : Registration(skill_registry(), name, std::move(info)) {}
};

// --- Profile Analyzer --------------------------------------------------------

// One observation about a measured candidate, with the numbers behind it and
// the action it suggests. Actions:
//   "raise"       raise the parameters playing `roles` (e.g. pipeline_depth)
//   "structural"  another structural variant (less traffic, fused work)
//   "stop"        nothing left worth trying (at the roofline, high MFU)
//   "make_room"   on-chip memory is short: the parameters playing `roles`
//                 hold it, so each raise is paired with one step down of them
//   "none"        informative only
struct Finding {
  std::string kind;
  std::string summary;  // one line, with the numbers
  Json evidence = Json::object();
  std::string action = "none";
  std::vector<std::string> roles;
  // Estimated fraction of the latency the action could remove; ranks findings.
  double expected_gain = 0;
};
void to_json(Json& out, const Finding& finding);
void from_json(const Json& in, Finding& finding);

struct AnalysisRequest {
  Candidate candidate;
  Json metrics = Json::object();
  Json profile;  // summary; null when the target gives none
  Json target_facts = Json::object();
};

struct Analysis {
  std::string bound;              // compute | memory | fixed_overhead | dependency | unknown
  std::vector<Finding> findings;  // strongest first
  bool at_roofline = false;
  double headroom = 0;  // latency / roofline bound (1 = at the bound); 0 when unknown
};
void to_json(Json& out, const Analysis& analysis);
void from_json(const Json& in, Analysis& analysis);

class AnalyzerSkill : public Skill {
 public:
  virtual SkillResult<Analysis> analyze(const AnalysisRequest& request) = 0;
};

// --- Kernel Generator --------------------------------------------------------

// A candidate variant and the region of its space worth searching next.
struct Idea {
  std::string id;    // stable key; an idea is tried at most once per run
  std::string kind;  // "raise", "structural", "explore"
  std::string variant;
  // Parameter -> values to search; parameters not listed keep their domain.
  std::map<std::string, std::vector<search::ParamValue>> region;
  // Specific candidates to measure first (structural probes).
  std::vector<Candidate> probes;
  std::string finding;  // the finding kind it answers ("" for exploration)
  std::string rationale;
  double expected_gain = 0;
  // Continues a region that settled earlier: its search gets a fresh stretch
  // of patience instead of inheriting the earlier measurements' staleness.
  bool continuation = false;
  // How its region is searched, when the idea knows better than the goal's
  // strategy (e.g. "coordinate" for choices without an order); empty: the
  // goal's. An idea that names one is searched with it even where the region
  // is small enough to enumerate.
  std::string strategy;
  Json strategy_options = Json::object();
  // The handover (kind "handover"): these variants searched as one flat
  // space (skills/flat_space.hpp) with the goal's strategy until the budget
  // is spent, everything measured of them as its history; `variant` is the
  // best's. Empty: `variant` and `region` alone.
  std::vector<std::string> variants;
};
void to_json(Json& out, const Idea& idea);

struct GenerationRequest {
  const VariantCatalog* catalog = nullptr;
  Candidate best;
  Json best_metrics = Json::object();
  Analysis analysis;
  std::set<std::string>
      tried_ideas;  // ideas whose region settled (Exploration::settled); never proposed again
  std::set<std::string> measured_variants;               // variants with at least one measurement
  std::map<std::string, std::uint64_t> measured_counts;  // variant -> configurations measured (any outcome)
  // variant -> objective values (minimised) of its successful measurements
  std::map<std::string, std::vector<double>> measured_values;
  // variant -> its failed measurements (configurations in the variant's
  // space, in the order measured)
  std::map<std::string, std::vector<search::Observation>> measured_failures;
};

struct Generation {
  std::vector<Idea> ideas;  // best first; empty when nothing is left
};

class GeneratorSkill : public Skill {
 public:
  virtual SkillResult<Generation> generate(const GenerationRequest& request) = 0;
};

// --- Param Explorer ----------------------------------------------------------

struct ExplorationRequest {
  const VariantSpace* variant = nullptr;
  std::shared_ptr<const search::SearchSpace> region;
  std::vector<Candidate> probes;  // measured first, before the strategy
  std::string strategy;
  Json strategy_options = Json::object();
  // Search the region with `strategy` even when enumerating it fits the
  // budget (the idea chose the strategy; see Idea::strategy).
  bool strategy_chosen = false;
  std::uint64_t seed = 0;
  int budget = 0;      // evaluations at most
  int batch_size = 1;  // candidates per ask
  // Earlier measurements of this variant (warm start; never re-proposed).
  std::vector<search::Observation> known;
  // The variant's measurements in earlier runs of the same kernel (the goal's
  // search.transfer), one entry per run: hints for where to start
  // (Strategy::learn_from), not measurements of this run.
  struct RelatedRun {
    int64_t run = 0;
    std::vector<search::Observation> observations;
  };
  std::vector<RelatedRun> related;
  // Whether the earlier measurements without improvement count towards the
  // explorer's patience (false for a continuation: a fresh stretch).
  bool carry_patience = true;
  // The handover: `region` is this flat space of several variants (its
  // configurations name their variant), and the search goes on until the
  // budget is spent or the space is exhausted, without patience.
  std::shared_ptr<const FlatSpace> flat;
  // A simulated screen (the goal's `screen:`; docs/loop.md, "Screened
  // tuning"): each round the strategy proposes `propose` configurations, the
  // probes not measured yet join them, and choose() returns the indices of
  // the ones the device measures (at most its `keep` argument, best first);
  // the strategy's others are handed back to it (Strategy::release), the
  // probes' wait for the next round. choose() may return none (the screen
  // predicts every one worse than the best beyond its margin): the search
  // then settles. The strategy learns from the device's measurements alone;
  // the screen only chooses what they are spent on.
  struct Screening {
    int keep = 1;
    int propose = 2;
    std::function<std::vector<std::size_t>(const std::vector<Candidate>&, std::size_t keep)> choose;
  };
  std::optional<Screening> screening;
};

struct ExplorationPlan {
  std::string strategy;  // the one actually used (may differ from the goal's, see rationale)
  int budget = 0;
  std::uint64_t region_size = 0;
};

// Measures candidates and returns, per candidate in order, the objective
// value (minimised) or the failure reason.
using MeasureBatch = std::function<std::vector<search::Observation>(const std::vector<Candidate>&)>;

struct Exploration {
  int evaluations = 0;  // candidates handed to the runner
  std::optional<Candidate> best;
  std::optional<double> best_value;
  std::string stop_reason;
  // The region has nothing more to give: exhausted, or searched without
  // improvement for the explorer's patience. A search cut short by its budget
  // or by the orchestrator is not settled, so its idea may be continued.
  bool settled = false;
  // Configurations of the region not measured because a capacity failure
  // measured before predicts theirs (params, rule, like: the one measured).
  Json predicted_failures = Json::array();
};

class ExplorerSkill : public Skill {
 public:
  // Decides how to search (strategy, budget); the orchestrator logs the
  // decision before any trial it leads to.
  virtual SkillResult<ExplorationPlan> plan(const ExplorationRequest& request) = 0;
  // Runs the plan. `should_stop` is checked between batches (goal met, wall
  // time spent).
  virtual Exploration explore(const ExplorationRequest& request, const ExplorationPlan& plan,
                              const MeasureBatch& measure, const std::function<bool()>& should_stop) = 0;
};

}  // namespace autotune::skills
