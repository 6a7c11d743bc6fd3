// The report's document and the dashboard's routes, on stores built here.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "core/error.hpp"
#include "report/html.hpp"
#include "report/report_data.hpp"
#include "report/server.hpp"
#include "store/store.hpp"

using namespace autotune;
using namespace autotune::store;
using autotune::report::Json;

namespace {

// A run over two parameters: `tile` decides the latency (x10 per step), `noise` barely moves it.
int64_t seeded_run(Store& store, int trials, bool with_failures = true) {
  Run run;
  run.goal_name = "g";
  run.goal_yaml = "name: g\nobjective: latency\ngoal: {improvement: 0.5}\n";
  run.kernel = "command";
  run.target = "command";
  run.simulator_version = "sim-x";
  run.seed = 3;
  const int64_t id = store.create_run(run);
  Decision decision;
  decision.run = id;
  decision.skill = "param_explorer";
  decision.action = "propose";
  decision.proposer = "rules";
  store.append_decision(decision);
  std::vector<Trial> batch;
  for (int i = 0; i < trials; ++i) {
    Trial t;
    t.run = id;
    t.decision_seq = decision.seq;
    t.variant = i % 2 ? "a" : "b";
    const int tile = i % 3, noise = i % 5;
    t.params = {{"tile", tile}, {"noise", noise}};
    t.config_hash = "c" + std::to_string(i);
    t.cache_key = "k" + std::to_string(i);
    if (with_failures && i % 7 == 6) {
      t.status = Outcome::failed;
      t.error = "crashed <b>";
    } else {
      t.metrics = {{"latency_s", std::pow(10.0, -3 - tile) * (1 + 0.001 * noise) * (1 + 1e-6 * i)}};
    }
    batch.push_back(t);
  }
  store.commit_trials(batch);
  return id;
}

}  // namespace

TEST_CASE("report: every trial is a point, the best so far only improves, the goal line follows the goal") {
  auto store = open_store(":memory:");
  const int64_t run = seeded_run(*store, 30);
  const Json doc = report::run_report(*store, run, {});
  CHECK(doc["points"].size() == 30);
  CHECK(doc["evaluations"] == 30);
  int failed = 0;
  for (const auto& p : doc["points"]) failed += p["status"] == "failed" ? 1 : 0;
  CHECK(failed == 4);
  double last = 1e9;
  for (const auto& b : doc["best_so_far"]) {
    CHECK(b[1].get<double>() < last);
    last = b[1].get<double>();
  }
  REQUIRE(doc.contains("baseline"));
  CHECK(doc["goal_latency_s"].get<double>() ==
        doctest::Approx(doc["baseline"]["latency_s"].get<double>() * 0.5));
  CHECK(doc["decisions"][0]["trials_proposed"] == 30);
  // Command targets have no simulated timeline; the document says why.
  CHECK(doc["timelines"]["best"].contains("unavailable"));
}

TEST_CASE("report: importance ranks the parameter that decides the latency first") {
  auto store = open_store(":memory:");
  const int64_t run = seeded_run(*store, 60);
  const Json doc = report::run_report(*store, run, {});
  const Json& ranked = doc["importance"]["parameters"];
  REQUIRE(ranked.size() >= 2);
  CHECK(ranked[0]["name"] == "tile");
  CHECK(ranked[0]["fraction"].get<double>() > 0.99);
  for (const auto& item : ranked)
    if (item["name"] == "noise") CHECK(item["fraction"].get<double>() < 0.01);
}

TEST_CASE("report: a large run is sampled, every improvement of the best kept, and says so") {
  auto store = open_store(":memory:");
  const int64_t run = seeded_run(*store, 400);
  report::ReportOptions options;
  options.max_points = 50;
  options.timelines = false;
  const Json doc = report::run_report(*store, run, options);
  CHECK(doc["points"].size() == 50);
  CHECK(doc["sampled"]["of"] == 400);
  std::set<int64_t> shown;
  for (const auto& p : doc["points"]) shown.insert(p["trial"].get<int64_t>());
  for (const auto& b : doc["best_so_far"]) CHECK(shown.count(b[2].get<int64_t>()) == 1);
  // The same seed samples the same trials.
  CHECK(report::run_report(*store, run, options)["points"] == doc["points"]);
}

TEST_CASE("report: after a trial, only the newer points come back") {
  auto store = open_store(":memory:");
  const int64_t run = seeded_run(*store, 10);
  const int64_t fifth = store->trials(run)[4].id;
  report::ReportOptions options;
  options.after_trial = fifth;
  const Json doc = report::run_report(*store, run, options);
  CHECK(doc["points"].size() == 5);
  CHECK(doc["points"][0]["n"] == 6);
  CHECK_FALSE(doc.contains("decisions"));
}

