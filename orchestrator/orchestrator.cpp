#include "orchestrator/orchestrator.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/noise.hpp"
#include "core/text.hpp"
#include "orchestrator/distributed.hpp"
#include "orchestrator/llm/llm_policy.hpp"
#include "orchestrator/run_lease.hpp"
#include "skills/kernel_generator.hpp"
#include "skills/param_explorer.hpp"
#include "skills/profile_analyzer.hpp"
#include "skills/screen.hpp"

namespace autotune::orchestrator {

namespace {

using Clock = std::chrono::steady_clock;

// The text's first line, cut to at most `limit` bytes on a character
// boundary: an example in a one-line warning (a compiler's message runs on).
std::string first_line_within(const std::string& text, std::size_t limit) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() <= limit) return line;
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return line.substr(0, cut) + "...";
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double elapsed_ms(Clock::time_point start) { return seconds_since(start) * 1000; }

std::string percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", fraction * 100);
  return buffer;
}

// Without the placeholder parameter "_" of variants that have none.
Json candidate_json(const skills::Candidate& c) {
  Json params = c.params;
  if (params.is_object()) params.erase("_");
  return {{"variant", c.variant}, {"params", params}};
}

// Plugin calls that are not a skill's own decision (an `after` plugin's
// answer, any plugin failure), logged right after that skill's decision.
void log_plugin_calls(DecisionLog& log, int iteration, skills::PluginCallRecords* records) {
  if (!records) return;
  for (auto& record : records->take()) log.append(iteration, record.skill, record.decision);
}

}  // namespace

std::optional<double> objective_value(Objective objective, const Json& metrics) {
  const ObjectiveMetric metric = objective_metric(to_string(objective));
  if (!metrics.is_object() || !metrics.contains(metric.key) || !metrics.at(metric.key).is_number())
    return std::nullopt;
  const double value = metrics.at(metric.key).get<double>();
  if (!std::isfinite(value)) return std::nullopt;
  return metric.maximised ? -value : value;
}

double improvement_of(Objective objective, double baseline, double best) {
  if (baseline == 0 || best == 0) return 0;
  switch (objective) {
    case Objective::latency:
      return 1.0 - best / baseline;  // fraction of latency removed
    case Objective::throughput:
      return baseline / best - 1.0;  // throughput gained
    case Objective::mfu:
      return best / baseline - 1.0;  // MFU gained (values are -MFU)
  }
  return 0;
}

bool meets_goal(const Goal& goal, double baseline, double value, const Json& metrics) {
  bool met = true;
  if (goal.improvement)
    met = met && improvement_of(goal.objective, baseline, value) >= *goal.improvement - 1e-12;
  if (goal.absolute) {
    if (goal.objective == Objective::latency)
      met = met && metrics.value("latency_s", INFINITY) <= *goal.absolute;
    if (goal.objective == Objective::throughput)
      met = met && metrics.value("throughput_flops_per_s", 0.0) >= *goal.absolute;
    if (goal.objective == Objective::mfu) met = met && metrics.value("mfu_percent", 0.0) >= *goal.absolute;
  }
  return met;
}

Json RunSummary::to_json() const {
  Json out = {{"run_id", run_id},
              {"status", status},
              {"goal_met", goal_met},
              {"stop_reason", stop_reason},
              {"objective", objective},
              {"kernel", kernel},
              {"baseline", candidate_json(baseline)},
              {"best", candidate_json(best)},
              {"improvement", improvement},
              {"iterations", iterations},
              {"evaluations", evaluations},
              {"cache_hits", cache_hits},
              {"resumed_trials", resumed_trials},
              {"measured", measured},
              {"wall_time_s", wall_time_s},
              {"db", db},
              {"warnings", warnings}};
  out["baseline"]["metrics"] = baseline_metrics;
  out["best"]["metrics"] = best_metrics;
  if (screen_simulations) out["screen_simulations"] = *screen_simulations;
  if (baseline_trial) out["baseline"]["trial"] = *baseline_trial;
  if (best_trial) out["best"]["trial"] = *best_trial;
  // The headline figures next to the metrics, where the target reports them.
  for (const auto& [side, metrics] :
       {std::pair{"baseline", &baseline_metrics}, std::pair{"best", &best_metrics}})
    for (const char* key : {"latency_s", "mfu_percent", "throughput_flops_per_s"})
      if (metrics->is_object() && metrics->contains(key) && metrics->at(key).is_number())
        out[side][key] = metrics->at(key);
  if (best_metrics.is_object() && baseline_metrics.is_object() && best_metrics.contains("latency_s") &&
      baseline_metrics.contains("latency_s") && best_metrics["latency_s"].get<double>() > 0)
    out["speedup"] = baseline_metrics["latency_s"].get<double>() / best_metrics["latency_s"].get<double>();
  return out;
}

Orchestrator::Orchestrator(RunContext context, SkillSet skills)
    : context_(std::move(context)), skills_(std::move(skills)) {
  if (!skills_.analyzer) skills_.analyzer = std::make_unique<skills::ProfileAnalyzer>();
  if (!skills_.generator) skills_.generator = std::make_unique<skills::KernelGenerator>();
  if (!skills_.explorer) skills_.explorer = std::make_unique<skills::ParamExplorer>();
  if (!skills_.policy) skills_.policy = llm::make_policy(context_.goal, context_.catalog, context_.store);
  if (!context_.goal.plugins.empty()) {
    const Json goal = {
        {"name", context_.goal.name},
        {"kernel", context_.catalog.kernel},
        {"target", context_.target.description()},
        {"objective", to_string(context_.goal.objective)},
        {"improvement", context_.goal.improvement ? Json(*context_.goal.improvement) : Json(nullptr)}};
    skills_.plugin_calls = skills::install_plugins(context_.goal.plugins, goal, skills_.analyzer,
                                                   skills_.generator, skills_.explorer)
                               .records;
  }
}

namespace {

// Ideas in a row that settled without measuring anything: each hands its
// iteration to the next idea, up to this many, so a skill that keeps
// proposing spent regions under new ids cannot hold the loop in place.
constexpr int kMaxUnspentIdeasInARow = 8;

// What the phases of one run share: the run record (OpenedRun) and what the
// loop has learnt so far.
struct LoopState : OpenedRun {
  std::optional<store::Trial> baseline_trial, best_trial;
  double baseline_value = 0, best_value = 0;
  std::map<std::string, std::vector<search::Observation>> observations;  // per variant, for warm starts
  // Per variant, its measurements in earlier runs of the kernel (goal's search.transfer).
  std::map<std::string, std::vector<skills::ExplorationRequest::RelatedRun>> related;
  std::set<std::string> measured_variants;
  std::set<std::string> measured_keys;  // Candidate::key() of every candidate sent to the target
  std::set<std::string> tried_ideas;
  Progress progress;
  int failed_in_a_row = 0;   // ideas that did not improve the best
  int unspent_in_a_row = 0;  // ideas that settled without measuring
  std::vector<std::string> warnings;
  std::mutex warnings_mutex;  // plugins and workers warn from their threads
};

// How an iteration ended: the next one follows, or this one is handed to
// the next idea (nothing was measured), or the loop stops.
enum class IterationEnd { spent, kept, stop };

// The analysis, the ideas and the policy's choice of one iteration.
struct IterationPlan {
  skills::SkillResult<skills::Analysis> analysis;
  skills::GenerationRequest generation_request;
  skills::SkillResult<skills::Generation> generation;
  PolicyState policy_state;
  skills::SkillResult<PolicyChoice> choice;
  int64_t policy_seq = 0;

  // The idea the policy picked: one of the generator's, or its own.
  const skills::Idea& chosen() const {
    return choice.result.new_idea ? *choice.result.new_idea : policy_state.ideas.at(choice.result.idea);
  }
};

// One run of the loop, phase by phase: open or resume, baseline, iterate
// (analyse, generate, choose, explore, verdict), finish.
class RunLoop {
 public:
  RunLoop(RunContext& context, SkillSet& skills)
      : context_(context),
        skills_(skills),
        goal_(context.goal),
        catalog_(context.catalog),
        store_(context.store),
        options_(context.options) {}

