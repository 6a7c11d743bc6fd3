#include "orchestrator/orchestrator.hpp"

#include <cmath>
#include <cstdio>
#include <mutex>

#include "core/error.hpp"
#include "core/log.hpp"
#include "orchestrator/distributed.hpp"
#include "orchestrator/llm/llm_policy.hpp"
#include "orchestrator/run_lease.hpp"
#include "skills/kernel_generator.hpp"
#include "skills/param_explorer.hpp"
#include "skills/profile_analyzer.hpp"

namespace autotune::orchestrator {

namespace {

using Clock = std::chrono::steady_clock;

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
  const char* key = objective == Objective::mfu ? "mfu_percent" : "latency_s";
  if (!metrics.is_object() || !metrics.contains(key) || !metrics.at(key).is_number()) return std::nullopt;
  const double value = metrics.at(key).get<double>();
  if (!std::isfinite(value)) return std::nullopt;
  return objective == Objective::mfu ? -value : value;
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

RunSummary Orchestrator::run() {
  const auto started = Clock::now();
  const Goal& goal = context_.goal;
  const skills::VariantCatalog& catalog = context_.catalog;
  store::Store& store = context_.store;
  const RunOptions& options = context_.options;
  const int jobs = options.queue || options.jobs > 0 ? options.jobs : goal.parallel;
  const std::string goal_yaml = to_yaml(goal);

  // --- the run record (new, or the one being resumed) ---
  store::Run record;
  int64_t already_logged = 0;
  std::vector<store::Trial> committed;
  std::optional<RunLease> lease;
  if (options.resume) {
    auto existing = store.run(*options.resume);
    if (!existing)
      throw UserError("--resume " + std::to_string(*options.resume) + ": no such run in " + store.location());
    if (existing->goal_yaml != store::redact_url_credentials(goal_yaml))  // stored redacted
      throw UserError("--resume " + std::to_string(*options.resume) +
                      ": the run was started from a different goal (" + existing->goal_name +
                      "); resume it with the same goal file");
    if (options.seed && *options.seed != existing->seed)
      throw UserError("--resume " + std::to_string(*options.resume) + ": the run's seed is " +
                      std::to_string(existing->seed) + ", not " + std::to_string(*options.seed));
    lease.emplace(store, existing->id);  // before any write: another process may be running it
    record = *existing;
    record.status = store::RunStatus::running;
    store.update_run(record);
    already_logged = store.last_decision_seq(record.id);
    committed = store.trials(record.id);
  } else {
    record.goal_yaml = goal_yaml;
    record.goal_name = goal.name;
    record.kernel = catalog.kernel;
    record.target = context_.target.description();
    record.seed = options.seed.value_or(goal.seed);
    record.simulator_version = context_.simulator_version;
    record.status = store::RunStatus::running;
    record.id = store.create_run(record);
    lease.emplace(store, record.id);
  }
  const std::uint64_t seed = record.seed;
  const Rng rng(seed);

  DecisionLog log(store, record.id, already_logged);
  std::vector<std::string> warnings;
  std::mutex warnings_mutex;
  auto warn = [&](const std::string& line) {
    {
      std::lock_guard lock(warnings_mutex);
      warnings.push_back(line);
    }
    if (options.warning) options.warning(line);
  };
  log.on_failure(warn);
  skills::RunnerOptions runner_options;
  runner_options.jobs = jobs;
  runner_options.timeout_s = goal.timeout_s;
  runner_options.use_cache = options.use_cache;
  runner_options.queue = options.queue;
  if (options.queue) store.set_measurement_context(measurement_context(goal, record.id));
  skills::BenchmarkRunner runner(context_.target, store, record.id, runner_options);
  runner.resume(committed);

  RunSummary summary;
  summary.run_id = record.id;
  summary.db = store.location();
  summary.objective = to_string(goal.objective);

  // --- the loop's state ---
  std::optional<store::Trial> baseline_trial, best_trial;
  double baseline_value = 0, best_value = 0;
  std::map<std::string, std::vector<search::Observation>> observations;  // per variant, for warm starts
  std::set<std::string> measured_variants;
  std::set<std::string> tried_ideas;
  Progress progress;
  progress.run_id = record.id;
  progress.max_iterations = goal.max_iterations;
  progress.budget = goal.budget_evaluations;

  auto current_improvement = [&] { return improvement_of(goal.objective, baseline_value, best_value); };
  auto goal_met = [&] {
    return best_trial && baseline_trial && meets_goal(goal, baseline_value, best_value, best_trial->metrics);
  };
  auto report = [&](const std::string& phase) {
    progress.phase = phase;
    progress.evaluations = int(runner.counters().evaluations);
    progress.active_workers = runner.counters().active_workers;
    if (best_trial) progress.best_latency_s = best_trial->metric("latency_s");
    if (baseline_trial) progress.improvement = current_improvement();
    if (options.progress) options.progress(progress);
  };

  auto measure = [&](const std::vector<skills::Candidate>& candidates, int iteration, int64_t decision_seq) {
    std::vector<skills::TrialRequest> requests;
    for (const auto& c : candidates) requests.push_back({c, iteration, decision_seq});
    const auto started_batch = Clock::now();
    auto batch = runner.measure(requests, [&](const skills::MeasuredTrial&) { report(progress.phase); });
    log.append(iteration, skills::kBenchmarkRunner, batch.decision, elapsed_ms(started_batch));
    std::vector<search::Observation> out;
    for (const auto& measured : batch.result) {
      const store::Trial& trial = measured.trial;
      const skills::VariantSpace& variant = catalog.variant(trial.variant);
      search::Configuration configuration;
      try {
        configuration = search::configuration_from_json(*variant.space, trial.params);
      } catch (const UserError&) {
        // Outside the goal's space (a start point the goal's space excludes): not a warm-start observation.
      }
      std::optional<double> value;
      if (is_measured(trial.status)) value = objective_value(goal.objective, trial.metrics);
      search::Observation observation =
          value
              ? search::Observation::success(configuration, *value)
              : search::Observation::failed(
                    configuration, trial.error.empty() ? std::string(to_string(trial.status)) : trial.error);
      if (measured.fresh && !configuration.empty()) observations[trial.variant].push_back(observation);
      if (value) {
        measured_variants.insert(trial.variant);
        // Ties go to the lower trial id, as in `autotune trials --top`.
        if (!best_trial || *value < best_value || (*value == best_value && trial.id < best_trial->id)) {
          best_trial = trial;
          best_value = *value;
        }
      }
      out.push_back(std::move(observation));
    }
    report(progress.phase);
    return out;
  };

  auto finish = [&](store::RunStatus status, const std::string& reason) {
    summary.status = std::string(to_string(status));
    summary.stop_reason = reason;
    summary.goal_met = goal_met();
    summary.iterations = progress.iteration;
    const auto& counters = runner.counters();
    summary.evaluations = int(counters.evaluations);
    summary.cache_hits = int(counters.cache_hits);
    summary.resumed_trials = int(counters.resumed);
    summary.measured = int(counters.measured);
    summary.target_seconds = counters.target_seconds;
    summary.commit_seconds = counters.commit_seconds;
    // Candidates the target could not measure: the run went on, but say so.
    const auto counts = store.trial_counts(record.id);
    if (counts.failed + counts.timeout > 0) {
      std::string example;
      for (const auto& trial : store.trials(record.id))
        if (trial.status == Outcome::failed || trial.status == Outcome::timeout) {
          example = "trial " + std::to_string(trial.id) + ": " + trial.error.substr(0, 160);
          break;
        }
      warn(std::to_string(counts.failed) + " candidates failed and " + std::to_string(counts.timeout) +
           " timed out on the target (" + example + "); see `autotune trials " + std::to_string(record.id) +
           "`");
    }
    {
      std::lock_guard lock(warnings_mutex);
      summary.warnings = warnings;
    }
    if (baseline_trial) {
      summary.baseline = {baseline_trial->variant, baseline_trial->params};
      summary.baseline_metrics = baseline_trial->metrics;
      summary.baseline_trial = baseline_trial->id;
    }
    if (best_trial) {
      summary.best = {best_trial->variant, best_trial->params};
      summary.best_metrics = best_trial->metrics;
      summary.best_trial = best_trial->id;
      summary.improvement = current_improvement();
    }
    summary.wall_time_s = seconds_since(started);
    skills::SkillDecision stop;
    stop.action = status == store::RunStatus::completed ? "finish" : "fail";
    stop.inputs = {{"iterations", summary.iterations}, {"evaluations", summary.evaluations}};
    stop.evidence = {{"improvement", summary.improvement},
                     {"goal_met", summary.goal_met},
                     {"cache_hits", summary.cache_hits},
                     {"resumed_trials", summary.resumed_trials}};
    stop.rationale = reason;
    stop.outcome = summary.goal_met ? "goal met" : "goal not met";
    log.append(progress.iteration, kOrchestrator, stop);
    record.status = status;
    record.stop_reason = reason;
    record.goal_met = summary.goal_met;
    record.baseline_trial = summary.baseline_trial;
    record.best_trial = summary.best_trial;
    record.summary = summary.to_json();
    store.update_run(record);
    return summary;
  };

  try {
    // --- baseline ---
    progress.iteration = 0;
    report("baseline");
    skills::SkillDecision start;
    start.action = "baseline";
    start.inputs = candidate_json(catalog.baseline);
    start.evidence = {{"objective", to_string(goal.objective)},
                      {"goal_improvement", goal.improvement ? Json(*goal.improvement) : Json(nullptr)},
                      {"budget_evaluations", goal.budget_evaluations},
                      {"max_iterations", goal.max_iterations},
                      {"seed", seed}};
    start.rationale = "measure the goal's starting point (" + catalog.baseline.key() +
                      "): every improvement is measured against it";
    const std::string unusable = context_.target.unusable_reason();
    if (!unusable.empty()) {
      start.evidence["unusable"] = unusable;
      start.rationale += "; the target cannot measure anything (" + unusable +
                         "), so the baseline is recorded as a failed trial and the run stops";
    }
    const int64_t start_seq = log.append(0, kOrchestrator, start);
    const auto baseline_observation = measure({catalog.baseline}, 0, start_seq);
    if (!baseline_observation.front().ok()) {
      const std::string& failure = baseline_observation.front().failure;
      const std::string reason = failure.substr(0, failure.find('\n'));
      log.set_outcome(start_seq, "failed: " + reason);
      return finish(store::RunStatus::failed,
                    unusable.empty() ? "the baseline " + catalog.baseline.key() + " failed: " + reason
                                     : "nothing to tune: " + unusable);
    }
    baseline_trial = best_trial;
    baseline_value = best_value;
    log.set_outcome(start_seq,
                    "baseline " + std::to_string(baseline_trial->metric("latency_s").value_or(0)) + " s");

    int failed_in_a_row = 0;
    // Ideas in a row that settled without measuring anything: each hands its
    // iteration to the next idea, up to this many, so a skill that keeps
    // proposing spent regions under new ids cannot hold the loop in place.
    constexpr int kMaxUnspentIdeasInARow = 8;
    int unspent_in_a_row = 0;
    auto keep_iteration = [&](int& iteration) {
      if (unspent_in_a_row >= kMaxUnspentIdeasInARow) return;
      ++unspent_in_a_row;
      --iteration;
    };
    std::string stop_reason;
    for (int iteration = 1;; ++iteration) {
      if (goal_met()) {
        // Name what was asked: the improvement, the absolute bound, or both.
        std::vector<std::string> met;
        if (goal.improvement)
          met.push_back("improvement " + percent(current_improvement()) +
                        " >= " + percent(*goal.improvement));
        if (goal.absolute) {
          const Json& m = best_trial->metrics;
          char text[160];
          if (goal.objective == Objective::latency)
            std::snprintf(text, sizeof text, "latency %.6g s <= %.6g s", m.value("latency_s", 0.0),
                          *goal.absolute);
          else if (goal.objective == Objective::throughput)
            std::snprintf(text, sizeof text, "throughput %.4g TFLOP/s >= %.4g TFLOP/s",
                          m.value("throughput_flops_per_s", 0.0) / 1e12, *goal.absolute / 1e12);
          else
            std::snprintf(text, sizeof text, "MFU %.1f%% >= %.4g%%", m.value("mfu_percent", 0.0),
                          *goal.absolute);
          met.push_back(text);
        }
        stop_reason = "goal met: ";
        for (std::size_t i = 0; i < met.size(); ++i) stop_reason += (i ? ", " : "") + met[i];
        break;
      }
      if (iteration > goal.max_iterations) {
        stop_reason = "max_iterations (" + std::to_string(goal.max_iterations) + ") reached";
        break;
      }
      if (runner.counters().evaluations >= goal.budget_evaluations) {
        stop_reason = "evaluation budget (" + std::to_string(goal.budget_evaluations) + ") spent";
        break;
      }
      if (seconds_since(started) >= goal.budget_wall_time_s) {
        stop_reason = "wall-time budget (" + std::to_string(int(goal.budget_wall_time_s)) + " s) spent";
        break;
      }
      progress.iteration = iteration;

      // Re-profile the best so far and analyse it.
      report("analyse");
      skills::AnalysisRequest analysis_request{{best_trial->variant, best_trial->params},
                                               best_trial->metrics,
                                               runner.profile_of(*best_trial),
                                               context_.target.facts()};
      auto t0 = Clock::now();
      auto analysis = skills_.analyzer->analyze(analysis_request);
      log.append(iteration, skills_.analyzer->name(), analysis.decision, elapsed_ms(t0));
      log_plugin_calls(log, iteration, skills_.plugin_calls.get());

      // Ideas from the findings.
      skills::GenerationRequest generation_request;
      generation_request.catalog = &catalog;
      generation_request.best = {best_trial->variant, best_trial->params};
      generation_request.best_metrics = best_trial->metrics;
      generation_request.analysis = analysis.result;
      generation_request.tried_ideas = tried_ideas;
      generation_request.measured_variants = measured_variants;
      for (const auto& [name, list] : observations) generation_request.measured_counts[name] = list.size();
      t0 = Clock::now();
      auto generation = skills_.generator->generate(generation_request);
      log.append(iteration, skills_.generator->name(), generation.decision, elapsed_ms(t0));
      log_plugin_calls(log, iteration, skills_.plugin_calls.get());

      // The policy picks one idea (or stops).
      PolicyState state;
      state.iteration = iteration;
      state.max_iterations = goal.max_iterations;
      state.evaluations = int(runner.counters().evaluations);
      state.budget_evaluations = goal.budget_evaluations;
      state.batch_size = goal.effective_batch_size();
      state.best = generation_request.best;
      state.best_value = best_value;
      state.baseline_value = baseline_value;
      state.improvement = current_improvement();
      state.analysis = analysis.result;
      state.ideas = generation.result.ideas;
      state.failed_ideas_in_a_row = failed_in_a_row;
      state.run = record.id;
      state.tried_ideas = tried_ideas;
      state.measured_counts = generation_request.measured_counts;
      auto choice = skills_.policy->decide(state);
      if (choice.decision.proposer.empty()) choice.decision.proposer = skills_.policy->name();
      const skills::Idea* chosen = nullptr;
      if (!choice.result.stop) {
        chosen = choice.result.new_idea ? &*choice.result.new_idea : &state.ideas.at(choice.result.idea);
        choice.decision.inputs["idea"] = chosen->id;
      }
      const int64_t policy_seq = log.append(iteration, kOrchestrator, choice.decision);
      if (choice.result.stop) {
        stop_reason = choice.result.stop_reason;
        log.set_outcome(policy_seq, "stop");
        break;
      }
      // With llm.kernel_sources, the LLM also writes a kernel source, measured as a trial of its own
      // (docs/llm.md).
      llm::propose_kernel_source(*skills_.policy, state, *best_trial, log, store, goal.timeout_s);
      const skills::Idea& idea = *chosen;
      const skills::VariantSpace& variant = catalog.variant(idea.variant);

      skills::ExplorationRequest request;
      request.variant = &variant;
      request.probes = idea.probes;
      if (idea.kind != "structural") {
        if (idea.region.empty()) {
          request.region = variant.space;
        } else if (auto region = variant.region(idea.region)) {
          request.region = std::make_shared<const search::SearchSpace>(std::move(*region));
        } else {
          tried_ideas.insert(idea.id);
          log.set_outcome(policy_seq, "region infeasible under the constraints; next idea");
          keep_iteration(iteration);  // nothing was measured: the iteration is not spent
          continue;
        }
      }
      request.strategy_chosen = !idea.strategy.empty();
      request.strategy = request.strategy_chosen ? idea.strategy : goal.strategy;
      request.strategy_options = request.strategy_chosen ? idea.strategy_options : goal.strategy_options;
      request.seed = rng.fork("param_explorer").fork(std::uint64_t(iteration)).seed();
      request.budget = choice.result.budget;
      request.batch_size = goal.effective_batch_size();
      request.known = observations[variant.name];
      request.carry_patience = !idea.continuation;

      t0 = Clock::now();
      auto plan = skills_.explorer->plan(request);
      const int64_t plan_seq = log.append(iteration, skills_.explorer->name(), plan.decision, elapsed_ms(t0));
      log_plugin_calls(log, iteration, skills_.plugin_calls.get());
      {
        // Every variant the idea measures: a structural probe may cover several.
        std::vector<std::string> names{variant.name};
        for (const auto& probe : idea.probes)
          if (std::find(names.begin(), names.end(), probe.variant) == names.end())
            names.push_back(probe.variant);
        std::string label;
        for (const auto& name : names) label += (label.empty() ? "" : ", ") + name;
        report("search " + idea.kind + " " + label);
      }
      const double before = best_value;
      const auto before_key = best_trial->config_hash;
      const auto exploration = skills_.explorer->explore(
          request, plan.result,
          [&](const std::vector<skills::Candidate>& batch) { return measure(batch, iteration, plan_seq); },
          [&] {
            return goal_met() || seconds_since(started) >= goal.budget_wall_time_s ||
                   runner.counters().evaluations >= goal.budget_evaluations;
          });
      // An idea is done with once its region settled (exhausted, or no
      // better value for the explorer's patience); one cut short by its
      // budget share may be continued by a later iteration.
      if (exploration.settled) tried_ideas.insert(idea.id);
      const bool improved = best_value < before && best_trial->config_hash != before_key;
      const std::string result =
          std::to_string(exploration.evaluations) + " evaluations (" + exploration.stop_reason +
          (exploration.settled ? ", settled" : ", may continue") + "); " +
          (improved ? "improved the best to " + best_trial->variant + " " +
                          skills::Candidate{best_trial->variant, best_trial->params}.key()
                    : std::string("no improvement"));
      log.set_outcome(plan_seq, result);
      log.set_outcome(policy_seq, improved ? "improved" : "no improvement");

      skills::SkillDecision verdict;
      verdict.action = improved ? kAccept : kRollback;
      verdict.inputs = {{"idea", idea.id}};
      verdict.evidence = {{"best_before", before},
                          {"best_after", best_value},
                          {"improvement", current_improvement()},
                          {"evaluations", runner.counters().evaluations}};
      const bool unspent =
          exploration.evaluations == 0 && exploration.settled && unspent_in_a_row < kMaxUnspentIdeasInARow;
      verdict.rationale = improved ? "the idea improved the best; analyse the new best next"
                          : unspent
                              ? "the idea settled without a measurement (" + exploration.stop_reason +
                                    "): the iteration goes to the next idea"
                              : "the idea did not improve the best: keep the best so far and try a different "
                                "idea (variant or region) next";
      log.append(iteration, kOrchestrator, verdict);
      failed_in_a_row = improved ? 0 : failed_in_a_row + 1;
      // An idea that settled without measuring anything (its region's history
      // already shows it stopped paying) did not use the iteration: the next
      // idea gets it (the idea is now tried; kMaxUnspentIdeasInARow bounds it).
      if (unspent)
        keep_iteration(iteration);
      else if (exploration.evaluations > 0)
        unspent_in_a_row = 0;
    }
    return finish(store::RunStatus::completed, stop_reason);
  } catch (const UserError& e) {
    finish(store::RunStatus::failed, std::string("error: ") + e.what());
    throw;
  }
}

}  // namespace autotune::orchestrator
