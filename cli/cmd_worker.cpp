// autotune worker --db URL [--jobs N] [--idle-exit SECONDS]: measures the
// queued candidates of running runs and sweeps in a shared database.
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "orchestrator/worker.hpp"

namespace autotune::cli {
namespace {

const CommandRegistration registration(
    "worker", "Measure queued candidates of the runs and sweeps in a shared database (docs/distributed.md)",
    [](CLI::App& app) -> CommandAction {
      struct Options {
        DatabaseOption db;
        int jobs = 1;
        std::optional<double> idle_exit;
        double lease = 30;
        bool json = false;
      };
      auto options = std::make_shared<Options>();
      add_database_option(app, options->db);
      app.add_option("--jobs,-j", options->jobs, "Candidates measured at once")
          ->default_val(1)
          ->check(whole_number_in(1, 256));
      app.add_option("--idle-exit", options->idle_exit,
                     "Leave after this many seconds with nothing to measure (default: run until stopped)");
      app.add_option("--lease", options->lease,
                     "Seconds after which a claim of a worker that stopped heartbeating goes to another")
          ->default_val(30);
      app.add_flag("--json", options->json, "Print the summary as one JSON object on stdout");
      return [options]() -> int {
        orchestrator::WorkerOptions worker_options;
        worker_options.jobs = options->jobs;
        worker_options.idle_exit_s = options->idle_exit;
        worker_options.lease_s = options->lease;
        orchestrator::check_worker_options(worker_options);
        // Runs and sweeps on an SQLite file measure in their own process and queue nothing: a worker
        // there would wait for ever (and create the file if the name were mistyped).
        if (const std::string db = options->db.path(); !store::is_postgres_url(db))
          throw UserError("worker --db " + db +
                          ": workers share the runs of a PostgreSQL database (postgresql://...); runs on an "
                          "SQLite file measure in their own process (docs/distributed.md)");
        auto store = open_store_for_writing(options->db);
        worker_options.note = [](const std::string& line) {
          std::fprintf(stderr, "worker: %s\n", line.c_str());
          std::fflush(stderr);
        };
        // Interrupted, the worker just leaves: its claims go to other workers after the lease. The
        // store is frozen first, so that a measurement the interruption kills is not stored as failed.
        const interrupt::OnInterrupt on_interrupt([&store](int) {
          store->freeze();
          std::fprintf(stderr,
                       "\nworker: interrupted; its unfinished claims go to other workers after the lease\n");
        });
        std::fprintf(stderr, "worker: measuring queued candidates in %s with %d jobs\n",
                     store->location().c_str(), options->jobs);
        const auto summary = orchestrator::run_worker(*store, worker_options);
        if (options->json) {
          std::cout << nlohmann::json{{"worker", summary.id},
                                      {"measured", summary.measured},
                                      {"discarded", summary.discarded},
                                      {"runs", summary.runs},
                                      {"mean_claim_s", summary.mean_claim_s},
                                      {"wall_time_s", summary.wall_time_s}}
                           .dump()
                    << std::endl;
        } else {
          std::printf(
              "worker %s: %lld measured for %lld runs (%lld discarded: handed to another worker) in %.1f s\n",
              summary.id.c_str(), static_cast<long long>(summary.measured),
              static_cast<long long>(summary.runs), static_cast<long long>(summary.discarded),
              summary.wall_time_s);
        }
        return 0;
      };
    });

}  // namespace
}  // namespace autotune::cli
