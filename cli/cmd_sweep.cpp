// autotune sweep GOAL.yaml --jobs N: every configuration of the goal's space(s).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/text.hpp"
#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "orchestrator/sweep.hpp"
#include "store/store.hpp"

namespace autotune::cli {

namespace {

const CommandRegistration registration(
    "sweep", "Evaluate every configuration of a goal's space(s) in parallel",
    [](CLI::App& app) -> CommandAction {
      struct Options {
        std::string goal;
        int jobs = 1;
        std::optional<std::string> db;
        int top = 10;
        std::optional<std::uint64_t> limit;
        bool json = false;
        bool no_cache = false;
        std::optional<int64_t> resume;
      };
      auto options = std::make_shared<Options>();
      app.add_option("goal", options->goal, "Goal file (YAML)")->required();
      app.add_option("--jobs,-j", options->jobs,
                     "Parallel local workers (with a PostgreSQL --db, 0 leaves all measuring to `autotune "
                     "worker` processes)")
          ->default_val(1)
          ->check(whole_number_in(0, orchestrator::kMaxParallel, jobs_accepted_text()));
      app.add_option("--db", options->db,
                     "Decision database: a file, or postgresql://USER@HOST[:PORT]/DBNAME (default: "
                     "$AUTOTUNE_DB, else ./autotune.db)");
      app.add_option("--top", options->top, "How many of the best configurations to print")
          ->default_val(10)
          ->check(whole_number_in(1, 1000000));
      app.add_option("--limit", options->limit,
                     "Evaluate at most this many configurations: the goal's start point and a uniform sample "
                     "of the rest, seeded by the goal's seed")
          ->check(check_uint64);
      app.add_flag("--json", options->json, "Print the result as one JSON object on stdout");
      app.add_flag("--no-cache", options->no_cache, "Measure everything, ignoring earlier runs' results");
      app.add_option("--resume", options->resume,
                     "Continue an interrupted sweep with this run id (its committed trials are not measured "
                     "again; give the same --limit)")
          ->check(check_id);
      return [options]() -> int {
        const std::string db = store::resolve_database_path(options->db);
        // A shared database measures through its queue, with workers: --jobs 0 leaves them all of it.
        const bool queue = store::is_postgres_url(db);
        const int min_jobs = queue ? 0 : 1;
        if (options->jobs < min_jobs || options->jobs > orchestrator::kMaxParallel)
          throw UserError("--jobs " + std::to_string(options->jobs) + " is out of range; accepted: " +
                          std::to_string(min_jobs) + " to " + std::to_string(orchestrator::kMaxParallel) +
                          (queue ? "" : " (0, all measuring left to workers, needs a PostgreSQL --db)"));
        if (options->top < 1) throw UserError("--top must be at least 1");
        if (options->limit && *options->limit < 1) throw UserError("--limit must be at least 1");
        auto prepared = orchestrator::load_and_prepare(options->goal);
        // The compiler's message in full; the sweep records it as a failed trial and exits 1.
        const bool unbuilt = !prepared.setup.kernel_source_failure.empty();
        if (unbuilt)
          std::fprintf(stderr, "autotune: kernel source %s: %s\n", prepared.goal.kernel_source.c_str(),
                       prepared.setup.kernel_source_failure.c_str());
        auto store = store::open_store(db);
        const bool tty = isatty(fileno(stderr)) != 0;
        orchestrator::SweepOptions sweep_options;
        sweep_options.jobs = options->jobs;
        sweep_options.queue = queue;
        sweep_options.use_cache = !options->no_cache;
        sweep_options.limit = options->limit;
        sweep_options.resume = options->resume;
        // SIGINT or SIGTERM (core/interrupt: children are killed first): the
        // run is recorded as interrupted, and the message says how to resume.
        std::atomic<int64_t> started_run{0};
        const interrupt::OnInterrupt on_interrupt([&](int signal) {
          const int64_t id = started_run.load();
          record_interruption(*store, id, signal,
                              "autotune sweep " + options->goal + " --resume " + std::to_string(id) +
                                  " --db " + store->location() +
                                  (options->limit ? " --limit " + std::to_string(*options->limit) : ""));
        });
        sweep_options.started = [&](int64_t run_id) { started_run = run_id; };
        int last_decile = -1;
        sweep_options.progress = [&](std::uint64_t done, std::uint64_t total, double elapsed,
                                     std::int64_t workers) {
          const double eta = done > 0 ? elapsed / double(done) * double(total - done) : 0;
          char line[160];
          std::snprintf(line, sizeof line, "%llu/%llu configurations  %.1f s elapsed  ETA %.1f s%s",
                        static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                        elapsed, eta, queue ? ("  workers " + std::to_string(workers)).c_str() : "");
          if (tty) {
            std::fprintf(stderr, "\r\033[K%s", line);
          } else if (int decile = int(10 * done / std::max<std::uint64_t>(total, 1)); decile != last_decile) {
            std::fprintf(stderr, "%s\n", line);
            last_decile = decile;
          }
        };
        const auto result =
            orchestrator::run_sweep(prepared.goal, prepared.setup.catalog, *prepared.setup.target, *store,
                                    prepared.setup.simulator_version, sweep_options, options->top);
        if (tty) std::fprintf(stderr, "\n");
        const auto& c = result.counters;
        // Trials that did not pass (invalid, wrong answer, failed, timed out): a
        // sweep of nothing but these names no best configuration.
        const auto failed =
            std::count_if(result.trials.begin(), result.trials.end(),
                          [](const store::Trial& t) { return t.status != Outcome::ok; });
        if (options->json) {
          nlohmann::json top = nlohmann::json::array();
          for (const auto& t : result.top)
            top.push_back(
                {{"trial", t.id}, {"variant", t.variant}, {"params", t.params}, {"metrics", t.metrics}});
          std::cout << nlohmann::json{{"run_id", result.run_id},
                                      {"kernel", orchestrator::kernel_json(prepared.goal)},
                                      {"configurations", result.configurations},
                                      {"measured", c.measured},
                                      {"cache_hits", c.cache_hits},
                                      {"resumed", c.resumed},
                                      {"measured_by_workers", c.measured_by_workers},
                                      {"failed", failed},
                                      {"jobs", options->jobs},
                                      {"wall_time_s", result.wall_time_s},
                                      {"target_seconds", c.target_seconds},
                                      {"commit_seconds", c.commit_seconds},
                                      {"top", top},
                                      {"db", store->location()}}
                           .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                    << std::endl;
          return unbuilt ? 1 : 0;
        }
        std::printf(
            "sweep run %lld: %llu configurations (%lld measured%s, %lld from the cache, %lld from committed "
            "trials; %lld failed) in %.1f s with %d jobs\n",
            static_cast<long long>(result.run_id), static_cast<unsigned long long>(result.configurations),
            static_cast<long long>(c.measured),
            queue ? (", " + std::to_string(c.measured_by_workers) + " of them by workers").c_str() : "",
            static_cast<long long>(c.cache_hits), static_cast<long long>(c.resumed),
            static_cast<long long>(failed), result.wall_time_s, options->jobs);
        if (const std::string kernel = orchestrator::kernel_text(prepared.goal); !kernel.empty())
          std::printf("kernel: %s\n", kernel.c_str());
        const auto objective = prepared.goal.objective;
        if (result.top.empty())
          std::printf("no configuration passed: every one failed (autotune trials %lld --db %s says why)\n",
                      static_cast<long long>(result.run_id), store->location().c_str());
        else
          std::printf("top %zu by %s:\n", result.top.size(), orchestrator::to_string(objective));
        int rank = 1;
        for (const auto& t : result.top) {
          std::vector<std::string> assignments;
          for (const auto& [k, v] : t.params.items())
            if (k != "_") assignments.push_back(k + "=" + v.dump());  // "_": no parameters
          const std::string params = join(assignments, " ");
          // The objective's own figure first, then the latency.
          std::string figures;
          char text[64];
          if (objective == orchestrator::Objective::mfu) {
            std::snprintf(text, sizeof text, "MFU %.1f%%  ", t.metrics.value("mfu_percent", 0.0));
            figures = text;
          } else if (objective == orchestrator::Objective::throughput) {
            std::snprintf(text, sizeof text, "%.2f TFLOP/s  ",
                          t.metrics.value("throughput_flops_per_s", 0.0) / 1e12);
            figures = text;
          }
          const double latency = t.metrics.value("latency_s", 0.0);
          if (latency >= 1)
            std::snprintf(text, sizeof text, "%.3f s", latency);
          else if (latency >= 1e-3)
            std::snprintf(text, sizeof text, "%.3f ms", latency * 1e3);
          else
            std::snprintf(text, sizeof text, "%.2f us", latency * 1e6);
          figures += text;
          std::printf("  %2d. trial %-6lld %-12s %-60s %s\n", rank++, static_cast<long long>(t.id),
                      t.variant.c_str(), params.c_str(), figures.c_str());
        }
        std::printf("database: %s (autotune trials %lld --db %s)\n", store->location().c_str(),
                    static_cast<long long>(result.run_id), store->location().c_str());
        return unbuilt ? 1 : 0;
      };
    });

}  // namespace

}  // namespace autotune::cli