  RunSummary run() {
    open_or_resume();
    try {
      if (auto failure = measure_baseline()) return finish(store::RunStatus::failed, *failure);
      for (int iteration = 1;;) {
        if (auto reason = stop_before(iteration)) return finish(store::RunStatus::completed, *reason);
        state_.progress.iteration = iteration;
        std::string stop_reason;
        const IterationEnd end = iterate(iteration, stop_reason);
        if (end == IterationEnd::stop) return finish(store::RunStatus::completed, stop_reason);
        if (end == IterationEnd::spent) ++iteration;
      }
    } catch (const LeaseLost&) {
      throw;  // the run is another process's now: not a word more to it
    } catch (const UserError& e) {
      if (log_ && log_->replaying()) {
        // A resume that parted from the stored decisions (a plugin that now
        // answers otherwise): the run is left as it was before this attempt,
        // not finished with a decision the stored log would refuse too.
        state_.record.status = status_before_resume_;
        store_.update_run(state_.record);
        throw;
      }
      finish(store::RunStatus::failed, std::string("error: ") + e.what());
      throw;
    }
  }

 private:
  // --- open or resume: the run record, its lease, its log and its runner ---
  void open_or_resume() {
    const std::string goal_yaml = to_yaml(goal_);
    store::Run& record = state_.record;
    if (options_.resume) {
      const std::string flag = "--resume " + std::to_string(*options_.resume);
      auto existing = store_.run(*options_.resume);
      if (!existing) throw UserError(flag + ": no such run in " + store_.location());
      if (existing->goal_name.ends_with(" (sweep)"))
        throw UserError(flag + ": run " + std::to_string(existing->id) + " is a sweep ('" +
                        existing->goal_name + "'); resume it with autotune sweep GOAL --resume " +
                        std::to_string(existing->id));
      if (existing->goal_yaml != store::redact_url_credentials(goal_yaml))  // stored redacted
        throw UserError(flag + ": the run was started from a different goal (" + existing->goal_name +
                        "); resume it with the same goal file");
      if (options_.seed && *options_.seed != existing->seed)
        throw UserError(flag + ": the run's seed is " + std::to_string(existing->seed) + ", not " +
                        std::to_string(*options_.seed));
      // A run is a function of its goal, seed and simulator: trials of this build would join
      // trials of another, and the replay of its decisions would compare figures of both.
      if (existing->simulator_version != context_.simulator_version)
        throw UserError(flag + ": the run was measured with " + existing->simulator_version +
                        ", this build is " + context_.simulator_version +
                        "; start a new run (without --resume) to tune with this build");
      status_before_resume_ = existing->status;
      state_.reopen(store_, *existing);  // its lease first: the run is ours only then
      if (options_.started) options_.started(existing->id);
    } else {
      record.goal_yaml = goal_yaml;
      record.goal_name = goal_.name;
      record.kernel = catalog_.kernel;
      record.target = context_.target.description();
      record.seed = options_.seed.value_or(goal_.seed);
      record.simulator_version = context_.simulator_version;
      record.status = store::RunStatus::running;
      state_.open_new(store_, options_.started);
    }
    rng_ = Rng(record.seed);
    log_.emplace(store_, record.id, state_.already_logged);
    log_->on_failure([this](const std::string& line) { warn(line); });
    log_->set_write_guard([this] { state_.lease->check(); });
    skills::RunnerOptions runner_options;
    runner_options.jobs = options_.queue || options_.jobs > 0 ? options_.jobs : goal_.parallel;
    runner_options.timeout_s = goal_.timeout_s;
    runner_options.stop_at = started_ + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(goal_.budget_wall_time_s));
    runner_options.use_cache = options_.use_cache;
    runner_options.queue = options_.queue;
    runner_options.before_commit = [this] { state_.lease->check(); };
    if (options_.queue) store_.set_measurement_context(measurement_context(goal_, record.id));
    runner_.emplace(context_.target, store_, record.id, runner_options);
    runner_->resume(state_.committed);
    if (goal_.screen) {
      const ScreenChoice& choice = *goal_.screen;
      skills::ScreenConfig config;
      config.target = choice.target;
      config.family = choice.family;
      config.variant = choice.variant;
      config.shape = choice.shape;
      config.dtype = choice.dtype;
      config.correction = choice.correction;
      config.threads = unsigned(std::max(runner_options.jobs, 1));
      screen_.emplace(config);
    }

    if (goal_.transfer) load_related_runs();

    summary_.run_id = record.id;
    summary_.db = store_.location();
    summary_.objective = to_string(goal_.objective);
    state_.progress.run_id = record.id;
    state_.progress.max_iterations = goal_.max_iterations;
    state_.progress.budget = goal_.budget_evaluations;
  }

  // The measurements of earlier runs of the same kernel, per variant, read in
  // this goal's space and objective (those outside it are left out). Only
  // runs older than this one: a resumed run learns from what it started with.
  void load_related_runs() {
    for (const auto& run : store_.runs()) {
      if (run.id >= state_.record.id || run.kernel != catalog_.kernel) continue;
      std::map<std::string, std::vector<search::Observation>> by_variant;
      for (const auto& trial : store_.trials(run.id)) {
        const skills::VariantSpace* variant = catalog_.find(trial.variant);
        if (variant == nullptr) continue;
        search::Configuration configuration;
        try {
          configuration = search::configuration_from_json(*variant->space, trial.params);
        } catch (const UserError&) {
          continue;
        }
        const auto value =
            is_measured(trial.status) ? objective_value(goal_.objective, trial.metrics) : std::nullopt;
        by_variant[trial.variant].push_back(value ? search::Observation::success(configuration, *value)
                                                  : search::Observation::failed(configuration, trial.error));
      }
      for (auto& [variant, observations] : by_variant)
        state_.related[variant].push_back({run.id, std::move(observations)});
    }
  }

  // --- baseline: the goal's starting point; the failure when it fails ---
  std::optional<std::string> measure_baseline() {
    state_.progress.iteration = 0;
    report("baseline");
    const skills::Candidate& baseline = catalog_.baseline;
    skills::SkillDecision start;
    start.action = "baseline";
    start.inputs = candidate_json(baseline);
    start.evidence = {{"objective", to_string(goal_.objective)},
                      {"goal_improvement", goal_.improvement ? Json(*goal_.improvement) : Json(nullptr)},
                      {"budget_evaluations", goal_.budget_evaluations},
                      {"max_iterations", goal_.max_iterations},
                      {"seed", state_.record.seed}};
    start.rationale = "measure the goal's starting point (" + baseline.text() +
                      "): every improvement is measured against it";
    const std::string unusable = context_.target.unusable_reason();
    if (!unusable.empty()) {
      start.evidence["unusable"] = unusable;
      start.rationale += "; the target cannot measure anything (" + unusable +
                         "), so the baseline is recorded as a failed trial and the run stops";
    }
    const int64_t start_seq = log_->append(0, kOrchestrator, start);
    const auto measured = measure_trials({baseline}, 0, start_seq);
    const auto observed = observe_all(measured);
    if (!observed.front().ok()) {
      const std::string& failure = observed.front().failure;
      const std::string reason = failure.substr(0, failure.find('\n'));
      log_->set_outcome(start_seq, "failed: " + reason);
      if (!unusable.empty()) return "nothing to tune: " + unusable;
      if (measured.front().trial.status == Outcome::invalid)
        return "the baseline " + baseline.text() + " does not fit the target: " + reason + "; " +
               suggest_fitting_start();
      return "the baseline " + baseline.text() + " failed: " + reason;
    }
    state_.baseline_trial = state_.best_trial;
    state_.baseline_value = state_.best_value;
    log_->set_outcome(
        start_seq,
        "baseline " + std::to_string(state_.baseline_trial->metric("latency_s").value_or(0)) + " s");
    return std::nullopt;
  }

  // --- before each iteration: the goal, the iteration cap and the budgets ---
  std::optional<std::string> stop_before(int iteration) {
    if (goal_met()) return "goal met: " + what_was_met();
    if (iteration > goal_.max_iterations)
      return "max_iterations (" + std::to_string(goal_.max_iterations) + ") reached";
    if (runner_->counters().evaluations >= goal_.budget_evaluations)
      return "evaluation budget (" + std::to_string(goal_.budget_evaluations) + ") spent";
    if (seconds_since(started_) >= goal_.budget_wall_time_s)
      return "wall-time budget (" + std::to_string(int(goal_.budget_wall_time_s)) + " s) spent";
    return std::nullopt;
  }

