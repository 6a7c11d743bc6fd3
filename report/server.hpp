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
//
// HEAD answers as GET without the body. It has no authentication: a request
// whose Host is not an address, localhost, this machine's name or one of
// `allowed_hosts` is refused (403) so that a web page cannot reach it through
// DNS rebinding. Connections are bounded (a 503 beyond `max_connections`) and
// one idle for `idle_timeout_s` is closed.
#include <functional>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace autotune::report {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
};

// Answers one GET of `target` (path and query) from `store`. Unknown paths
// and runs are 404 with a one-line message; a query parameter a path needs
// and lacks is a 400 (parameters it does not take are ignored); any other
// failure (a stored value the reader cannot use) is a 500 with one line,
// never the server's end.
HttpResponse handle_get(store::Store& store, const std::string& target);

// Whether a request's Host header (name or address, with or without a port)
// is one the server answers to: an IP address, localhost, this machine's
// host name, or one of `names` (lower case).
bool host_allowed(const std::string& host, const std::vector<std::string>& names);

struct ServeOptions {
  std::string address = "127.0.0.1";
  int port = 8080;
  std::vector<std::string> allowed_hosts;  // --allow-host: names a reverse proxy forwards as Host
  int max_connections = 64;
  int idle_timeout_s = 30;
};

// Serves until the process is stopped. `ready` is called with the URL once
// the port is bound, `warn` with a warning when the address is not loopback.
// A port in use or an address that cannot be bound is a UserError of one line.
void serve(store::Store& store, const ServeOptions& options,
           const std::function<void(const std::string&)>& ready,
           const std::function<void(const std::string&)>& warn);

}  // namespace autotune::report
