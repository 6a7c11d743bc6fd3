// autotune report RUN [RUN...] -o report.html: one self-contained HTML page.
// autotune report --suite SUITE.yaml -o suite.html: a suite's table, a row per task linking its run.
// autotune trace RUN TRIAL -o trace.json: a trial's Perfetto trace, re-simulated.
// autotune serve --db DB [--port 8080]: the runs, live, in a browser.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "core/text.hpp"
#include "orchestrator/suite.hpp"
#include "report/html.hpp"
#include "report/report_data.hpp"
#include "report/server.hpp"
#include "store/report.hpp"

namespace autotune::cli {
namespace {

// What -o must not replace: the database the command reads, and its other inputs.
std::vector<KeptFile> read_files(const DatabaseOption& db, const std::optional<std::string>& suite = {}) {
  auto files = store::database_files(db.path());
  if (suite) files.push_back({*suite, "the suite file it reads"});
  return files;
}

const CommandRegistration report_registration(
    "report", "Write runs as one self-contained HTML page: convergence, importance, timelines, decisions",
    [](CLI::App& app) -> CommandAction {
      struct Options {
        DatabaseOption db;
        std::vector<int64_t> runs;
        std::string output = "report.html";
        std::size_t max_points = 5000;
        bool no_timelines = false;
        std::optional<std::string> suite;
      };
      auto o = std::make_shared<Options>();
      add_database_option(app, o->db);
      app.add_option("runs", o->runs, "Run ids (several: their curves side by side)")->check(check_id);
      app.add_option(
          "--suite", o->suite,
          "A suite file (docs/suite.md): its table, a row per task and target, then each task's run");
      app.add_option("-o,--output", o->output, "The HTML file to write")->default_val("report.html");
      app.add_option("--max-points", o->max_points,
                     "Trials drawn per run at most; beyond, a seeded sample keeping every improvement")
          ->default_val(5000);
      app.add_flag("--no-timelines", o->no_timelines,
                   "Skip re-simulating the baseline's and best's timelines");
      return [o]() -> int {
        if (o->max_points < 10) throw UserError("--max-points must be at least 10");
        if (o->runs.empty() == !o->suite)
          throw UserError(o->suite ? "give run ids or --suite, not both"
                                   : "give run ids, or --suite SUITE.yaml");
        for (std::size_t i = 0; i < o->runs.size(); ++i)
          if (std::find(o->runs.begin(), o->runs.begin() + i, o->runs[i]) != o->runs.begin() + i)
            throw UserError("run " + std::to_string(o->runs[i]) + " is given twice; give each run once");
        const auto started = std::chrono::steady_clock::now();
        // The suite file first: a mistake in it is found before the database is opened.
        std::optional<orchestrator::Suite> suite;
        if (o->suite) suite = orchestrator::load_suite(*o->suite);
        check_output_path(o->output, "-o", read_files(o->db, o->suite));
        auto store = open_store_for_reading(o->db);
        report::ReportOptions options;
        options.max_points = o->max_points;
        options.timelines = !o->no_timelines;
        report::PageOptions page;
        if (suite) {
          orchestrator::SuiteResult table;
          table.rows = orchestrator::suite_rows(*suite, *store);
          for (const auto& row : table.rows) {
            table.wall_time_s += row.wall_time_s;
            if (row.run) o->runs.push_back(*row.run);
          }
          page.suite = table.to_json(*suite, store->location());
          page.title = "autotune suite " + suite->name;
        } else {
          page.title = (o->runs.size() == 1 ? "autotune run " : "autotune runs ") + join(o->runs, ", ");
        }
        nlohmann::json runs = nlohmann::json::array();
        for (int64_t id : o->runs) runs.push_back(report::run_report(*store, id, options));
        page.subtitle = store->location();
        const std::string html = report::report_page(runs, page);
        write_output_file(o->output, html, "-o", read_files(o->db, o->suite));
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::printf("wrote %s: %s, %.1f MB in %.2f s (open it in a browser; it needs no network)\n",
                    o->output.c_str(), page.title.c_str(), double(html.size()) / 1e6, took);
        return 0;
      };
    });

const CommandRegistration trace_registration(
    "trace", "Write a Chrome/Perfetto trace of any trial of a run, re-simulated from its configuration",
    [](CLI::App& app) -> CommandAction {
      struct Options {
        DatabaseOption db;
        int64_t run = 0;
        int64_t trial = 0;
        std::string output = "trace.json";
      };
      auto o = std::make_shared<Options>();
      add_database_option(app, o->db);
      app.add_option("run", o->run, "Run id")->required()->check(check_id);
      app.add_option("trial", o->trial, "Trial id (see `autotune trials RUN`)")->required()->check(check_id);
      app.add_option("-o,--output", o->output, "The trace file to write")->default_val("trace.json");
      return [o]() -> int {
        check_output_path(o->output, "-o", read_files(o->db));
        auto store = open_store_for_reading(o->db);
        const store::Run run = store::report::require_run(*store, o->run);
        const store::Trial trial = store::report::require_trial(*store, o->run, o->trial);
        write_output_file(o->output, report::trial_trace(run, trial).dump(), "-o", read_files(o->db));
        std::printf("wrote %s: trial %lld of run %lld (%s), open in ui.perfetto.dev\n", o->output.c_str(),
                    static_cast<long long>(trial.id), static_cast<long long>(run.id), trial.variant.c_str());
        return 0;
      };
    });

const CommandRegistration serve_registration(
    "serve",
    "Serve the runs of a database as live pages and JSON (read-only; 127.0.0.1 unless told otherwise)",
    [](CLI::App& app) -> CommandAction {
      struct Options {
        DatabaseOption db;
        report::ServeOptions serve;
      };
      auto o = std::make_shared<Options>();
      add_database_option(app, o->db);
      app.add_option("--port", o->serve.port, "TCP port (0: any free one)")->default_val(8080);
      app.add_option("--address", o->serve.address, "Address to listen on")->default_val("127.0.0.1");
      app.add_option("--allow-host", o->serve.allowed_hosts,
                     "A host name the server answers to besides addresses, localhost and this machine's "
                     "name (the name a reverse proxy forwards); repeatable");
      app.add_option("--max-connections", o->serve.max_connections,
                     "Connections served at once; beyond, a client is answered 503")
          ->default_val(64)
          ->check(CLI::Range(1, 10000));
      app.add_option("--idle-timeout", o->serve.idle_timeout_s,
                     "Seconds a connection may stay idle (or send a request slowly) before it is closed")
          ->default_val(30)
          ->check(CLI::Range(1, 3600));
      return [o]() -> int {
        auto store = open_store_for_reading(o->db);
        report::serve(
            *store, o->serve,
            [&](const std::string& url) {
              std::printf("serving %s at %s (Ctrl-C to stop)\n", store->location().c_str(), url.c_str());
              std::fflush(stdout);
            },
            [](const std::string& warning) {
              std::fprintf(stderr, "autotune: warning: %s\n", warning.c_str());
            });
        return 0;
      };
    });

}  // namespace
}  // namespace autotune::cli
