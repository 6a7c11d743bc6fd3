#pragma once
// `autotune serve`: a small read-only HTTP server (Boost.Beast on Boost.Asio)
// over one database: the list of runs, each run's page (report_page, live),
// and the same data as JSON.
//
//   GET /                           the runs (the page refreshes its list every 2 s)
//   GET /run/N                      run N's page; new trials appear without a reload
//   GET /api/runs                   runs_index
//   GET /api/run/N                  run_report (timelines included)
//   GET /api/run/N/trials?after=T   run_report of the trials after trial T (no timelines, no decisions)
#include <functional>
#include <string>

#include "store/store.hpp"

namespace autotune::report {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
};

// Answers one GET of `target` (path and query) from `store`. Unknown paths
// and runs are 404 with a one-line message.
HttpResponse handle_get(store::Store& store, const std::string& target);

struct ServeOptions {
  std::string address = "127.0.0.1";
  int port = 8080;
};

// Serves until the process is stopped. `ready` is called with the URL once
// the port is bound. A port in use or an address that cannot be bound is a
// UserError of one line.
void serve(store::Store& store, const ServeOptions& options,
           const std::function<void(const std::string&)>& ready);

}  // namespace autotune::report