  // Names what was asked: the improvement, the absolute bound, or both.
  std::string what_was_met() const {
    std::vector<std::string> met;
    if (goal_.improvement)
      met.push_back("improvement " + percent(current_improvement()) + " >= " + percent(*goal_.improvement));
    if (goal_.absolute) {
      const Json& m = state_.best_trial->metrics;
      char text[160];
      if (goal_.objective == Objective::latency)
        std::snprintf(text, sizeof text, "latency %.6g s <= %.6g s", m.value("latency_s", 0.0),
                      *goal_.absolute);
      else if (goal_.objective == Objective::throughput)
        std::snprintf(text, sizeof text, "throughput %.4g TFLOP/s >= %.4g TFLOP/s",
                      m.value("throughput_flops_per_s", 0.0) / 1e12, *goal_.absolute / 1e12);
      else
        std::snprintf(text, sizeof text, "MFU %.1f%% >= %.4g%%", m.value("mfu_percent", 0.0),
                      *goal_.absolute);
      met.push_back(text);
    }
    return join(met, ", ");
  }

  // --- iterate: analyse the best, generate ideas, choose one, explore it, judge it ---
  IterationEnd iterate(int iteration, std::string& stop_reason) {
    IterationPlan plan = plan_iteration(iteration);
    if (plan.choice.result.stop) {
      stop_reason = plan.choice.result.stop_reason;
      log_->set_outcome(plan.policy_seq, "stop");
      return IterationEnd::stop;
    }
    // With llm.kernel_sources, the LLM also writes a kernel source, measured as a trial of its own
    // (docs/llm.md); screened, only when the screen keeps it.
    std::optional<llm::SourceScreen> source_screen;
    std::filesystem::path screen_file;
    if (screen_) {
      source_screen.emplace();
      source_screen->target = [this, &screen_file] { return write_screen_target(screen_file); };
      source_screen->judge = [this](const skills::Measurement& simulated) { return judge_source(simulated); };
    }
    try {
      llm::propose_kernel_source(*skills_.policy, plan.policy_state, *state_.best_trial, *log_, store_,
                                 goal_.timeout_s, source_screen ? &*source_screen : nullptr);
    } catch (...) {
      remove_quietly(screen_file);
      throw;
    }
    remove_quietly(screen_file);
    return explore(iteration, plan.chosen(), plan);
  }

  static void remove_quietly(const std::filesystem::path& file) {
    std::error_code ignored;
    if (!file.empty()) std::filesystem::remove(file, ignored);
  }

  // The screen's target as corrected so far, in a file of its own that a
  // kernel-worker (sandboxed, another user) can read; `file` names it.
  std::string write_screen_target(std::filesystem::path& file) {
    std::string name =
        (std::filesystem::temp_directory_path() / "autotune-screen-target-XXXXXX.yaml").string();
    const int fd = ::mkstemps(name.data(), 5);
    if (fd < 0)
      throw UserError("cannot write the screen's target to the temporary folder: " +
                      std::string(std::strerror(errno)));
    ::fchmod(fd, 0644);
    ::close(fd);
    file = name;
    screen_->write_current_target(file);
    return name;
  }

  // An LLM's kernel source simulated on the screen's target (the screen
  // cannot trace it itself): predicted as a kernel of no variant measured
  // yet, and kept for the device, like a round's proposal, only when the
  // prediction is no worse than the bound.
  llm::SourceScreenVerdict judge_source(const skills::Measurement& simulated) {
    llm::SourceScreenVerdict out;
    const ScreenBound bound = screen_bound();
    out.evidence = {{"screen_target", goal_.screen->target},
                    {"bound", bound.to_json()},
                    {"correction", screen_->correction_json()}};
    const auto latency =
        simulated.metrics.is_object() ? simulated.metrics.find("latency_s") : simulated.metrics.end();
    if (simulated.status != Outcome::ok || latency == simulated.metrics.end() || !latency->is_number()) {
      out.measure = false;
      out.evidence["simulated_status"] = std::string(to_string(simulated.status));
      out.evidence["error"] = simulated.error.substr(0, 300);
      out.reason = "on the screen's target (" + goal_.screen->target + ") it measured " +
                   std::string(to_string(simulated.status)) +
                   (simulated.error.empty() ? std::string() : " (" + simulated.error.substr(0, 160) + ")") +
                   ": predicted to fail, as a candidate that does not fit the screen's machine";
      return out;
    }
    const double simulated_s = latency->get<double>();
    const double predicted_s = simulated_s * std::exp(screen_->overall_log_ratio());
    out.evidence["simulated_s"] = simulated_s;
    out.evidence["predicted_s"] = predicted_s;
    out.measure = predicted_s <= bound.bound_s;
    out.evidence["chosen"] = out.measure;
    if (!out.measure)
      out.reason = "the screen predicts it " + number_text(predicted_s * 1e3) +
                   " ms, slower than the best's " + number_text(*bound.best_predicted_s * 1e3) +
                   " ms by more than the screen's margin (" + percent_text(bound.margin) + ")";
    return out;
  }

  IterationPlan plan_iteration(int iteration) {
    IterationPlan plan;
    const store::Trial& best = *state_.best_trial;
    // Re-profile the best so far and analyse it.
    report("analyse");
    skills::AnalysisRequest analysis_request{
        {best.variant, best.params}, best.metrics, runner_->profile_of(best), context_.target.facts()};
    auto t0 = Clock::now();
    plan.analysis = skills_.analyzer->analyze(analysis_request);
    log_->append(iteration, skills_.analyzer->name(), plan.analysis.decision, elapsed_ms(t0));
    log_plugin_calls(*log_, iteration, skills_.plugin_calls.get());

    // Ideas from the findings.
    skills::GenerationRequest& generation_request = plan.generation_request;
    generation_request.catalog = &catalog_;
    generation_request.best = {best.variant, best.params};
    generation_request.best_metrics = best.metrics;
    generation_request.analysis = plan.analysis.result;
    generation_request.tried_ideas = state_.tried_ideas;
    generation_request.measured_variants = state_.measured_variants;
    for (const auto& [name, list] : state_.observations) {
      generation_request.measured_counts[name] = list.size();
      auto& values = generation_request.measured_values[name];
      for (const auto& observation : list)
        if (observation.ok())
          values.push_back(*observation.value);
        else
          generation_request.measured_failures[name].push_back(observation);
    }
    t0 = Clock::now();
    plan.generation = skills_.generator->generate(generation_request);
    log_->append(iteration, skills_.generator->name(), plan.generation.decision, elapsed_ms(t0));
    log_plugin_calls(*log_, iteration, skills_.plugin_calls.get());

    // The policy picks one idea (or stops).
    PolicyState& policy_state = plan.policy_state;
    policy_state.iteration = iteration;
    policy_state.max_iterations = goal_.max_iterations;
    policy_state.evaluations = int(runner_->counters().evaluations);
    policy_state.budget_evaluations = goal_.budget_evaluations;
    policy_state.wall_time_left_s = goal_.budget_wall_time_s - seconds_since(started_);
    policy_state.batch_size = goal_.effective_batch_size();
    policy_state.best = generation_request.best;
    policy_state.best_value = state_.best_value;
    policy_state.baseline_value = state_.baseline_value;
    policy_state.improvement = current_improvement();
    policy_state.analysis = plan.analysis.result;
    policy_state.ideas = plan.generation.result.ideas;
    if (screen_ && !policy_state.ideas.empty()) {
      screen_ideas(policy_state.ideas, iteration);
      if (policy_state.ideas.empty()) {
        // The screen, corrected by the device so far, predicts nothing worth a device evaluation.
        auto& choice = plan.choice;
        choice.result.stop = true;
        choice.result.stop_reason =
            "the screen predicts none of the ideas' candidates within its margin of the best";
        choice.decision.action = "stop";
        choice.decision.proposer = "simulator";
        choice.decision.inputs = {{"iteration", iteration},
                                  {"evaluations", runner_->counters().evaluations},
                                  {"ideas", plan.generation.result.ideas.size()}};
        choice.decision.rationale = choice.result.stop_reason +
                                    " (see the screen_ideas decision): no device evaluation is worth "
                                    "spending on them";
        plan.policy_seq = log_->append(iteration, kOrchestrator, choice.decision);
        return plan;
      }
    }
    policy_state.failed_ideas_in_a_row = state_.failed_in_a_row;
    policy_state.run = state_.record.id;
    policy_state.tried_ideas = state_.tried_ideas;
    policy_state.measured_counts = generation_request.measured_counts;
    plan.choice = skills_.policy->decide(policy_state);
    auto& choice = plan.choice;
    if (choice.decision.proposer.empty()) choice.decision.proposer = skills_.policy->name();
    if (!choice.result.stop) choice.decision.inputs["idea"] = plan.chosen().id;
    plan.policy_seq = log_->append(iteration, kOrchestrator, choice.decision);
    return plan;
  }

