#pragma once
// The report and dashboard pages: self-contained HTML (ECharts, the page's
// script and style inlined), with the runs' documents (report_data.hpp)
// embedded as JSON.
#include <string>

#include "report/report_data.hpp"

namespace autotune::report {

struct PageOptions {
  std::string title;
  std::string subtitle;
  // Served by `autotune serve`: the page asks `api` (e.g. "/api/run/3") for
  // new trials every second.
  bool live = false;
  std::string api;
  // A suite's table (orchestrator/suite.hpp, SuiteResult::to_json): drawn
  // first, a row per task and target linking its run's section below.
  Json suite;
};

// The page for `runs` (documents of run_report, shown side by side).
std::string report_page(const Json& runs, const PageOptions& options);

// The dashboard's list of runs in `database` (it fetches /api/runs).
std::string index_page(const std::string& database);

}  // namespace autotune::report