TEST_CASE("report: the page embeds its data so that no text closes the script early") {
  auto store = open_store(":memory:");
  const int64_t run = seeded_run(*store, 8);
  Json doc = report::run_report(*store, run, {});
  doc["goal_name"] = "</script><script>alert(1)</script>";
  report::PageOptions options;
  options.title = "t </title>";
  const std::string page = report::report_page(Json::array({doc}), options);
  CHECK(page.find("</script><script>alert(1)") == std::string::npos);
  CHECK(page.find("t &lt;/title&gt;") != std::string::npos);
  CHECK(page.find("echarts") != std::string::npos);
  CHECK(page.find("/*@") == std::string::npos);  // every placeholder filled
}

TEST_CASE("serve: routes answer pages and JSON, unknown runs and paths are 404 with one line") {
  auto store = open_store(":memory:");
  const int64_t run = seeded_run(*store, 8);
  const auto index = report::handle_get(*store, "/");
  CHECK(index.status == 200);
  CHECK(index.body.find("/api/runs") != std::string::npos);
  const auto runs = report::handle_get(*store, "/api/runs");
  CHECK(Json::parse(runs.body)[0]["evaluations"] == 8);
  const auto page = report::handle_get(*store, "/run/" + std::to_string(run));
  CHECK(page.status == 200);
  CHECK(page.body.find("\"live\":true") != std::string::npos);
  const int64_t third = store->trials(run)[2].id;
  const auto update = report::handle_get(
      *store, "/api/run/" + std::to_string(run) + "/trials?after=" + std::to_string(third));
  CHECK(Json::parse(update.body)["points"].size() == 5);
  const auto missing = report::handle_get(*store, "/run/999");
  CHECK(missing.status == 404);
  CHECK(missing.body == "run 999 not found in :memory:\n");
  CHECK(report::handle_get(*store, "/etc/passwd").status == 404);

  // Routed by path: a query string a path does not take is ignored (a browser's cache-buster), and the
  // trials path says what it needs.
  CHECK(report::handle_get(*store, "/api/runs?t=123").status == 200);
  CHECK(report::handle_get(*store, "/run/" + std::to_string(run) + "?refresh=1").status == 200);
  const auto ordered = report::handle_get(
      *store, "/api/run/" + std::to_string(run) + "/trials?t=9&after=" + std::to_string(third));
  CHECK(Json::parse(ordered.body)["points"].size() == 5);
  for (const char* query : {"", "?after=", "?after=abc", "?since=3"}) {
    const auto bad = report::handle_get(*store, "/api/run/" + std::to_string(run) + "/trials" + query);
    CHECK(bad.status == 400);
    CHECK(bad.body == "this path needs ?after=T, T a trial id (0 for every trial)\n");
  }
  CHECK(report::handle_get(*store, "/nowhere?x=1").body == "no page /nowhere (see / for the runs)\n");
}

TEST_CASE("report: stored text that HTML or script would read as markup stays data") {
  auto store = open_store(":memory:");
  const int64_t run = seeded_run(*store, 8);
  Json doc = report::run_report(*store, run, {});
  // `<!--<script>` inside a <script> element makes the parser swallow the rest of the page.
  const std::string goal = "<!--<script> & <img src=x onerror=alert(1)> \u2028 \u2029";
  doc["goal_name"] = goal;
  const std::string page = report::report_page(Json::array({doc}), {});
  const auto open = page.find("id=\"autotune-data\">");
  REQUIRE(open != std::string::npos);
  const auto begin = open + std::string("id=\"autotune-data\">").size();
  const std::string data = page.substr(begin, page.find("</script>", begin) - begin);
  for (const char* raw : {"<", ">", "&", "\u2028", "\u2029"}) CHECK(data.find(raw) == std::string::npos);
  CHECK(Json::parse(data)["runs"][0]["goal_name"] == goal);
}

