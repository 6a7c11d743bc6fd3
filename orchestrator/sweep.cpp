#include "orchestrator/sweep.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "orchestrator/decision_log.hpp"
#include "orchestrator/distributed.hpp"
#include "orchestrator/orchestrator.hpp"
#include "orchestrator/run_lease.hpp"

namespace autotune::orchestrator {

namespace {

// Every configuration is listed before the first is measured: refuse a space
// too large to list (and far beyond any budget) before any work. Returns the
// space's size.
std::uint64_t check_sweep_size(const skills::VariantCatalog& catalog, const SweepOptions& options) {
  std::uint64_t total = 0;
  for (const auto& variant : catalog.variants) total += variant.space->size();
  const std::uint64_t listed = options.limit ? std::min(*options.limit, total) : total;
  if (listed > kMaxSweepConfigurations)
    throw UserError(
        "sweep: " + std::string(options.limit ? "--limit " + std::to_string(*options.limit) + ": " : "") +
        "the space has " + std::to_string(total) + " configurations; a sweep measures at most " +
        std::to_string(kMaxSweepConfigurations) + " (sample them with --limit N)");
  return total;
}

void open_or_resume(OpenedRun& out, const Goal& goal, const skills::VariantCatalog& catalog,
                    skills::MeasurementTarget& target, store::Store& store,
                    const std::string& simulator_version, const SweepOptions& options,
                    std::uint64_t configurations) {
  store::Run& record = out.record;
  if (options.resume) {
    const std::string flag = "--resume " + std::to_string(*options.resume);
    const auto existing = store.run(*options.resume);
    if (!existing) throw UserError(flag + ": no run with that id in " + store.location());
    if (existing->goal_name != goal.name + " (sweep)")
      throw UserError(flag + ": run " + std::to_string(existing->id) + " is '" + existing->goal_name +
                      "', not a sweep of '" + goal.name +
                      "'; resume it with the goal file it was started from");
    // The sample a --limit draws is seeded by the goal, and the space is the goal's: another goal under
    // the same name would measure other configurations into this run.
    if (existing->goal_yaml != store::redact_url_credentials(to_yaml(goal)))
      throw UserError(flag + ": the sweep was started from a different goal (" + existing->goal_name +
                      "); resume it with the same goal file");
    if (existing->simulator_version != simulator_version)
      throw UserError(flag + ": the run was measured with " + existing->simulator_version +
                      ", this build is " + simulator_version);
    // Another --limit draws another sample: its trials would join this run's. The plan, the sweep's
    // first decision, says how many configurations it set out to measure.
    for (const auto& decision : store.decisions(existing->id, std::string(kOrchestrator))) {
      if (decision.action != "sweep") continue;
      const Json planned = decision.evidence.value("configurations", Json());
      if (planned.is_number_unsigned() && planned.get<std::uint64_t>() != configurations)
        throw UserError(flag + ": the sweep set out to measure " +
                        std::to_string(planned.get<std::uint64_t>()) +
                        " configurations, this call would measure " + std::to_string(configurations) +
                        "; give the --limit it started with" +
                        (planned.get<std::uint64_t>() < decision.evidence.value("space", std::uint64_t(0))
                             ? " (--limit " + std::to_string(planned.get<std::uint64_t>()) + ")"
                             : " (none: it measured every configuration)"));
      break;
    }
    out.reopen(store, *existing);
  } else {
    record.goal_yaml = to_yaml(goal);
    record.goal_name = goal.name + " (sweep)";
    record.kernel = catalog.kernel;
    record.target = target.description();
    record.seed = goal.seed;
    record.simulator_version = simulator_version;
    out.open_new(store, options.started);
  }
}

// Every configuration of every variant, or with a limit a seeded uniform
// sample of them (in index order), so that a limited sweep sees every
// variant in proportion rather than the first ones only; without the goal's
// start point, which the sweep measures first.
std::vector<skills::Candidate> sweep_candidates(const Goal& goal, const skills::VariantCatalog& catalog,
                                                const SweepOptions& options, std::uint64_t total) {
  const bool sampled = options.limit && *options.limit < total;
  std::vector<std::uint64_t> chosen;  // global indices, ascending
  if (sampled) {
    // Floyd's algorithm: limit - 1 distinct indices of [0, total); the
    // start point makes the limit.
    Rng rng = Rng(goal.seed).fork("sweep sample");
    std::set<std::uint64_t> picked;
    const std::uint64_t sample = *options.limit > 0 ? *options.limit - 1 : 0;
    for (std::uint64_t j = total - sample; j < total; ++j) {
      const auto t = std::uint64_t(rng.uniform_int(0, std::int64_t(j)));
      picked.insert(picked.count(t) ? j : t);
    }
    chosen.assign(picked.begin(), picked.end());
  }
  std::vector<skills::Candidate> all;
  auto add_index = [&](std::uint64_t global) {
    for (const auto& variant : catalog.variants) {
      if (global < variant.space->size()) {
        all.push_back(
            {variant.name, search::to_json(*variant.space, variant.space->configuration_at(global))});
        return;
      }
      global -= variant.space->size();
    }
  };
  if (sampled)
    for (auto index : chosen) add_index(index);
  else
    for (std::uint64_t i = 0; i < total; ++i) add_index(i);
  const skills::Candidate& start = catalog.baseline;
  all.erase(std::remove_if(all.begin(), all.end(),
                           [&](const skills::Candidate& c) { return c.key() == start.key(); }),
            all.end());
  return all;
}

skills::SkillDecision sweep_plan(const skills::VariantCatalog& catalog, const SweepOptions& options,
                                 std::uint64_t total, std::uint64_t configurations) {
  skills::SkillDecision plan;
  plan.action = "sweep";
  plan.proposer = "user";
  Json sizes = Json::object();
  for (const auto& variant : catalog.variants) sizes[variant.name] = variant.space->size();
  plan.inputs = {{"variants", sizes}, {"jobs", options.jobs}};
  plan.evidence = {
      {"configurations", configurations}, {"space", total}, {"baseline", catalog.baseline.text()}};
  plan.rationale =
      options.limit && *options.limit < total
          ? "a seeded uniform sample of " + std::to_string(*options.limit) + " of the " +
                std::to_string(total) + " valid configurations, the goal's start point first"
          : "exhaustive evaluation of every valid configuration of the goal's space(s), the goal's "
            "start point first";
  return plan;
}

// The `top_k` best measured trials; ties go to the lower trial id, as in
// `autotune trials --top`.
std::vector<store::Trial> top_trials(const Goal& goal, const std::vector<store::Trial>& trials, int top_k) {
  std::vector<store::Trial> ranked;
  for (const auto& trial : trials)
    if (is_measured(trial.status) && objective_value(goal.objective, trial.metrics)) ranked.push_back(trial);
  std::sort(ranked.begin(), ranked.end(), [&](const store::Trial& a, const store::Trial& b) {
    const double va = *objective_value(goal.objective, a.metrics),
                 vb = *objective_value(goal.objective, b.metrics);
    return va < vb || (va == vb && a.id < b.id);
  });
  if (int(ranked.size()) > top_k) ranked.resize(std::size_t(top_k));
  return ranked;
}

}  // namespace

SweepResult run_sweep(const Goal& goal, const skills::VariantCatalog& catalog,
                      skills::MeasurementTarget& target, store::Store& store,
                      const std::string& simulator_version, const SweepOptions& options, int top_k) {
  const auto started = std::chrono::steady_clock::now();
  const std::uint64_t total = check_sweep_size(catalog, options);
  SweepResult result;
  const std::vector<skills::Candidate> all = sweep_candidates(goal, catalog, options, total);
  OpenedRun opened;
  open_or_resume(opened, goal, catalog, target, store, simulator_version, options, all.size() + 1);
  store::Run& record = opened.record;
  result.run_id = record.id;
  if (options.resume && options.started) options.started(record.id);

  // The goal's start point is the sweep's baseline: measured first, on its
  // own, whatever the job count, so every ratio the sweep shows is against it.
  const skills::Candidate& start = catalog.baseline;
  result.configurations = all.size() + 1;

  DecisionLog log(store, record.id, opened.already_logged);
  log.set_write_guard([&opened] { opened.lease->check(); });
  const int64_t seq =
      log.append(0, kOrchestrator, sweep_plan(catalog, options, total, result.configurations));

  skills::RunnerOptions runner_options;
  runner_options.jobs = options.jobs;
  runner_options.timeout_s = goal.timeout_s;
  runner_options.use_cache = options.use_cache;
  // Larger commit batches: a sweep has no reader waiting on each result.
  runner_options.commit_every = std::max(8, 2 * options.jobs);
  runner_options.commit_interval_s = 1.0;
  runner_options.queue = options.queue;
  runner_options.before_commit = [&opened] { opened.lease->check(); };
  if (options.queue) store.set_measurement_context(measurement_context(goal, record.id));
  skills::BenchmarkRunner runner(target, store, record.id, runner_options);
  runner.resume(opened.committed);

  std::uint64_t done = 0;
  auto measured_one = [&](const skills::MeasuredTrial&) {
    ++done;
    if (options.progress)
      options.progress(done, result.configurations,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                       runner.counters().active_workers);
  };
  auto baseline = runner.measure({{start, 0, seq}}, measured_one);
  log.append(0, skills::kBenchmarkRunner, baseline.decision);
  for (auto& measured : baseline.result) {
    if (is_measured(measured.trial.status)) {
      record.baseline_trial = measured.trial.id;
      store.update_run(record);
    }
    result.trials.push_back(std::move(measured.trial));
  }
  // With a queue, larger chunks keep remote workers busy across a chunk's end.
  const std::size_t chunk = std::size_t(std::max(options.queue ? 512 : 64, 16 * options.jobs));
  for (std::size_t begin = 0; begin < all.size(); begin += chunk) {
    std::vector<skills::TrialRequest> requests;
    for (std::size_t i = begin; i < std::min(all.size(), begin + chunk); ++i)
      requests.push_back({all[i], 0, seq});
    auto batch = runner.measure(requests, measured_one);
    log.append(0, skills::kBenchmarkRunner, batch.decision);
    for (auto& measured : batch.result) result.trials.push_back(std::move(measured.trial));
  }

  result.top = top_trials(goal, result.trials, top_k);
  result.counters = runner.counters();
  result.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  record.status = store::RunStatus::completed;
  record.stop_reason = "sweep finished: " + std::to_string(result.configurations) + " configurations";
  if (!result.top.empty()) record.best_trial = result.top.front().id;
  record.summary = {{"mode", "sweep"},
                    {"configurations", result.configurations},
                    {"measured", result.counters.measured},
                    {"cache_hits", result.counters.cache_hits},
                    {"wall_time_s", result.wall_time_s},
                    {"target_seconds", result.counters.target_seconds}};
  store.update_run(record);
  skills::SkillDecision end;
  end.action = "stop";
  end.proposer = "user";
  end.rationale = record.stop_reason;
  end.evidence = record.summary;
  log.append(0, kOrchestrator, end);
  return result;
}

}  // namespace autotune::orchestrator