  // The explorer searches the idea's region with its share of the budget.
  IterationEnd explore(int iteration, const skills::Idea& idea, const IterationPlan& plan) {
    const skills::VariantSpace& variant = catalog_.variant(idea.variant);
    skills::ExplorationRequest request;
    request.variant = &variant;
    request.probes = idea.probes;
    // Screened: the candidates the screen ranked the idea by join its first round.
    if (auto picks = screen_picks_.find(idea.id); screen_ && picks != screen_picks_.end())
      for (const auto& pick : picks->second)
        if (std::find(request.probes.begin(), request.probes.end(), pick) == request.probes.end())
          request.probes.push_back(pick);
    if (idea.kind != "structural") {
      if (idea.region.empty()) {
        request.region = variant.space;
      } else if (auto region = variant.region(idea.region)) {
        request.region = std::make_shared<const search::SearchSpace>(std::move(*region));
      } else {
        state_.tried_ideas.insert(idea.id);
        log_->set_outcome(plan.policy_seq, "region infeasible under the constraints; next idea");
        return keep_iteration() ? IterationEnd::kept : IterationEnd::spent;  // nothing was measured
      }
    }
    if (!idea.variants.empty()) hand_over(idea, request);
    request.strategy_chosen = !idea.strategy.empty();
    request.strategy = request.strategy_chosen ? idea.strategy : goal_.strategy;
    request.strategy_options = request.strategy_chosen ? idea.strategy_options : goal_.strategy_options;
    request.seed = rng_.fork("param_explorer").fork(std::uint64_t(iteration)).seed();
    request.budget = plan.choice.result.budget;
    request.batch_size = goal_.effective_batch_size();
    if (!request.flat) {
      request.known = state_.observations[variant.name];
      if (auto related = state_.related.find(variant.name); related != state_.related.end())
        request.related = related->second;
    }
    request.carry_patience = !idea.continuation;
    if (screen_) {
      request.screening = skills::ExplorationRequest::Screening{
          goal_.screen->keep, goal_.screen->propose,
          [this, iteration](const std::vector<skills::Candidate>& proposals, std::size_t keep) {
            return screen_choice(proposals, keep, iteration);
          }};
    }

    const auto t0 = Clock::now();
    auto explorer_plan = skills_.explorer->plan(request);
    const int64_t plan_seq =
        log_->append(iteration, skills_.explorer->name(), explorer_plan.decision, elapsed_ms(t0));
    log_plugin_calls(*log_, iteration, skills_.plugin_calls.get());
    // Every variant the idea measures: a structural probe may cover several.
    std::vector<std::string> names{variant.name};
    for (const auto& probe : idea.probes)
      if (std::find(names.begin(), names.end(), probe.variant) == names.end()) names.push_back(probe.variant);
    if (!idea.variants.empty()) names = idea.variants;
    report("search " + idea.kind + " " + join(names, ", "));

    const double before = state_.best_value;
    const auto before_key = state_.best_trial->config_hash;
    const auto exploration = skills_.explorer->explore(
        request, explorer_plan.result,
        [&](const std::vector<skills::Candidate>& batch) { return measure(batch, iteration, plan_seq); },
        [&] {
          return goal_met() || seconds_since(started_) >= goal_.budget_wall_time_s ||
                 runner_->counters().evaluations >= goal_.budget_evaluations;
        });
    // An idea is done with once its region settled (exhausted, or no
    // better value for the explorer's patience); one cut short by its
    // budget share may be continued by a later iteration.
    if (exploration.settled) state_.tried_ideas.insert(idea.id);
    const bool improved = state_.best_value < before && state_.best_trial->config_hash != before_key;
    const std::string result =
        std::to_string(exploration.evaluations) + " evaluations (" + exploration.stop_reason +
        (exploration.settled ? ", settled" : ", may continue") + "); " + predicted_text(exploration) +
        (improved ? "improved the best to " +
                        skills::Candidate{state_.best_trial->variant, state_.best_trial->params}.text()
                  : std::string("no improvement"));
    log_->set_outcome(plan_seq, result);
    log_->set_outcome(plan.policy_seq, improved ? "improved" : "no improvement");
    return verdict(iteration, idea, exploration, before, improved);
  }

  // The configurations the explorer did not measure, predicted to fail like
  // a measured one: how many, and the first with the one it follows from.
  static std::string predicted_text(const skills::Exploration& exploration) {
    const Json& list = exploration.predicted_failures;
    if (list.empty()) return "";
    const Json& first = list.front();
    return std::to_string(list.size()) + " not measured, predicted " + first.value("rule", "") +
           ": each holds at least what a measured overflow held (e.g. " + first["params"].dump() +
           " against " + first.value("like", "") + "); ";
  }

  // The handover's request: its variants as one flat space, everything
  // measured of them (and, with search.transfer, their earlier runs' measurements)
  // in that space.
  void hand_over(const skills::Idea& idea, skills::ExplorationRequest& request) {
    auto flat = std::make_shared<const skills::FlatSpace>(skills::flatten(catalog_, idea.variants));
    request.region = flat->space;
    std::map<int64_t, std::vector<search::Observation>> related;
    for (const auto& name : flat->variants) {
      for (const auto& observation : state_.observations[name])
        if (auto configuration = flat->configuration(name, observation.configuration)) {
          search::Observation o = observation;
          o.configuration = std::move(*configuration);
          request.known.push_back(std::move(o));
        }
      if (auto runs = state_.related.find(name); runs != state_.related.end())
        for (const auto& run : runs->second)
          for (const auto& observation : run.observations)
            if (auto configuration = flat->configuration(name, observation.configuration)) {
              search::Observation o = observation;
              o.configuration = std::move(*configuration);
              related[run.run].push_back(std::move(o));
            }
    }
    for (auto& [run, observations] : related) request.related.push_back({run, std::move(observations)});
    request.flat = std::move(flat);
  }

  // --- verdict: accept the idea's best or roll back to the best so far ---
  IterationEnd verdict(int iteration, const skills::Idea& idea, const skills::Exploration& exploration,
                       double before, bool improved) {
    skills::SkillDecision verdict;
    verdict.action = improved ? kAccept : kRollback;
    verdict.inputs = {{"idea", idea.id}};
    verdict.evidence = {{"best_before", before},
                        {"best_after", state_.best_value},
                        {"improvement", current_improvement()},
                        {"evaluations", runner_->counters().evaluations}};
    if (const Json best = figures(*state_.best_trial); best.contains("interval"))
      verdict.evidence["best_interval"] = best["interval"];
    // An idea that settled without measuring anything (its region's history
    // already shows it stopped paying) did not use the iteration: the next
    // idea gets it (the idea is now tried; kMaxUnspentIdeasInARow bounds it).
    const bool unspent = exploration.evaluations == 0 && exploration.settled &&
                         state_.unspent_in_a_row < kMaxUnspentIdeasInARow;
    verdict.rationale = improved ? "the idea improved the best; analyse the new best next"
                        : unspent
                            ? "the idea settled without a measurement (" + exploration.stop_reason +
                                  "): the iteration goes to the next idea"
                            : "the idea did not improve the best: keep the best so far and try a different "
                              "idea (variant or region) next";
    log_->append(iteration, kOrchestrator, verdict);
    state_.failed_in_a_row = improved ? 0 : state_.failed_in_a_row + 1;
    if (unspent) return keep_iteration() ? IterationEnd::kept : IterationEnd::spent;
    if (exploration.evaluations > 0) state_.unspent_in_a_row = 0;
    return IterationEnd::spent;
  }

  // Whether the iteration goes to the next idea (at most kMaxUnspentIdeasInARow in a row).
  bool keep_iteration() {
    if (state_.unspent_in_a_row >= kMaxUnspentIdeasInARow) return false;
    ++state_.unspent_in_a_row;
    return true;
  }