TEST_CASE("serve: a trial stored with text where a number belongs is shown as unbuildable, not the end") {
  auto store = open_store(":memory:");
  Run run;
  run.goal_name = "g";
  run.goal_yaml = "name: g\nkernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}\n";
  run.kernel = "gemm";
  run.target = "trn1 (simulated)";
  const int64_t id = store->create_run(run);
  Decision decision;
  decision.run = id;
  decision.skill = "benchmark_runner";
  decision.action = "baseline";
  decision.proposer = "rules";
  store->append_decision(decision);
  Trial t;
  t.run = id;
  t.decision_seq = decision.seq;
  t.variant = "tiled";
  t.params = {{"tile_m", "abc"}, {"tile_n", 512}};
  t.config_hash = "c";
  t.cache_key = "k";
  t.metrics = {{"latency_s", 1e-5}};
  std::vector<Trial> batch{t};
  store->commit_trials(batch);
  const auto page = report::handle_get(*store, "/run/" + std::to_string(id));
  CHECK(page.status == 200);
  const auto api = report::handle_get(*store, "/api/run/" + std::to_string(id));
  REQUIRE(api.status == 200);
  const std::string why = Json::parse(api.body)["timelines"]["baseline"]["unavailable"];
  CHECK(why.find("tile_m=\"abc\", not an integer") != std::string::npos);
}

TEST_CASE("serve: an id beyond 64 bits is a run not found, named as given") {
  auto store = open_store(":memory:");
  seeded_run(*store, 3);
  for (const std::string path : {"/api/run/99999999999999999999", "/run/99999999999999999999",
                                 "/api/run/99999999999999999999/trials?after=1"}) {
    const auto answer = report::handle_get(*store, path);
    CHECK(answer.status == 404);
    CHECK(answer.body == "run 99999999999999999999 not found in :memory:\n");
  }
  const auto trial = report::handle_get(*store, "/api/run/1/trials?after=99999999999999999999");
  CHECK(trial.status == 404);
  CHECK(trial.body == "trial 99999999999999999999 not found in :memory:\n");
}

TEST_CASE("serve: the Host header must name an address, localhost, this machine or an allowed name") {
  const std::vector<std::string> none, proxy{"tune.example.org"};
  for (const char* ok :
       {"127.0.0.1:8080", "localhost", "LOCALHOST:80", "[::1]:8080", "10.1.2.3", "app.localhost", ""})
    CHECK_MESSAGE(report::host_allowed(ok, none), ok);
  for (const char* bad :
       {"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "[::1", "localhost.evil.example"})
    CHECK_MESSAGE(!report::host_allowed(bad, none), bad);
  CHECK(report::host_allowed("tune.example.org:443", proxy));
  CHECK(!report::host_allowed("other.example.org", proxy));
}

TEST_CASE("report: a model goal's run shows its operators and kernel runs instead of trial charts") {
  auto store = open_store(":memory:");
  Run model_run;
  model_run.goal_name = "tiny-model";
  model_run.goal_yaml = "name: tiny-model\nmodel: {file: m.yaml}\ngoal: {improvement: 0.5}\n";
  model_run.kernel = "model:tiny";
  model_run.target = "trn2 (simulated)";
  const int64_t parent = store->create_run(model_run);
  const int64_t child = seeded_run(*store, 9);
  const Json row = {{"operator", "q_proj"},
                    {"family", "gemm"},
                    {"kernel", "gemm M=384 N=2048 K=1024"},
                    {"shape", "M=384,N=2048,K=1024"},
                    {"calls", 1},
                    {"baseline_latency_s", 4e-4},
                    {"latency_s", 1e-4},
                    {"speedup", 4.0},
                    {"share_percent", 12.5},
                    {"configuration", "blocked_mnk tile_m=128"},
                    {"source", "tuned"},
                    {"run", child},
                    {"evaluations", 9}};
  model_run = *store->run(parent);
  model_run.summary = {{"kernel_runs", {child}}, {"baseline_latency_s", 2e-3},  {"best_latency_s", 8e-4},
                       {"speedup", 2.5},         {"baseline_mfu_percent", 5.0}, {"best_mfu_percent", 12.5},
                       {"operators", {row}}};
  store->update_run(model_run);

  const Json doc = report::run_report(*store, parent, {});
  REQUIRE(doc.contains("model"));
  CHECK(doc["evaluations"] == 9);  // its kernel run's trials
  CHECK(doc["model"]["forward_before_s"].get<double>() == doctest::Approx(2e-3));
  CHECK(doc["model"]["forward_after_s"].get<double>() == doctest::Approx(8e-4));
  CHECK(doc["model"]["operators"] == Json::array({row}));
  REQUIRE(doc["model"]["kernel_runs"].size() == 1);
  CHECK(doc["model"]["kernel_runs"][0]["run"] == child);
  CHECK(doc["model"]["kernel_runs"][0]["evaluations"] == 9);
  CHECK(doc["points"].empty());
  CHECK_FALSE(doc.contains("timelines"));  // nothing to re-simulate: no "no trial" panels

  const std::string page = report::report_page(Json::array({doc}), {"t", "s", false, ""});
  CHECK(page.find("\"operators\":[{") != std::string::npos);
  CHECK(page.find("drawModel") != std::string::npos);
}
