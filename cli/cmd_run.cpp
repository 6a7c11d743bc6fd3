// autotune run GOAL.yaml: the agentic loop.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <vector>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "orchestrator/model_run.hpp"
#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "store/store.hpp"

namespace autotune::cli {

namespace {

std::string seconds_text(double s) {
  char buffer[48];
  if (s >= 1)
    std::snprintf(buffer, sizeof buffer, "%.3f s", s);
  else if (s >= 1e-3)
    std::snprintf(buffer, sizeof buffer, "%.3f ms", s * 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.2f us", s * 1e6);
  return buffer;
}

// "82.3%", rounded to a tenth like the summary's.
std::string improvement_text(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", fraction * 100);
  return buffer;
}

std::string params_text(const nlohmann::json& params) {
  std::vector<std::string> items;
  for (const auto& [k, v] : params.items())
    if (k != "_")  // the placeholder of a variant without parameters
      items.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  const std::string out = join(items, " ");
  return out.empty() ? "(no parameters)" : out;
}

// "  MFU 12.3 %  1.23 TFLOP/s" for what the metrics report, else "".
std::string rates_text(const nlohmann::json& metrics) {
  std::string out;
  char buffer[64];
  if (!metrics.is_object()) return out;
  if (auto it = metrics.find("mfu_percent"); it != metrics.end() && it->is_number()) {
    std::snprintf(buffer, sizeof buffer, "  MFU %.1f %%", it->get<double>());
    out += buffer;
  }
  if (auto it = metrics.find("throughput_flops_per_s"); it != metrics.end() && it->is_number()) {
    std::snprintf(buffer, sizeof buffer, "  %.2f TFLOP/s", it->get<double>() / 1e12);
    out += buffer;
  }
  return out;
}

void print_summary(const orchestrator::RunSummary& s) {
  std::printf("run %lld: %s; goal %s\n", static_cast<long long>(s.run_id), s.status.c_str(),
              s.goal_met ? "met" : "not met");
  // Reasons and warnings may quote a plugin's or an LLM's words: printf
  // bypasses std::cout's escaping, so they are made safe here.
  std::printf("  stopped:     %s\n", log::terminal_safe(s.stop_reason).c_str());
  if (!s.kernel_text.empty()) std::printf("  kernel:      %s\n", s.kernel_text.c_str());
  const double base = s.baseline_metrics.is_object() ? s.baseline_metrics.value("latency_s", 0.0) : 0.0;
  const double best = s.best_metrics.is_object() ? s.best_metrics.value("latency_s", 0.0) : 0.0;
  if (!s.baseline.variant.empty())
    std::printf("  baseline:    %s %s  %s%s\n", s.baseline.variant.c_str(),
                params_text(s.baseline.params).c_str(), seconds_text(base).c_str(),
                rates_text(s.baseline_metrics).c_str());
  if (!s.best.variant.empty())
    std::printf("  best:        %s %s  %s%s\n", s.best.variant.c_str(), params_text(s.best.params).c_str(),
                seconds_text(best).c_str(), rates_text(s.best_metrics).c_str());
  if (base > 0 && best > 0)
    std::printf("  improvement: %.1f%% (%s objective; %s -> %s, %.2fx)\n", s.improvement * 100,
                s.objective.c_str(), seconds_text(base).c_str(), seconds_text(best).c_str(), base / best);
  std::printf(
      "  evaluations: %d (%d measured, %d from the cache, %d from committed trials), %d iterations, %.1f s\n",
      s.evaluations, s.measured, s.cache_hits, s.resumed_trials, s.iterations, s.wall_time_s);
  std::printf("  database:    %s (autotune log %lld --db %s)\n", s.db.c_str(),
              static_cast<long long>(s.run_id), s.db.c_str());
  if (!s.warnings.empty()) {
    // Only a completed run went on past them; a failed one stopped (the reason is under stopped:).
    const std::string after = s.status == "completed"     ? "the run went on past them"
                              : s.status == "interrupted" ? "then the run was interrupted"
                                                          : "the run " + s.status + " (stopped: above)";
    std::printf("  warnings:    %zu; %s:\n", s.warnings.size(), after.c_str());
    for (const auto& w : s.warnings) std::printf("    - %s\n", log::terminal_safe(w).c_str());
  }
}

void print_model_summary(const orchestrator::ModelGoal& goal, const orchestrator::ModelRunSummary& s,
                         const std::string& db) {
  std::printf("run %lld: model %s, %lld layers, seq %lld on %s; %s; goal %s\n",
              static_cast<long long>(s.run_id), goal.model.name.c_str(), (long long)goal.model.layers,
              (long long)goal.model.seq, goal.target.c_str(), s.status.c_str(),
              s.goal_met ? "met" : "not met");
  // Reasons and warnings may quote a plugin's or an LLM's words: printf
  // bypasses std::cout's escaping, so they are made safe here.
  std::printf("  stopped:     %s\n", log::terminal_safe(s.stop_reason).c_str());
  std::printf("  baseline:    every operator at its family's baseline  %s  MFU %.1f %%\n",
              seconds_text(s.baseline_latency_s).c_str(), s.baseline.mfu_percent);
  std::printf("  tuned:       %s  MFU %.1f %%; the operators' roofline bounds sum to %s (%.2fx)\n",
              seconds_text(s.best_latency_s).c_str(), s.tuned.mfu_percent,
              seconds_text(s.tuned.roofline_s).c_str(),
              s.tuned.roofline_s > 0 ? s.best_latency_s / s.tuned.roofline_s : 0.0);
  std::printf("  improvement: %.1f%% of the forward's latency removed (%.2fx)\n", s.improvement * 100,
              s.best_latency_s > 0 ? s.baseline_latency_s / s.best_latency_s : 0.0);
  std::printf("  operators:   %-14s %12s %7s  %12s %7s  %s\n", "", "baseline", "share", "tuned", "share",
              "configuration");
  for (std::size_t i = 0; i < s.tuned.operators.size() && i < s.baseline.operators.size(); ++i) {
    const auto& b = s.baseline.operators[i];
    const auto& t = s.tuned.operators[i];
    std::string config = t.config.variant;
    for (const auto& [k, v] : t.config.params) config += " " + k + "=" + std::to_string(v);
    std::printf("               %-14s %12s %6.1f%%  %12s %6.1f%%  %s%s\n", t.op.name.c_str(),
                seconds_text(b.latency_s * double(b.op.calls)).c_str(), b.share_percent,
                seconds_text(t.latency_s * double(t.op.calls)).c_str(), t.share_percent, config.c_str(),
                t.config.source == "tuned" ? "" : (" (" + t.config.source + ")").c_str());
  }
  if (s.check)
    std::printf("  end to end:  at seq %lld, MSE %.3g, cosine %.6f: %s%s\n", (long long)s.check->seq,
                s.check->mse, s.check->cosine_similarity, s.check->passed ? "passed" : "FAILED",
                s.check->error.empty() ? "" : (": " + s.check->error).c_str());
  std::printf("  evaluations: %d in %d kernel loops (runs", s.evaluations, int(s.kernel_runs.size()));
  for (auto id : s.kernel_runs) std::printf(" %lld", static_cast<long long>(id));
  std::printf("), %.1f s\n", s.wall_time_s);
  std::printf("  database:    %s (autotune log %lld --db %s)\n", db.c_str(), static_cast<long long>(s.run_id),
              db.c_str());
}

const CommandRegistration registration(
    "run", "Run the agentic tuning loop on a goal (YAML)", [](CLI::App& app) -> CommandAction {
      struct Options {
        std::string goal;
        std::optional<int> jobs;
        std::optional<std::uint64_t> seed;
        std::optional<std::string> db;
        std::optional<int64_t> resume;
        bool json = false;
        bool no_cache = false;
      };
      auto options = std::make_shared<Options>();
      app.add_option("goal", options->goal, "Goal file (YAML)")->required();
      app.add_option("--jobs,-j", options->jobs, "Parallel workers (default: the goal's `parallel`)")
          ->check(whole_number_in(0, orchestrator::kMaxParallel, jobs_accepted_text()));
      app.add_option("--seed", options->seed, "Run seed (default: the goal's `seed`, else 0)")
          ->check(check_uint64);
      app.add_option("--db", options->db,
                     "Decision database: a file, or postgresql://USER@HOST[:PORT]/DBNAME (default: "
                     "$AUTOTUNE_DB, else ./autotune.db)");
      app.add_option("--resume", options->resume, "Continue an interrupted run with this id")
          ->check(check_id);
      app.add_flag("--json", options->json, "Print the summary as one JSON object on stdout");
      app.add_flag("--no-cache", options->no_cache, "Measure everything, ignoring earlier runs' results");
      return [options]() -> int {
        const std::string db = store::resolve_database_path(options->db);
        // A shared database measures through its queue, with workers: --jobs 0 leaves them all of it.
        const bool queue = store::is_postgres_url(db) && !orchestrator::is_model_goal(options->goal);
        const int min_jobs = queue ? 0 : 1;
        if (options->jobs && (*options->jobs < min_jobs || *options->jobs > orchestrator::kMaxParallel))
          throw UserError("--jobs " + std::to_string(*options->jobs) +
                          " is out of range; accepted: " + std::to_string(min_jobs) + " to " +
                          std::to_string(orchestrator::kMaxParallel) + " (omit it for the goal's `parallel`" +
                          (queue ? "" : "; 0, all measuring left to workers, needs a PostgreSQL --db") + ")");
        if (orchestrator::is_model_goal(options->goal)) {
          if (options->resume) throw UserError("--resume is for kernel goals; a model goal starts afresh");
          auto goal = orchestrator::load_model_goal(options->goal);
          if (options->jobs) goal.parallel = *options->jobs;
          if (options->seed) goal.seed = *options->seed;
          auto store = store::open_store(db);
          const bool tty = isatty(fileno(stderr)) != 0;
          std::string last;
          // The model run and the kernel run whose loop is going: an interruption records both.
          std::mutex running_mutex;
          std::vector<int64_t> running;
          const interrupt::OnInterrupt on_interrupt([&](int signal) {
            std::vector<int64_t> ids;
            {
              std::lock_guard lock(running_mutex);
              ids.assign(running.rbegin(), running.rend());  // the kernel run first: it commits trials
            }
            record_interruption(*store, db, ids, signal,
                                "autotune run " + options->goal + " --db " + store->location() +
                                    " (a model goal starts afresh)");
          });
          auto on_running = [&](int64_t run, bool started) {
            std::lock_guard lock(running_mutex);
            if (started)
              running.push_back(run);
            else
              std::erase(running, run);
          };
          const auto summary = orchestrator::run_model_goal(
              goal, *store,
              [&](const orchestrator::Progress& p) {
                char line[320];
                std::snprintf(line, sizeof line, "iteration %d/%d  evaluations %d/%d  forward %s  [%s]",
                              p.iteration, p.max_iterations, p.evaluations, p.budget,
                              p.best_latency_s ? seconds_text(*p.best_latency_s).c_str() : "-",
                              p.phase.c_str());
                // Plain lines only when the phase or the forward changed.
                const std::string key = p.phase + (p.best_latency_s ? seconds_text(*p.best_latency_s) : "");
                if (tty)
                  std::fprintf(stderr, "\r\033[K%s", line);
                else if (key != last)
                  std::fprintf(stderr, "%s\n", line);
                last = key;
              },
              on_running);
          if (tty) std::fprintf(stderr, "\n");
          if (options->json)
            std::cout << summary.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      << std::endl;
          else
            print_model_summary(goal, summary, store->location());
          return summary.status == "completed" ? 0 : 1;
        }
        auto prepared = orchestrator::load_and_prepare(options->goal);
        // The compiler's message in full; the run records it as a failed trial.
        if (!prepared.setup.kernel_source_failure.empty())
          std::fprintf(stderr, "autotune: kernel source %s: %s\n", prepared.goal.kernel_source.c_str(),
                       prepared.setup.kernel_source_failure.c_str());
        // A run to resume is in a database that exists; a PostgreSQL one must exist in either mode, and
        // keeps a writer's outage wait.
        auto store =
            store::open_store(db, options->resume && !store::is_postgres_url(db) ? store::OpenMode::existing
                                                                                 : store::OpenMode::create);
        const bool tty = isatty(fileno(stderr)) != 0;
        orchestrator::RunOptions run_options;
        run_options.queue = queue;
        run_options.jobs = queue ? options->jobs.value_or(prepared.goal.parallel) : options->jobs.value_or(0);
        run_options.seed = options->seed;
        run_options.resume = options->resume;
        run_options.use_cache = !options->no_cache;
        std::string last_line;
        int64_t announced_run = 0;
        std::atomic<int64_t> started_run{0};
        run_options.started = [&](int64_t run_id) { started_run = run_id; };
        const interrupt::OnInterrupt on_interrupt([&](int signal) {
          const int64_t id = started_run.load();
          record_interruption(*store, id, signal,
                              "autotune run " + options->goal + " --resume " + std::to_string(id) + " --db " +
                                  store->location());
        });
        run_options.progress = [&](const orchestrator::Progress& p) {
          if (p.run_id != announced_run) {
            announced_run = p.run_id;
            started_run = p.run_id;
          }
          char line[256];
          std::snprintf(line, sizeof line,
                        "iteration %d/%d  evaluations %d/%d  best %s  improvement %s  [%s]%s", p.iteration,
                        p.max_iterations, p.evaluations, p.budget,
                        p.best_latency_s ? seconds_text(*p.best_latency_s).c_str() : "-",
                        p.improvement ? improvement_text(*p.improvement).c_str() : "-", p.phase.c_str(),
                        queue ? ("  workers " + std::to_string(p.active_workers)).c_str() : "");
          if (tty) {
            std::fprintf(stderr, "\r\033[K%s", line);
            std::fflush(stderr);
          } else {
            // Plain lines only when something other than the count changed.
            char key[256];
            std::snprintf(key, sizeof key, "%d %s %s", p.iteration, p.phase.c_str(),
                          p.best_latency_s ? seconds_text(*p.best_latency_s).c_str() : "-");
            if (key != last_line) std::fprintf(stderr, "%s\n", line);
            last_line = key;
          }
        };
        run_options.warning = [&](const std::string& line) {
          if (tty) std::fprintf(stderr, "\r\033[K");
          std::fprintf(stderr, "autotune: warning: %s\n", log::terminal_safe(line).c_str());
        };
        orchestrator::RunContext context{
            prepared.goal, prepared.setup.catalog,           *prepared.setup.target,
            *store,        prepared.setup.simulator_version, run_options};
        orchestrator::Orchestrator loop(context);
        const auto summary = loop.run();
        if (tty) std::fprintf(stderr, "\n");
        if (options->json) {
          std::cout << summary.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                    << std::endl;
        } else {
          print_summary(summary);
        }
        return summary.status == "completed" ? 0 : 1;
      };
    });

}  // namespace

}  // namespace autotune::cli