  // --- finish: the summary, the last decision and the run record ---
  RunSummary finish(store::RunStatus status, const std::string& reason) {
    RunSummary& summary = summary_;
    summary.status = std::string(to_string(status));
    summary.stop_reason = reason;
    summary.kernel_text = kernel_text(goal_);
    summary.kernel = kernel_json(goal_);
    summary.goal_met = goal_met();
    summary.iterations = state_.progress.iteration;
    const auto& counters = runner_->counters();
    summary.evaluations = int(counters.evaluations);
    summary.cache_hits = int(counters.cache_hits);
    summary.resumed_trials = int(counters.resumed);
    summary.measured = int(counters.measured);
    summary.target_seconds = counters.target_seconds;
    summary.commit_seconds = counters.commit_seconds;
    if (screen_) summary.screen_simulations = screen_->simulations();
    warn_about_failed_candidates();
    {
      std::lock_guard lock(state_.warnings_mutex);
      summary.warnings = state_.warnings;
    }
    if (state_.baseline_trial) {
      summary.baseline = {state_.baseline_trial->variant, state_.baseline_trial->params};
      summary.baseline_metrics = state_.baseline_trial->metrics;
      summary.baseline_trial = state_.baseline_trial->id;
    }
    if (state_.best_trial) {
      summary.best = {state_.best_trial->variant, state_.best_trial->params};
      summary.best_metrics = state_.best_trial->metrics;
      summary.best_trial = state_.best_trial->id;
      summary.improvement = current_improvement();
    }
    summary.wall_time_s = seconds_since(started_);
    skills::SkillDecision stop;
    stop.action = status == store::RunStatus::completed ? "finish" : "fail";
    stop.inputs = {{"iterations", summary.iterations}, {"evaluations", summary.evaluations}};
    stop.evidence = {{"improvement", summary.improvement},
                     {"goal_met", summary.goal_met},
                     {"cache_hits", summary.cache_hits},
                     {"resumed_trials", summary.resumed_trials}};
    stop.rationale = reason;
    stop.outcome = summary.goal_met ? "goal met" : "goal not met";
    log_->append(state_.progress.iteration, kOrchestrator, stop);
    store::Run& record = state_.record;
    record.status = status;
    record.stop_reason = reason;
    record.goal_met = summary.goal_met;
    record.baseline_trial = summary.baseline_trial;
    record.best_trial = summary.best_trial;
    record.summary = summary.to_json();
    store_.update_run(record);
    return summary;
  }

  // Candidates the target could not measure: the run went on, but say so.
  void warn_about_failed_candidates() {
    const int64_t run = state_.record.id;
    const auto counts = store_.trial_counts(run);
    if (counts.failed + counts.timeout == 0) return;
    std::string example;
    for (const auto& trial : store_.trials(run))
      if (trial.status == Outcome::failed || trial.status == Outcome::timeout) {
        example = "trial " + std::to_string(trial.id) + ": " + first_line_within(trial.error, 160);
        break;
      }
    auto count = [](std::int64_t n, const std::string& what) {
      return std::to_string(n) + (n == 1 ? " candidate " : " candidates ") + what;
    };
    const std::string what = counts.timeout == 0  ? count(counts.failed, "failed")
                             : counts.failed == 0 ? count(counts.timeout, "timed out")
                                                  : count(counts.failed, "failed and ") +
                                                        std::to_string(counts.timeout) + " timed out";
    warn(what + " on the target (" + example + "); see `autotune trials " + std::to_string(run) + "`");
  }

  // --- shared by the phases ---

  // Measures a batch through the runner and logs its decision; the best so
  // far and the warm-start observations follow what was measured.
  std::vector<search::Observation> measure(const std::vector<skills::Candidate>& candidates, int iteration,
                                           int64_t decision_seq) {
    return observe_all(measure_trials(candidates, iteration, decision_seq));
  }
  // The same in two steps, for a caller that wants the trials too.
  std::vector<skills::MeasuredTrial> measure_trials(const std::vector<skills::Candidate>& candidates,
                                                    int iteration, int64_t decision_seq) {
    std::vector<skills::TrialRequest> requests;
    for (const auto& c : candidates) {
      requests.push_back({c, iteration, decision_seq});
      state_.measured_keys.insert(c.key());
    }
    const auto started_batch = Clock::now();
    auto batch =
        runner_->measure(requests, [&](const skills::MeasuredTrial&) { report(state_.progress.phase); });
    log_->append(iteration, skills::kBenchmarkRunner, batch.decision, elapsed_ms(started_batch));
    if (screen_) screen_feedback(batch.result, iteration);
    return std::move(batch.result);
  }

  // --- the simulated screen (goal.screen; docs/loop.md "Screened tuning") ---

  // What the screen predicts of the best so far, and the bound beyond which
  // a prediction is not worth a device evaluation: the best's prediction
  // times exp(the screen's margin). Infinite before the screen can judge.
  struct ScreenBound {
    std::optional<double> best_predicted_s;
    double margin = INFINITY;
    double bound_s = INFINITY;
    Json to_json() const {
      Json out = Json::object();
      if (best_predicted_s) out["best_predicted_s"] = *best_predicted_s;
      if (std::isfinite(margin)) out["margin"] = margin;
      if (std::isfinite(bound_s)) out["bound_s"] = bound_s;
      return out;
    }
  };
  ScreenBound screen_bound() {
    ScreenBound out;
    out.margin = screen_->margin();
    if (!state_.best_trial) return out;
    const auto best = screen_->predict({{state_.best_trial->variant, state_.best_trial->params}}).front();
    if (!best.valid) return out;
    out.best_predicted_s = best.predicted_s;
    if (std::isfinite(out.margin)) out.bound_s = best.predicted_s * std::exp(out.margin);
    return out;
  }

  static std::string percent_text(double log_margin) { return percent(std::exp(log_margin) - 1); }

  // Ranks one round's proposals on the screen and logs the ranking; the
  // indices of the ones the device measures: the best `keep` predicted no
  // worse than the bound (none when every one is).
  std::vector<std::size_t> screen_choice(const std::vector<skills::Candidate>& proposals, std::size_t keep,
                                         int iteration) {
    const auto t0 = Clock::now();
    const long simulations_before = screen_->simulations();
    const auto predictions = screen_->predict(proposals);
    const ScreenBound bound = screen_bound();
    const auto chosen = skills::SimulatedScreen::choose_within(predictions, keep, bound.bound_s);
    std::vector<bool> is_chosen(proposals.size(), false);
    for (std::size_t i : chosen) is_chosen[i] = true;
    // The proposals ranked as the screen ranked them: the chosen first.
    std::vector<std::size_t> order = chosen;
    for (std::size_t i : skills::SimulatedScreen::choose(predictions, proposals.size()))
      if (!is_chosen[i]) order.push_back(i);
    auto entry = [&](std::size_t i) {
      Json e = candidate_json(proposals[i]);
      const auto& p = predictions[i];
      if (p.valid) {
        e["simulated_s"] = p.simulated_s;
        e["predicted_s"] = p.predicted_s;
      } else {
        e["invalid"] = p.error;
      }
      e["chosen"] = bool(is_chosen[i]);
      return e;
    };
    constexpr std::size_t kListed = 12;  // the log keeps the head of the ranking
    Json ranking = Json::array();
    Json alternatives = Json::array();
    for (std::size_t r = 0; r < order.size(); ++r) {
      if (r < kListed) ranking.push_back(entry(order[r]));
      if (!is_chosen[order[r]] && alternatives.size() < kListed) alternatives.push_back(entry(order[r]));
    }
    const auto invalid =
        std::count_if(predictions.begin(), predictions.end(), [](const auto& p) { return !p.valid; });
    const auto beyond = std::count_if(predictions.begin(), predictions.end(), [&](const auto& p) {
      return p.valid && p.predicted_s > bound.bound_s;
    });
    skills::SkillDecision decision;
    decision.action = "screen";
    decision.proposer = "simulator";
    decision.inputs = {
        {"proposals", proposals.size()}, {"keep", keep}, {"screen_target", goal_.screen->target}};
    decision.evidence = {{"ranking", ranking},
                         {"invalid_on_screen", invalid},
                         {"beyond_margin", beyond},
                         {"bound", bound.to_json()},
                         {"simulations", screen_->simulations() - simulations_before},
                         {"correction", screen_->correction_json()}};
    decision.alternatives = alternatives;
    decision.rationale = "the simulator (" + goal_.screen->target + ", correction " +
                         goal_.screen->correction + ") ranked " + std::to_string(proposals.size()) +
                         " proposals by predicted latency; the best " + std::to_string(keep) +
                         " go to the device, the others back to the strategy";
    if (std::isfinite(bound.bound_s))
      decision.rationale += "; not measured: " + std::to_string(beyond) +
                            " predicted slower than the best's " +
                            number_text(*bound.best_predicted_s * 1e3) +
                            " ms by more than the screen's margin (" + percent_text(bound.margin) + ")";
    if (invalid > 0) decision.rationale += ", " + std::to_string(invalid) + " predicted to fail";
    std::vector<std::string> names;
    for (std::size_t i : chosen) names.push_back(proposals[i].text());
    decision.outcome = chosen.empty() ? "none to the device: every proposal is predicted worse than the "
                                        "best beyond the margin, or to fail"
                                      : "to the device: " + join(names, "; ");
    log_->append(iteration, skills::kParamExplorer, decision, elapsed_ms(t0));
    return chosen;
  }

