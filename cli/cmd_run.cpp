// autotune run GOAL.yaml: the agentic loop.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "cli/command.hpp"
#include "core/error.hpp"
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

std::string params_text(const nlohmann::json& params) {
  std::string out;
  for (const auto& [k, v] : params.items())
    out += (out.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
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
  std::printf("  stopped:     %s\n", s.stop_reason.c_str());
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
}

const CommandRegistration registration(
    "run", "Run the agentic tuning loop on a goal (YAML)", [](CLI::App& app) -> CommandAction {
      struct Options {
        std::string goal;
        int jobs = 0;
        std::optional<std::uint64_t> seed;
        std::optional<std::string> db;
        std::optional<int64_t> resume;
        bool json = false;
        bool no_cache = false;
      };
      auto options = std::make_shared<Options>();
      app.add_option("goal", options->goal, "Goal file (YAML)")->required();
      app.add_option("--jobs,-j", options->jobs, "Parallel workers (default: the goal's `parallel`)");
      app.add_option("--seed", options->seed, "Run seed (default: the goal's `seed`, else 0)");
      app.add_option("--db", options->db, "Database (default: $AUTOTUNE_DB, else ./autotune.db)");
      app.add_option("--resume", options->resume, "Continue an interrupted run with this id");
      app.add_flag("--json", options->json, "Print the summary as one JSON object on stdout");
      app.add_flag("--no-cache", options->no_cache, "Measure everything, ignoring earlier runs' results");
      return [options]() -> int {
        if (options->jobs < 0) throw UserError("--jobs must be at least 1");
        auto prepared = orchestrator::load_and_prepare(options->goal);
        // The compiler's message in full; the run records it as a failed trial.
        if (!prepared.setup.kernel_source_failure.empty())
          std::fprintf(stderr, "autotune: kernel source %s: %s\n", prepared.goal.kernel_source.c_str(),
                       prepared.setup.kernel_source_failure.c_str());
        const std::string db = store::resolve_database_path(options->db);
        auto store = store::open_store(db);
        const bool tty = isatty(fileno(stderr)) != 0;
        orchestrator::RunOptions run_options;
        run_options.jobs = options->jobs;
        run_options.seed = options->seed;
        run_options.resume = options->resume;
        run_options.use_cache = !options->no_cache;
        std::string last_line;
        run_options.progress = [&](const orchestrator::Progress& p) {
          char line[256];
          std::snprintf(
              line, sizeof line, "iteration %d/%d  evaluations %d/%d  best %s  improvement %s  [%s]",
              p.iteration, p.max_iterations, p.evaluations, p.budget,
              p.best_latency_s ? seconds_text(*p.best_latency_s).c_str() : "-",
              p.improvement ? (std::to_string(int(*p.improvement * 1000) / 10.0).substr(0, 5) + "%").c_str()
                            : "-",
              p.phase.c_str());
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
        orchestrator::RunContext context{
            prepared.goal, prepared.setup.catalog,           *prepared.setup.target,
            *store,        prepared.setup.simulator_version, run_options};
        orchestrator::Orchestrator loop(context);
        const auto summary = loop.run();
        if (tty) std::fprintf(stderr, "\n");
        if (options->json) {
          std::cout << summary.to_json().dump() << std::endl;
        } else {
          print_summary(summary);
        }
        return summary.status == "completed" ? 0 : 1;
      };
    });

}  // namespace

}  // namespace autotune::cli
