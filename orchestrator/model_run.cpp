#include "orchestrator/model_run.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "model/fit.hpp"
#include "orchestrator/decision_log.hpp"
#include "orchestrator/goal_sections.hpp"
#include "orchestrator/setup.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

namespace autotune::orchestrator {

namespace {

// A kernel at or below this factor of its roofline bound has nothing left
// worth a loop (the analyzer's own at-roofline threshold).
constexpr double kAtRoofline = 1.15;

int positive_int(ConfigReader& reader, const std::string& key, int fallback) {
  const int value = reader.optional<int>(key, fallback, "a whole number >= 1");
  if (value < 1) {
    const YAML::Node node = reader.raw(key);
    reader.fail(key, std::to_string(value) + " is out of range; accepted: a whole number >= 1", &node);
  }
  return value;
}

// Operators running the same kernel on the same shape (the gate and up
// projections; an operator of every layer) are tuned once, as one.
struct KernelGroup {
  std::string key;
  std::vector<std::size_t> members;  // indices into ForwardTiming::operators
  double total_s = 0, share = 0, headroom = 0, worth = 0;
};

std::string group_key(const model::OperatorTiming& t) {
  std::string key = t.op.family;
  for (const auto& [name, value] : t.op.shape) key += " " + name + "=" + std::to_string(value);
  return key;
}

std::vector<KernelGroup> kernel_groups(const model::ForwardTiming& forward) {
  std::map<std::string, KernelGroup> groups;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < forward.operators.size(); ++i) {
    const auto& t = forward.operators[i];
    const std::string key = group_key(t);
    if (!groups.count(key)) order.push_back(key);
    auto& g = groups[key];
    g.key = key;
    g.members.push_back(i);
    g.total_s += t.latency_s * double(t.op.calls);
    g.headroom = t.latency_s > 0 ? std::max(0.0, 1.0 - t.roofline_s / t.latency_s) : 0;
  }
  std::vector<KernelGroup> out;
  for (const auto& key : order) {
    auto g = groups.at(key);
    g.share = forward.latency_s > 0 ? g.total_s / forward.latency_s : 0;
    g.worth = g.share * g.headroom;
    out.push_back(g);
  }
  return out;
}

std::string operator_names(const model::ForwardTiming& forward, const KernelGroup& group) {
  std::string out;
  for (auto i : group.members) out += (out.empty() ? "" : ", ") + forward.operators[i].op.name;
  return out;
}

// Re-sums the forward after an operator's timing changed.
void resum(model::ForwardTiming& forward) {
  const double before = forward.latency_s;
  forward.latency_s = forward.roofline_s = 0;
  for (const auto& t : forward.operators) {
    forward.latency_s += t.latency_s * double(t.op.calls);
    forward.roofline_s += t.roofline_s * double(t.op.calls);
  }
  for (auto& t : forward.operators)
    t.share_percent =
        forward.latency_s > 0 ? 100.0 * t.latency_s * double(t.op.calls) / forward.latency_s : 0;
  // The FLOPs are unchanged: the MFU scales with the time.
  if (forward.latency_s > 0) forward.mfu_percent *= before / forward.latency_s;
}

std::string configuration_text(const model::ChosenConfig& config) {
  std::string out = config.variant;
  for (const auto& [k, v] : config.params) out += " " + k + "=" + std::to_string(v);
  return out;
}

Json forward_evidence(const model::ForwardTiming& forward) {
  Json operators = Json::array();
  for (const auto& t : forward.operators) {
    operators.push_back({{"operator", t.op.name},
                         {"kernel", group_key(t)},
                         {"configuration", configuration_text(t.config)},
                         {"source", t.config.source},
                         {"latency_s", t.latency_s},
                         {"calls", t.op.calls},
                         {"share_percent", std::round(t.share_percent * 10) / 10},
                         {"roofline_bound_s", t.roofline_s}});
  }
  return {{"forward_latency_s", forward.latency_s},
          {"roofline_sum_s", forward.roofline_s},
          {"operators", operators}};
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Worth of tuning each kernel: the share of the forward it could remove at
// most (its time share times its distance to its roofline bound). The first
// kernel neither settled nor at its bound is chosen (`groups` are sorted by
// worth here); `candidates` records the strongest few for the decision.
const KernelGroup* choose_kernel(const model::ForwardTiming& current, const std::set<std::string>& settled,
                                 std::vector<KernelGroup>& groups, Json& candidates) {
  groups = kernel_groups(current);
  std::stable_sort(groups.begin(), groups.end(),
                   [](const KernelGroup& a, const KernelGroup& b) { return a.worth > b.worth; });
  const KernelGroup* chosen = nullptr;
  for (const auto& g : groups) {
    const auto& first = current.operators[g.members.front()];
    std::string why;
    if (settled.count(g.key))
      why = "settled: its last loop found nothing faster";
    else if (first.latency_s <= kAtRoofline * first.roofline_s)
      why = "at its roofline bound";
    if (candidates.size() < 8)
      candidates.push_back(
          {{"kernel", g.key},
           {"operators", operator_names(current, g)},
           {"share_percent", std::round(g.share * 1000) / 10},
           {"headroom_percent", std::round(g.headroom * 1000) / 10},
           {"latency_over_bound", first.roofline_s > 0 ? first.latency_s / first.roofline_s : 0},
           {"worth_percent", std::round(g.worth * 1000) / 10},
           {"skipped", why}});
    if (!chosen && why.empty()) chosen = &g;
  }
  return chosen;
}

// The kernel goal that tunes `lead`'s kernel from its current configuration
// with a slice of the model's budget, stopping only near its roofline bound.
Goal kernel_goal_for(const ModelGoal& goal, const model::OperatorTiming& lead, int slice, int iteration,
                     double elapsed_s) {
  Goal kernel_goal;
  kernel_goal.file = goal.file;
  kernel_goal.name = goal.name + "/" + lead.op.name;
  kernel_goal.family = lead.op.family;
  kernel_goal.shape = lead.op.shape;
  kernel_goal.dtype = std::string(sim::dtype_name(goal.model.dtype));
  kernel_goal.target.kind = "sim";
  kernel_goal.target.name = goal.target;
  kernel_goal.objective = Objective::latency;
  kernel_goal.absolute = kAtRoofline * lead.roofline_s;
  kernel_goal.max_iterations = goal.kernel_iterations;
  kernel_goal.budget_evaluations = slice;
  kernel_goal.budget_wall_time_s = std::max(1.0, goal.budget_wall_time_s - elapsed_s);
  kernel_goal.strategy = goal.strategy;
  kernel_goal.strategy_options = goal.strategy_options;
  kernel_goal.batch_size = goal.batch_size;
  kernel_goal.transfer = goal.transfer;
  kernel_goal.start_variant = lead.config.variant;
  kernel_goal.start_params = Json::object();
  for (const auto& [k, v] : lead.config.params) kernel_goal.start_params[k] = v;
  kernel_goal.parallel = goal.parallel;
  kernel_goal.seed = goal.seed + std::uint64_t(iteration);
  return kernel_goal;
}

// A kernel run's best, if faster, becomes the configuration of every
// operator sharing that kernel; otherwise the kernel is settled. Returns the
// outcome in words.
std::string adopt_kernel_run(const RunSummary& kernel_run, const KernelGroup& chosen,
                             const model::OperatorTiming& lead, model::ForwardTiming& current,
                             std::set<std::string>& settled) {
  const double before = lead.latency_s;
  const double after =
      kernel_run.best_metrics.is_object() ? kernel_run.best_metrics.value("latency_s", before) : before;
  if (!kernel_run.best_trial || !(after < before)) {
    settled.insert(chosen.key);
    return lead.op.name + ": nothing faster than " + std::to_string(before * 1e3) + " ms in run " +
           std::to_string(kernel_run.run_id) + " (" + kernel_run.stop_reason + ")";
  }
  model::ChosenConfig config;
  config.variant = kernel_run.best.variant;
  const auto& variant = kernels::family_registry().get(lead.op.family).variant(config.variant);
  kernels::ParamValues given;
  for (const auto& [k, v] : kernel_run.best.params.items())
    if (variant.find_param(k) && v.is_number_integer()) given[k] = v.get<std::int64_t>();
  config.params = kernels::resolve_params(variant, given);
  config.source = "tuned";
  config.run = kernel_run.run_id;
  config.trial = kernel_run.best_trial;
  config.recorded_latency_s = after;
  const std::string name = lead.op.name;  // `lead` is one of the operators rewritten below
  const double old_forward = current.latency_s;
  for (auto i : chosen.members) {
    current.operators[i].config = config;
    current.operators[i].latency_s = after;
  }
  resum(current);
  return name + ": " + std::to_string(before * 1e3) + " ms -> " + std::to_string(after * 1e3) + " ms (run " +
         std::to_string(kernel_run.run_id) + "); forward " + std::to_string(old_forward * 1e3) + " ms -> " +
         std::to_string(current.latency_s * 1e3) + " ms";
}

// The tuned forward, timed afresh with the run's choices and checked end to
// end; the finish decision.
void finish_forward(const ModelGoal& goal, const sim::TargetSpec& target, const model::ForwardTiming& current,
                    const std::string& stop, ModelRunSummary& summary, DecisionLog& log) {
  model::ForwardOptions tuned_options;
  tuned_options.jobs = goal.parallel;
  for (const auto& t : current.operators) tuned_options.configs[t.op.name] = t.config;
  tuned_options.baseline = true;  // operators the run did not tune keep their baseline
  summary.tuned = model::time_forward(goal.model, target, nullptr, tuned_options);
  summary.best_latency_s = summary.tuned.latency_s;
  summary.improvement = 1.0 - summary.best_latency_s / summary.baseline_latency_s;
  summary.goal_met = summary.tuned.all_ok && summary.improvement >= goal.improvement;
  if (goal.verify && summary.tuned.all_ok) {
    summary.check = model::verify_chain(goal.model, summary.tuned, target, goal.seed);
    if (!summary.check->passed) summary.goal_met = false;
  }
  skills::SkillDecision d;
  d.action = "finish";
  d.evidence = forward_evidence(summary.tuned);
  d.evidence["improvement"] = summary.improvement;
  d.evidence["speedup"] = summary.baseline_latency_s / summary.best_latency_s;
  d.evidence["mfu_percent"] = summary.tuned.mfu_percent;
  if (summary.check)
    d.evidence["end_to_end"] = {{"mse", summary.check->mse},
                                {"cosine_similarity", summary.check->cosine_similarity},
                                {"passed", summary.check->passed}};
  d.rationale = stop;
  d.outcome = summary.goal_met ? "goal met" : "goal not met";
  log.append(summary.iterations, "model_orchestrator", d);
}

}  // namespace

bool is_model_goal(const std::filesystem::path& path) {
  const YAML::Node document = load_yaml_file(path);
  return document && document.IsMap() && document["model"];
}

ModelGoal load_model_goal(const std::filesystem::path& path) {
  ModelGoal goal;
  goal.file = path;
  const YAML::Node document = load_yaml_file(path);
  if (!document || !document.IsMap()) throw UserError(path.string() + ": a goal file is a YAML mapping");
  ConfigReader top(document, path.string());
  goal.name = top.name("name", path.stem().string());
  {
    ConfigReader model = top.child("model");
    std::filesystem::path file = model.required<std::string>("file", "a model file (configs/models/*.yaml)");
    if (file.is_relative()) file = path.parent_path() / file;
    if (!std::filesystem::is_regular_file(file)) {
      const YAML::Node node = model.raw("file");
      const std::string path_text = file.lexically_normal().string();
      model.fail("file",
                 std::filesystem::is_directory(file) ? "a folder, not a model file: " + path_text
                 : std::filesystem::exists(file)
                     ? "not a regular file: " + path_text + "; accepted: a model file (configs/models/*.yaml)"
                     : "file not found: " + path_text,
                 &node);
    }
    model::ModelOverrides overrides;
    // Checked here, so that an error names this file's key rather than the command's flag.
    overrides.layers = model.maybe_count("layers", 1, model::kMaxLayers);
    overrides.seq = model.maybe_count("seq", 1, model::kMaxSeq);
    if (overrides.seq) {
      const YAML::Node node = model.raw("seq");
      overrides.seq_where = model.location(node) + ": " + model.key_path("seq");
    }
    model.finish({"file", "layers", "seq"});
    goal.model = model::load_model(file.lexically_normal(), overrides);
  }
  if (top.has("kernel")) {
    const YAML::Node node = top.raw("kernel");
    top.fail("kernel", "a goal names a model or a kernel, not both", &node);
  }
  goal.target = top.optional<std::string>("target", "trn2", "a simulated target (trn1, trn2)");
  sim::TargetSpec target;
  try {
    target = sim::load_target(goal.target);
  } catch (const UserError& e) {
    const YAML::Node node = top.raw("target");
    top.fail("target", e.what(), &node);
  }
  // The goal is measured against the all-baseline forward: an operator whose
  // baseline cannot run on the target makes the goal meaningless, and is
  // found here, before a run is created, by tracing (not simulating) them.
  if (const auto unfit = model::unfit_baselines(goal.model, target); !unfit.empty()) {
    const YAML::Node node = top.raw("model");
    top.fail(
        "model",
        "the goal measures the forward against every operator's baseline, and on " + goal.target +
            " these do not run: " + join(unfit, "; ") +
            "; accepted: a model whose every baseline fits the target (autotune model --baseline shows them)",
        &node);
  }
  const std::string objective = top.optional<std::string>("objective", "latency", "latency");
  if (objective != "latency") {
    const YAML::Node node = top.raw("objective");
    top.fail("objective", "a model goal's objective is the forward's latency; accepted: latency", &node);
  }
  if (auto section = top.maybe_child("goal")) {
    // Unknown keys first (finish() passes the keys read): `mfu_percent` is
    // named as what a model goal does not take, not hidden behind the
    // missing improvement.
    (void)section->maybe<double>("improvement");
    section->finish({"improvement"});
    goal.improvement = section->required<double>("improvement",
                                                 "a fraction of the forward's latency removed, "
                                                 "0 < x < 1 (0.8 = 5x faster)");
    if (!(goal.improvement > 0 && goal.improvement < 1)) {
      const YAML::Node node = section->raw("improvement");
      section->fail("improvement", "must be between 0 and 1 (0.8 = 5x faster than the all-baseline forward)",
                    &node);
    }
  }
  goal.max_iterations = positive_int(top, "max_iterations", goal.max_iterations);
  if (auto per_kernel = top.maybe_child("per_kernel")) {
    goal.kernel_iterations = positive_int(*per_kernel, "iterations", goal.kernel_iterations);
    goal.kernel_evaluations = positive_int(*per_kernel, "evaluations", goal.kernel_evaluations);
    per_kernel->finish({"iterations", "evaluations"});
  }
  if (auto budget = top.maybe_child("budget")) {
    goal.budget_evaluations = positive_int(*budget, "evaluations", goal.budget_evaluations);
    goal.budget_wall_time_s = budget->optional_seconds("wall_time_s", goal.budget_wall_time_s);
    budget->finish({"evaluations", "wall_time_s"});
  }
  if (auto search = top.maybe_child("search")) {
    read_search_strategy(*search, goal.strategy, goal.strategy_options);
    goal.batch_size = search->optional<int>("batch_size", 0);
    if (goal.batch_size < 0) {
      const YAML::Node node = search->raw("batch_size");
      search->fail("batch_size", "must be at least 1 (0: the number of parallel workers)", &node);
    }
    goal.transfer = search->optional<bool>("transfer", false);
    search->finish({"strategy", "options", "batch_size", "transfer"});
  }
  goal.parallel = static_cast<int>(top.optional_count("parallel", goal.parallel, 1, kMaxParallel));
  goal.seed = top.optional<std::uint64_t>("seed", 0);
  goal.verify = top.optional<bool>("verify", true);
  top.finish({"name", "model", "target", "objective", "goal", "max_iterations", "per_kernel", "budget",
              "search", "parallel", "seed", "verify"});
  return goal;
}

namespace {

Json operator_rows(const ModelRunSummary& s) {
  Json rows = Json::array();
  const model::ForwardTiming& now = s.tuned.operators.empty() ? s.baseline : s.tuned;
  for (std::size_t i = 0; i < now.operators.size() && i < s.baseline.operators.size(); ++i) {
    const auto& before = s.baseline.operators[i];
    const auto& t = now.operators[i];
    Json row = {{"operator", t.op.name},
                {"family", t.op.family},
                {"kernel", group_key(t)},
                {"shape", kernels::shape_text(t.op.shape, kernels::family_registry().get(t.op.family))},
                {"calls", t.op.calls},
                {"baseline_latency_s", before.latency_s},
                {"latency_s", t.latency_s},
                {"speedup", t.latency_s > 0 ? before.latency_s / t.latency_s : 0},
                {"share_percent", t.share_percent},
                {"configuration", configuration_text(t.config)},
                {"source", t.config.source},
                {"run", t.config.run ? Json(*t.config.run) : Json()},
                {"evaluations", 0}};
    if (t.config.run)
      if (const auto it = s.kernel_run_evaluations.find(*t.config.run); it != s.kernel_run_evaluations.end())
        row["evaluations"] = it->second;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

Json ModelRunSummary::to_json() const {
  Json out = {{"run_id", run_id},
              {"status", status},
              {"goal_met", goal_met},
              {"stop_reason", stop_reason},
              {"baseline_latency_s", baseline_latency_s},
              {"best_latency_s", best_latency_s},
              {"improvement", improvement},
              {"speedup", best_latency_s > 0 ? baseline_latency_s / best_latency_s : 0},
              {"baseline_mfu_percent", baseline.mfu_percent},
              {"best_mfu_percent", tuned.mfu_percent},
              {"roofline_sum_s", tuned.roofline_s},
              {"iterations", iterations},
              {"evaluations", evaluations},
              {"wall_time_s", wall_time_s},
              {"kernel_runs", kernel_runs},
              {"operators", operator_rows(*this)}};
  Json per_run = Json::object();
  for (const auto& [run, count] : kernel_run_evaluations) per_run[std::to_string(run)] = count;
  out["kernel_run_evaluations"] = per_run;
  if (check)
    out["end_to_end"] = {{"seq", check->seq},
                         {"mse", check->mse},
                         {"cosine_similarity", check->cosine_similarity},
                         {"passed", check->passed},
                         {"error", check->error}};
  return out;
}

ModelRunSummary run_model_goal(const ModelGoal& goal, store::Store& store, const ProgressSink& progress,
                               const RunningSink& running) {
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  const sim::TargetSpec target = sim::load_target(goal.target);
  ModelRunSummary summary;

  store::Run record;
  record.goal_name = goal.name;
  record.goal_yaml = read_text(goal.file);
  record.kernel = "model:" + goal.model.name;
  record.target = goal.target + " (simulated)";
  record.seed = goal.seed;
  record.simulator_version = std::string(sim::kSimulatorVersion);
  summary.run_id = store.create_run(record);
  record.id = summary.run_id;
  if (running) running(summary.run_id, true);
  DecisionLog log(store, summary.run_id);
  // `in_loop`: the evaluations of the kernel loop in progress, not yet in summary.evaluations.
  auto report = [&](int iteration, const std::string& phase, double best, int in_loop = 0) {
    if (!progress) return;
    Progress p;
    p.run_id = summary.run_id;
    p.iteration = iteration;
    p.max_iterations = goal.max_iterations;
    p.evaluations = summary.evaluations + in_loop;
    p.budget = goal.budget_evaluations;
    p.best_latency_s = best;
    if (summary.baseline_latency_s > 0) p.improvement = 1.0 - best / summary.baseline_latency_s;
    p.phase = phase;
    progress(p);
  };
  // The run's record as it stands, so that `runs`, `report` and the dashboard
  // show the kernel runs and the forward while the run goes on.
  auto save = [&](const model::ForwardTiming& current) {
    summary.tuned = current;
    summary.best_latency_s = current.latency_s;
    if (summary.baseline_latency_s > 0)
      summary.improvement = 1.0 - current.latency_s / summary.baseline_latency_s;
    record.summary = summary.to_json();
    store.update_run(record);
  };

  try {
    // The all-baseline forward: what the goal's improvement is measured against.
    model::ForwardOptions baseline_options;
    baseline_options.baseline = true;
    baseline_options.jobs = goal.parallel;
    summary.baseline = model::time_forward(goal.model, target, nullptr, baseline_options);
    if (!summary.baseline.all_ok) {
      // What tracing at load cannot see: a baseline that runs and computes a wrong answer, say.
      std::vector<std::string> failed;
      for (const auto& t : summary.baseline.operators)
        if (t.status != Outcome::ok)
          failed.push_back(t.op.name + " (" + group_key(t) + "): " + std::string(to_string(t.status)) + ": " +
                           model::without_source_location(t.error));
      throw UserError("model goal " + goal.name +
                      ": the forward is measured against every operator's baseline, and on " + goal.target +
                      " these do not run: " + join(failed, "; "));
    }
    summary.baseline_latency_s = summary.baseline.latency_s;
    {
      skills::SkillDecision d;
      d.action = "baseline";
      d.evidence = forward_evidence(summary.baseline);
      d.rationale =
          "every operator at its family's baseline: the forward the goal's improvement is measured against";
      log.append(0, "model_orchestrator", d);
    }
    model::ForwardTiming current = summary.baseline;
    save(current);
    report(0, "baseline", current.latency_s);

    std::set<std::string> settled;  // kernels whose last loop found nothing better
    std::string stop = "max_iterations (" + std::to_string(goal.max_iterations) + ") reached";
    for (int iteration = 1; iteration <= goal.max_iterations; ++iteration) {
      const double improvement = 1.0 - current.latency_s / summary.baseline_latency_s;
      if (improvement >= goal.improvement) {
        stop = "goal met: forward " +
               std::to_string(summary.baseline_latency_s / current.latency_s).substr(0, 5) + "x faster";
        summary.goal_met = true;
        break;
      }
      const int remaining = goal.budget_evaluations - summary.evaluations;
      if (remaining <= 0) {
        stop = "evaluation budget (" + std::to_string(goal.budget_evaluations) + ") spent";
        break;
      }
      if (elapsed() >= goal.budget_wall_time_s) {
        stop = "wall-time budget reached";
        break;
      }
      std::vector<KernelGroup> groups;
      Json candidates = Json::array();
      const KernelGroup* chosen = choose_kernel(current, settled, groups, candidates);
      if (!chosen) {
        stop = "every kernel is settled or at its roofline bound";
        break;
      }
      const auto& lead = current.operators[chosen->members.front()];
      const int slice = std::min(remaining, goal.kernel_evaluations);
      skills::SkillDecision choice;
      choice.action = "choose:" + lead.op.name;
      choice.evidence = {{"forward_latency_s", current.latency_s},
                         {"improvement", improvement},
                         {"candidates", candidates},
                         {"budget_slice", slice}};
      // The headroom is the share of the kernel's time above its bound (1 - bound / latency), not how far
      // above the bound it is: the words say both.
      char over_bound[32];
      std::snprintf(over_bound, sizeof over_bound, "%.1fx", lead.latency_s / lead.roofline_s);
      const std::string headroom = std::to_string(int(std::round(chosen->headroom * 100))) + "% of its time";
      choice.rationale = chosen->key + " (" + operator_names(current, *chosen) + ") is " +
                         std::to_string(int(std::round(chosen->share * 100))) + "% of the forward and " +
                         (lead.roofline_s > 0 ? "takes " + std::string(over_bound) + " its roofline bound (" +
                                                    headroom + " is above the bound)"
                                              : "has no roofline bound (" + headroom + " is headroom)") +
                         ": tuning it can remove up to " +
                         std::to_string(int(std::round(chosen->worth * 100))) +
                         "% of the forward, the most of any kernel";
      const int64_t choice_seq = log.append(iteration, "model_orchestrator", choice);
      report(iteration, "tune " + lead.op.name, current.latency_s);

      // The kernel's loop, from the operator's current configuration.
      Goal kernel_goal = kernel_goal_for(goal, lead, slice, iteration, elapsed());
      RunSetup setup = prepare_run(kernel_goal);
      RunOptions run_options;
      run_options.started = [&](int64_t id) {
        if (running) running(id, true);
      };
      auto add_kernel_run = [&](int64_t id) {
        if (id == 0 || summary.kernel_run_evaluations.count(id)) return false;
        summary.kernel_runs.push_back(id);
        summary.kernel_run_evaluations[id] = 0;
        return true;
      };
      run_options.progress = [&](const Progress& p) {
        if (add_kernel_run(p.run_id)) save(current);  // the kernel run exists: the model run lists it
        report(iteration, "tune " + lead.op.name + ": " + p.phase, current.latency_s, p.evaluations);
      };
      RunContext context{kernel_goal, setup.catalog,           *setup.target,
                         store,       setup.simulator_version, run_options};
      const RunSummary kernel_run = Orchestrator(context).run();
      if (running) running(kernel_run.run_id, false);
      add_kernel_run(kernel_run.run_id);
      summary.kernel_run_evaluations[kernel_run.run_id] = kernel_run.evaluations;
      summary.evaluations += kernel_run.evaluations;
      summary.iterations = iteration;

      const std::string outcome = adopt_kernel_run(kernel_run, *chosen, lead, current, settled);
      log.set_outcome(choice_seq, outcome);
      save(current);
      report(iteration, "tuned " + lead.op.name, current.latency_s);
      if (iteration == goal.max_iterations &&
          1.0 - current.latency_s / summary.baseline_latency_s >= goal.improvement)
        summary.goal_met = true, stop = "goal met";
    }

    finish_forward(goal, target, current, stop, summary, log);
    summary.stop_reason = stop;
    summary.status = "completed";
  } catch (const UserError& e) {
    record.status = store::RunStatus::failed;
    record.stop_reason = e.what();
    store.update_run(record);
    throw;
  }
  summary.wall_time_s = elapsed();
  record.status = store::RunStatus::completed;
  record.goal_met = summary.goal_met;
  record.stop_reason = summary.stop_reason;
  record.summary = summary.to_json();
  store.update_run(record);
  return summary;
}

}  // namespace autotune::orchestrator