  // What the screen is shown of an idea: its probes and configurations of
  // its region not sent to the target yet (the whole region when `propose`
  // holds it, else `propose` of them drawn at random, the same draw for the
  // same idea, so an idea proposed again is served from the screen's cache).
  std::vector<skills::Candidate> idea_candidates(const skills::Idea& idea) {
    std::vector<skills::Candidate> out;
    auto fresh = [&](const skills::Candidate& c) { return !state_.measured_keys.count(c.key()); };
    for (const auto& probe : idea.probes)
      if (fresh(probe)) out.push_back(probe);
    std::shared_ptr<const search::SearchSpace> space;
    std::optional<skills::FlatSpace> flat;
    const skills::VariantSpace* variant = catalog_.find(idea.variant);
    if (!idea.variants.empty()) {
      flat = skills::flatten(catalog_, idea.variants);
      space = flat->space;
    } else if (idea.kind != "structural" && variant) {
      if (idea.region.empty())
        space = variant->space;
      else if (auto region = variant->region(idea.region))
        space = std::make_shared<const search::SearchSpace>(std::move(*region));
    }
    if (!space || space->size() == 0) return out;
    auto candidate = [&](std::uint64_t index) {
      const auto c = space->configuration_at(index);
      return flat ? flat->candidate(c) : skills::Candidate{variant->name, search::to_json(*space, c)};
    };
    const auto propose = std::uint64_t(goal_.screen->propose);
    if (space->size() <= propose) {
      for (std::uint64_t i = 0; i < space->size(); ++i)
        if (auto c = candidate(i); fresh(c)) out.push_back(std::move(c));
      return out;
    }
    Rng rng = rng_.fork("screen_ideas").fork(idea.id);
    std::set<std::uint64_t> drawn;
    for (std::uint64_t attempt = 0; drawn.size() < propose && attempt < 8 * propose; ++attempt) {
      const auto index = space->random_index(rng);
      if (!drawn.insert(index).second) continue;
      if (auto c = candidate(index); fresh(c)) out.push_back(std::move(c));
    }
    return out;
  }

  // Screened runs: the generator's ideas ranked by what the screen predicts
  // of their candidates (idea_candidates): by the best prediction, each
  // idea's expected gain the screen's; an idea whose candidates are all
  // predicted worse than the best beyond the margin, or to fail, or that has
  // nothing left to measure, is left out of this iteration. Ideas the screen
  // cannot simulate keep their place after the ranked ones.
  void screen_ideas(std::vector<skills::Idea>& ideas, int iteration) {
    const auto t0 = Clock::now();
    const long simulations_before = screen_->simulations();
    std::vector<skills::Candidate> pool;
    std::vector<std::pair<std::size_t, std::size_t>> spans;  // per idea: [first, last) in the pool
    for (const auto& idea : ideas) {
      const std::size_t first = pool.size();
      auto candidates = idea_candidates(idea);
      pool.insert(pool.end(), std::make_move_iterator(candidates.begin()),
                  std::make_move_iterator(candidates.end()));
      spans.push_back({first, pool.size()});
    }
    const auto predictions = screen_->predict(pool);
    const ScreenBound bound = screen_bound();
    struct Scored {
      std::size_t idea;
      std::optional<double> best_s;  // the best prediction among its candidates
      bool unjudged = false;         // some candidate the screen cannot simulate
    };
    std::vector<Scored> ranked, unjudged;
    screen_picks_.clear();
    Json evidence = Json::array();
    std::vector<std::string> left_out;
    for (std::size_t i = 0; i < ideas.size(); ++i) {
      Scored scored{i, std::nullopt, false};
      std::optional<std::size_t> best;
      std::size_t invalid = 0;
      for (std::size_t k = spans[i].first; k < spans[i].second; ++k) {
        const auto& p = predictions[k];
        if (!p.simulable) scored.unjudged = true;
        if (!p.valid) {
          ++invalid;
          continue;
        }
        if (!best || p.predicted_s < predictions[*best].predicted_s) best = k;
      }
      Json entry = {{"idea", ideas[i].id},
                    {"kind", ideas[i].kind},
                    {"candidates", spans[i].second - spans[i].first},
                    {"invalid_on_screen", invalid}};
      if (best) {
        scored.best_s = predictions[*best].predicted_s;
        entry["best"] = candidate_json(pool[*best]);
        entry["best_predicted_s"] = *scored.best_s;
        if (bound.best_predicted_s) entry["predicted_gain"] = 1 - *scored.best_s / *bound.best_predicted_s;
      }
      std::string outcome;
      if (scored.unjudged) {
        outcome = "kept: the screen cannot simulate some of its candidates";
        unjudged.push_back(scored);
      } else if (spans[i].first == spans[i].second) {
        outcome = "left out: no candidate left to measure";
      } else if (!best) {
        outcome = "left out: every candidate predicted to fail";
      } else if (*scored.best_s > bound.bound_s) {
        outcome = "left out: its best prediction is worse than the best's beyond the margin";
      } else {
        outcome = "ranked";
        ranked.push_back(scored);
        const std::vector<skills::ScreenPrediction> own(
            predictions.begin() + std::ptrdiff_t(spans[i].first),
            predictions.begin() + std::ptrdiff_t(spans[i].second));
        for (std::size_t k :
             skills::SimulatedScreen::choose_within(own, std::size_t(goal_.screen->keep), bound.bound_s))
          screen_picks_[ideas[i].id].push_back(pool[spans[i].first + k]);
      }
      if (outcome.rfind("left out", 0) == 0) left_out.push_back(ideas[i].id);
      entry["outcome"] = outcome;
      evidence.push_back(entry);
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Scored& a, const Scored& b) { return *a.best_s < *b.best_s; });
    std::vector<skills::Idea> out;
    for (const auto* list : {&ranked, &unjudged})
      for (const auto& scored : *list) {
        skills::Idea idea = ideas[scored.idea];
        if (scored.best_s && bound.best_predicted_s) {
          idea.expected_gain = 1 - *scored.best_s / *bound.best_predicted_s;
          idea.rationale += "; the screen predicts " + number_text(*scored.best_s * 1e3) +
                            " ms at best among its candidates (the best so far: " +
                            number_text(*bound.best_predicted_s * 1e3) + " ms)";
        }
        out.push_back(std::move(idea));
      }
    skills::SkillDecision decision;
    decision.action = "screen_ideas";
    decision.proposer = "simulator";
    decision.inputs = {{"ideas", ideas.size()}, {"candidates", pool.size()}};
    decision.evidence = {{"ideas", evidence},
                         {"bound", bound.to_json()},
                         {"simulations", screen_->simulations() - simulations_before},
                         {"correction", screen_->correction_json()}};
    decision.rationale =
        "the simulator predicted the candidates of the " + std::to_string(ideas.size()) +
        " ideas (their probes, and their regions' configurations not measured yet, at most " +
        std::to_string(goal_.screen->propose) +
        " each): the ideas go to the policy ordered by their best prediction" +
        (std::isfinite(bound.bound_s)
             ? ", without those predicted worse than the best (" +
                   number_text(*bound.best_predicted_s * 1e3) + " ms) beyond the screen's margin (" +
                   percent_text(bound.margin) + ")"
             : std::string());
    std::vector<std::string> order;
    for (const auto& idea : out) order.push_back(idea.id);
    decision.outcome = (out.empty() ? std::string("no idea left") : "order: " + join(order, ", ")) +
                       (left_out.empty() ? "" : "; left out: " + join(left_out, ", "));
    log_->append(iteration, kOrchestrator, decision, elapsed_ms(t0));
    ideas = std::move(out);
  }

  // Every device trial teaches the screen: its simulated and measured
  // figures, and the correction that follows, in the log.
  void screen_feedback(const std::vector<skills::MeasuredTrial>& measured, int iteration) {
    std::vector<std::pair<skills::Candidate, double>> pairs;
    std::vector<const store::Trial*> trials;
    for (const auto& m : measured) {
      const auto latency = m.trial.metric("latency_s");
      if (!is_measured(m.trial.status) || !latency || !(*latency > 0)) continue;
      pairs.push_back({{m.trial.variant, m.trial.params}, *latency});
      trials.push_back(&m.trial);
    }
    if (pairs.empty()) return;
    const auto t0 = Clock::now();
    const long simulations_before = screen_->simulations();
    const auto feedback = screen_->learn(pairs);
    Json rows = Json::array();
    double squares = 0;
    int compared = 0;
    for (std::size_t i = 0; i < feedback.size(); ++i) {
      const auto& f = feedback[i];
      Json row = {{"trial", trials[i]->id}, {"variant", f.candidate.variant}, {"measured_s", f.measured_s}};
      Json params = f.candidate.params;
      params.erase("_");
      row["params"] = params;
      if (f.valid) {
        row["simulated_s"] = f.simulated_s;
        row["predicted_s"] = f.predicted_s;
        row["measured_over_simulated"] = f.measured_s / f.simulated_s;
        squares += std::pow(std::log(f.measured_s / f.predicted_s), 2);
        ++compared;
      } else {
        row["not_simulated"] = f.error;
      }
      rows.push_back(row);
    }
    skills::SkillDecision decision;
    decision.action = "screen_feedback";
    decision.proposer = "simulator";
    decision.inputs = {{"trials", rows.size()}};
    decision.evidence = {{"trials", rows},
                         {"simulations", screen_->simulations() - simulations_before},
                         {"correction", screen_->correction_json()}};
    char text[200];
    std::snprintf(text, sizeof text,
                  "the device measured %zu trial(s); the screen had predicted them with rms log error %.3f; "
                  "its correction is updated from them",
                  rows.size(), compared ? std::sqrt(squares / compared) : 0.0);
    decision.rationale = text;
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < feedback.size(); ++i) {
      const auto& f = feedback[i];
      char line[160];
      if (f.valid)
        std::snprintf(line, sizeof line, "trial %lld: simulated %.4g ms, measured %.4g ms (x%.3f)",
                      static_cast<long long>(trials[i]->id), f.simulated_s * 1e3, f.measured_s * 1e3,
                      f.measured_s / f.simulated_s);
      else
        std::snprintf(line, sizeof line, "trial %lld: measured %.4g ms, not simulated",
                      static_cast<long long>(trials[i]->id), f.measured_s * 1e3);
      lines.push_back(line);
    }
    decision.outcome = join(lines, "; ");
    log_->append(iteration, skills::kParamExplorer, decision, elapsed_ms(t0));
  }
  // Observes a batch in order. With a noisy target (measurements with
  // intervals, core/noise.hpp) a lower median within the noise is not an
  // improvement, and a win far beyond the noise is measured again before it
  // counts: both are logged with the intervals.
  std::vector<search::Observation> observe_all(const std::vector<skills::MeasuredTrial>& measured) {
    std::vector<search::Observation> out;
    std::vector<std::size_t> suspicious;
    Json within_noise = Json::array();
    std::optional<store::Trial> best_before = state_.best_trial;
    for (std::size_t i = 0; i < measured.size(); ++i) {
      Comparison comparison = Comparison::not_better;
      out.push_back(observe(measured[i], &comparison));
      if (comparison == Comparison::suspicious) suspicious.push_back(i);
      if (comparison == Comparison::within_noise && measured[i].fresh)
        within_noise.push_back(figures(measured[i].trial));
    }
    if (!within_noise.empty()) {
      skills::SkillDecision decision;
      decision.action = kWithinNoise;
      decision.inputs = {{"trials", within_noise.size()}};
      decision.evidence = {{"best", figures(*state_.best_trial)}, {"within_noise", within_noise}};
      decision.rationale = std::to_string(within_noise.size()) +
                           (within_noise.size() == 1 ? " candidate has" : " candidates have") +
                           " a lower median than the best (trial " + std::to_string(state_.best_trial->id) +
                           ") but an interval that overlaps the best's: within the noise, not an improvement";
      decision.outcome = "best kept";
      log_->append(state_.progress.iteration, kOrchestrator, decision);
    }
    if (!suspicious.empty()) measure_again(measured, suspicious, out);
    report(state_.progress.phase);
    return out;
  }

  static std::string number_text(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
  }

  // A trial's figures for the log: its median, interval and runs.
  static Json figures(const store::Trial& trial) {
    Json out = {{"trial", trial.id}, {"latency_s", trial.metrics.value("latency_s", Json())}};
    if (const auto e = estimate_from_metrics(trial.metrics, "latency_s"); e && e->width() > 0)
      out["interval"] = {e->low, e->high};
    if (trial.repeats.is_array()) out["runs"] = trial.repeats.size();
    return out;
  }

  // The suspicious wins of a batch, measured again: each stands as its two
  // measurements combined and counts only if they still beat the best beyond
  // the noise.
  void measure_again(const std::vector<skills::MeasuredTrial>& measured, std::vector<std::size_t> which,
                     std::vector<search::Observation>& out) {
    const int iteration = state_.progress.iteration;
    // A measurement again is an evaluation: the budget holds. A suspicious
    // win it leaves no evaluation for counts as measured once, if it still
    // beats the best beyond the noise, and the log says it was not confirmed.
    const auto spent = static_cast<std::int64_t>(runner_->counters().evaluations);
    const auto left = static_cast<std::size_t>(std::max<std::int64_t>(0, goal_.budget_evaluations - spent));
    if (which.size() > left) {
      skills::SkillDecision decision;
      decision.action = kNotMeasuredAgain;
      Json trials = Json::array();
      std::vector<std::string> outcomes;
      for (std::size_t k = left; k < which.size(); ++k) {
        const store::Trial& trial = measured[which[k]].trial;
        trials.push_back(figures(trial));
        const auto value = objective_value(goal_.objective, trial.metrics);
        const bool better =
            value && compare_with_best(trial, *value, /*suspicion=*/false) == Comparison::better;
        if (better) {
          state_.best_trial = trial;
          state_.best_value = *value;
        }
        outcomes.push_back("trial " + std::to_string(trial.id) + ": " +
                           (better ? std::string(kMeasuredOnce) : "not better"));
      }
      decision.inputs = {{"trials", trials.size()}};
      decision.evidence = {{"best", figures(*state_.best_trial)}, {"suspicious", trials}};
      decision.rationale = "the evaluation budget leaves no measurement again for " +
                           std::to_string(which.size() - left) +
                           (which.size() - left == 1 ? " suspicious win" : " suspicious wins") +
                           ": each counts as measured once, if it beats the best beyond the noise";
      decision.outcome = join(outcomes, "; ");
      log_->append(iteration, kOrchestrator, decision);
      which.resize(left);
      if (which.empty()) return;
    }
    skills::SkillDecision decision;
    decision.action = kMeasureAgain;
    Json ids = Json::array(), trials = Json::array();
    for (std::size_t i : which) {
      ids.push_back(measured[i].trial.id);
      trials.push_back(figures(measured[i].trial));
    }
    const double beyond = context_.target.remeasure_beyond();
    decision.inputs = {{"trials", ids}};
    decision.evidence = {
        {"best", figures(*state_.best_trial)}, {"suspicious", trials}, {"remeasure_beyond", beyond}};
    decision.rationale =
        std::to_string(which.size()) + (which.size() == 1 ? " candidate beats" : " candidates beat") +
        " the best (trial " + std::to_string(state_.best_trial->id) + ") by more than " +
        number_text(beyond) +
        " noise widths: measured again before it counts; it counts only if its runs together "
        "still lie wholly below the best's interval";
    const int64_t seq = log_->append(iteration, kOrchestrator, decision);
    std::vector<skills::TrialRequest> requests;
    for (std::size_t i : which) {
      const store::Trial& first = measured[i].trial;
      requests.push_back({{first.variant, first.params}, iteration, seq, first});
    }
    const auto started_batch = Clock::now();
    auto again =
        runner_->measure(requests, [&](const skills::MeasuredTrial&) { report(state_.progress.phase); });
    log_->append(iteration, skills::kBenchmarkRunner, again.decision, elapsed_ms(started_batch));
    std::vector<std::string> outcomes;
    for (std::size_t k = 0; k < which.size(); ++k) {
      Comparison comparison = Comparison::not_better;
      out[which[k]] = observe(again.result[k], &comparison);
      outcomes.push_back("trial " + std::to_string(measured[which[k]].trial.id) + " again as trial " +
                         std::to_string(again.result[k].trial.id) + ": " +
                         (comparison == Comparison::better
                              ? std::string(kConfirmed)
                              : "not confirmed (" + std::string(to_string(comparison)) + ")"));
    }
    log_->set_outcome(seq, join(outcomes, "; "));
  }

  // The start does not fit the target (an SBUF overflow, a tile limit):
  // measure where a start that fits may be (configurations of the start
  // variant below the start, skills/variant_catalog.hpp, and every other
  // variant at its defaults) and name the best of each that the target
  // accepted, as trials of this run. What fits is what was measured to fit,
  // so the suggestion holds for this kernel, shape and target.
  std::string suggest_fitting_start() {
    constexpr std::size_t kBelow = 12;
    report("baseline: looking for a start that fits");
    const skills::Candidate& start = catalog_.baseline;
    std::vector<skills::Candidate> probes;
    if (const skills::VariantSpace* variant = catalog_.find(start.variant))
      for (auto& params : skills::configurations_below(*variant, start.params, kBelow))
        probes.push_back({start.variant, std::move(params)});
    std::vector<skills::Candidate> others;
    for (const auto& variant : catalog_.variants)
      if (variant.name != start.variant) others.push_back({variant.name, variant.defaults});
    if (probes.empty() && others.empty()) return "the goal's space has no other configuration to try";
    // Within the evaluation budget: where it cannot hold every probe, the two
    // kinds take turns, so that both are represented.
    const int left = goal_.budget_evaluations - int(runner_->counters().evaluations);
    if (left <= 0)
      return "the evaluation budget (" + std::to_string(goal_.budget_evaluations) +
             ") leaves none to look for a start that fits";
    if (probes.size() + others.size() > std::size_t(left)) {
      std::vector<skills::Candidate> turns;
      for (std::size_t i = 0; turns.size() < std::size_t(left); ++i) {
        if (i < probes.size()) turns.push_back(probes[i]);
        if (i < others.size() && turns.size() < std::size_t(left)) turns.push_back(others[i]);
      }
      probes = std::move(turns);
    } else {
      probes.insert(probes.end(), others.begin(), others.end());
    }
    skills::SkillDecision decision;
    decision.action = "look_for_fitting_start";
    decision.inputs = candidate_json(start);
    decision.rationale = "the start does not fit the target: measure " + std::to_string(probes.size()) +
                         " configurations that may (the start variant's ordered parameters lowered, the "
                         "other variants at their defaults) to suggest a start that fits";
    const int64_t seq = log_->append(0, kOrchestrator, decision);
    // Not observed: with no baseline there is no best to follow, and the run stops here.
    const auto measured = measure_trials(probes, 0, seq);
    // The best of the start variant, and the best of the others, by the objective.
    const store::Trial* same = nullptr;
    const store::Trial* other = nullptr;
    std::optional<double> same_value, other_value;
    for (const auto& m : measured) {
      if (!is_measured(m.trial.status)) continue;
      const auto value = objective_value(goal_.objective, m.trial.metrics);
      if (!value) continue;
      const bool is_same = m.trial.variant == start.variant;
      auto& best = is_same ? same : other;
      auto& best_value = is_same ? same_value : other_value;
      if (!best || *value < *best_value) best = &m.trial, best_value = value;
    }
    auto figure = [](const store::Trial& trial) {
      char text[64];
      std::snprintf(text, sizeof text, " (%.4g ms, trial %lld)", trial.metric("latency_s").value_or(0) * 1e3,
                    static_cast<long long>(trial.id));
      return std::string(text);
    };
    std::string out;
    if (same) {
      // What differs from the start, which the reader has just seen in full.
      std::vector<std::string> changed;
      for (const auto& [name, value] : same->params.items())
        if (!start.params.contains(name) || start.params[name] != value)
          changed.push_back(name + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
      out = start.variant + " with " + join(changed, ", ") + " fits" + figure(*same) +
            ": start there with start.params";
    }
    if (other)
      out += std::string(out.empty() ? "" : "; ") + other->variant + " at its defaults fits" +
             figure(*other) + ": or start.variant: " + other->variant;
    if (out.empty())
      out = "none of " + std::to_string(probes.size()) +
            " configurations measured (the start variant's parameters lowered, the other variants' "
            "defaults) fits either; narrow search.space to smaller values";
    log_->set_outcome(seq, out);
    return out;
  }

  search::Observation observe(const skills::MeasuredTrial& measured, Comparison* comparison = nullptr) {
    const store::Trial& trial = measured.trial;
    const skills::VariantSpace& variant = catalog_.variant(trial.variant);
    search::Configuration configuration;
    try {
      configuration = search::configuration_from_json(*variant.space, trial.params);
    } catch (const UserError&) {
      // Outside the goal's space (a start point the goal's space excludes): not a warm-start observation.
    }
    std::optional<double> value;
    if (is_measured(trial.status)) value = objective_value(goal_.objective, trial.metrics);
    search::Observation observation =
        value ? search::Observation::success(configuration, *value)
              : search::Observation::failed(
                    configuration, trial.error.empty() ? std::string(to_string(trial.status)) : trial.error);
    if (measured.fresh && !configuration.empty()) {
      auto& list = state_.observations[trial.variant];
      if (trial.metrics.contains("remeasured"))  // it stands for the first measurement of its candidate
        std::erase_if(list, [&](const auto& o) { return o.configuration == configuration; });
      list.push_back(observation);
    }
    if (value) {
      state_.measured_variants.insert(trial.variant);
      const Comparison c = state_.best_trial ? compare_with_best(trial, *value) : Comparison::better;
      if (comparison) *comparison = c;
      if (c == Comparison::better) {
        state_.best_trial = trial;
        state_.best_value = *value;
      }
    }
    return observation;
  }

  // How a measured trial compares with the best so far. Deterministic
  // measurements: the lower value, ties to the lower trial id (as in
  // `autotune trials --top`). Noisy ones (an interval on either side): the
  // rule of core/noise.hpp, without suspicion for a trial measured again.
  Comparison compare_with_best(const store::Trial& trial, double value, bool suspicion = true) const {
    const ObjectiveMetric metric = objective_metric(to_string(goal_.objective));
    const auto candidate = estimate_from_metrics(trial.metrics, metric.key, metric.maximised);
    const auto incumbent = estimate_from_metrics(state_.best_trial->metrics, metric.key, metric.maximised);
    if (candidate && incumbent && (candidate->width() > 0 || incumbent->width() > 0) &&
        trial.config_hash != state_.best_trial->config_hash)
      return compare_estimates(
          *candidate, *incumbent,
          !suspicion || trial.metrics.contains("remeasured") ? -1.0 : context_.target.remeasure_beyond());
    return value < state_.best_value || (value == state_.best_value && trial.id < state_.best_trial->id)
               ? Comparison::better
               : Comparison::not_better;
  }

  double current_improvement() const {
    return improvement_of(goal_.objective, state_.baseline_value, state_.best_value);
  }
  bool goal_met() const {
    return state_.best_trial && state_.baseline_trial &&
           meets_goal(goal_, state_.baseline_value, state_.best_value, state_.best_trial->metrics);
  }

  void report(const std::string& phase) {
    Progress& progress = state_.progress;
    progress.phase = phase;
    progress.evaluations = int(runner_->counters().evaluations);
    progress.active_workers = runner_->counters().active_workers;
    if (state_.best_trial) progress.best_latency_s = state_.best_trial->metric("latency_s");
    if (state_.baseline_trial) progress.improvement = current_improvement();
    if (options_.progress) options_.progress(progress);
  }

  void warn(const std::string& line) {
    {
      std::lock_guard lock(state_.warnings_mutex);
      state_.warnings.push_back(line);
    }
    if (options_.warning) options_.warning(line);
  }

  RunContext& context_;
  SkillSet& skills_;
  const Goal& goal_;
  const skills::VariantCatalog& catalog_;
  store::Store& store_;
  const RunOptions& options_;
  const Clock::time_point started_ = Clock::now();
  store::RunStatus status_before_resume_ = store::RunStatus::interrupted;
  LoopState state_;
  Rng rng_;
  std::optional<DecisionLog> log_;
  std::optional<skills::BenchmarkRunner> runner_;
  std::optional<skills::SimulatedScreen> screen_;
  // Per idea, the best of its candidates the screen predicted within the
  // bound at the last screen_ideas (at most `keep`).
  std::map<std::string, std::vector<skills::Candidate>> screen_picks_;
  RunSummary summary_;
};

}  // namespace

RunSummary Orchestrator::run() { return RunLoop(context_, skills_).run(); }

}  // namespace autotune::orchestrator
