#include "orchestrator/suite.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/family.hpp"
#include "orchestrator/goal_sections.hpp"
#include "search/strategy.hpp"
#include "sim/program.hpp"
#include "sim/target.hpp"

namespace autotune::orchestrator {
namespace {

const std::vector<std::string> kTopKeys = {"name",   "description", "targets", "seed",           "budget",
                                           "search", "parallel",    "goal",    "max_iterations", "tasks"};
const std::vector<std::string> kTaskKeys = {"name",  "note",   "unavailable", "kernel",
                                            "start", "search", "variants",    "roles"};

std::string task_path(const SuiteTask& task) { return "tasks." + task.name; }

// The task's goal sections (kernel, start, variants, search, roles) into `goal`.
void read_task_sections(const Suite& suite, const SuiteTask& task, Goal& goal) {
  ConfigReader reader(task.node, suite.file.string(), task_path(task));
  (void)reader.required<std::string>("name");
  (void)reader.optional<std::string>("note", "");
  (void)reader.optional<std::string>("unavailable", "");
  // A goal may instead give a kernel_source; a task may not (kTaskKeys), so the hint names what a task takes.
  if (!reader.has("kernel"))
    reader.fail_missing(
        "kernel", "missing required section",
        "kernel: {family, shape, dtype}, or unavailable: <why> for a task that is not yet a family");
  read_kernel_section(reader, goal);
  if (auto start = reader.maybe_child("start")) {
    goal.start_variant = start->optional<std::string>("variant", "");
    const YAML::Node params = start->raw("params");
    if (params && !params.IsNull()) {
      if (!params.IsMap()) start->fail("params", "expected a mapping parameter: value", &params);
      goal.start_params = yaml_value_json(params);
    }
    start->finish({"variant", "params"});
  }
  goal.variants = read_variants(reader);
  if (auto search = reader.maybe_child("search")) {
    if (auto space = search->maybe_child("space"))
      for (const auto& key : space->keys()) goal.space.emplace_back(key, read_space_domain(*space, key));
    goal.constraints = search->optional<std::vector<std::string>>("constraints", {}, "a list of expressions");
    search->finish({"space", "constraints"});
  }
  if (auto roles = reader.maybe_child("roles")) {
    for (const auto& key : roles->keys()) {
      const auto role = roles->required<std::string>(key, kernels::accepted_roles());
      const auto parsed = kernels::parse_role(role);
      if (!parsed) roles->fail(key, "'" + role + "' is not a role; accepted: " + kernels::accepted_roles());
      goal.roles[key] = kernels::role_name(*parsed);
    }
  }
  reader.finish(kTaskKeys);
}

std::optional<double> number_at(const Json& object, const char* side, const char* key) {
  if (!object.is_object() || !object.contains(side) || !object[side].is_object()) return std::nullopt;
  const Json& inner = object[side];
  if (!inner.contains(key) || !inner[key].is_number()) return std::nullopt;
  const double value = inner[key].get<double>();
  return value > 0 ? std::optional<double>(value) : std::nullopt;
}

// The row's figures from its stored run.
void fill_from_run(SuiteRow& row, const store::Run& run) {
  row.run = run.id;
  row.status = std::string(store::to_string(run.status));
  row.reason.clear();
  row.stop_reason = run.stop_reason;
  const Json& s = run.summary;
  row.baseline_latency_s = number_at(s, "baseline", "latency_s");
  row.tuned_latency_s = number_at(s, "best", "latency_s");
  if (s.is_object()) {
    row.evaluations = s.value("evaluations", 0);
    row.wall_time_s = s.value("wall_time_s", 0.0);
  }
  if (run.status == store::RunStatus::failed) row.reason = run.stop_reason;
}

SuiteRow row_of(const Suite& suite, const SuiteTask& task, const std::string& target) {
  SuiteRow row;
  row.task = task.name;
  row.target = target;
  row.note = task.note;
  if (!task.unavailable.empty()) {
    row.status = "not yet a family";
    row.reason = task.unavailable;
    return row;
  }
  Goal goal;
  goal.target.name = target;
  read_task_sections(suite, task, goal);
  row.family = goal.family;
  row.shape = kernels::shape_text(goal.shape, kernels::family_registry().get(goal.family));
  row.dtype = goal.dtype;
  row.status = "not run";
  return row;
}

// The runs of this goal and seed: the one to go on from (the latest completed
// one of this simulator version, else its latest one: interrupted, left
// running, or failed), and the latest of another simulator version, whose
// figures are another simulator's and which a resume would mix with this
// one's.
struct PreviousRuns {
  std::optional<store::Run> current, other_version;
};

PreviousRuns previous_runs(const std::vector<store::Run>& runs, const std::string& goal_yaml,
                           std::uint64_t seed, const std::string& simulator_version) {
  PreviousRuns out;
  std::optional<store::Run> completed;
  for (const auto& run : runs) {
    if (run.seed != seed || run.goal_yaml != goal_yaml) continue;
    if (run.simulator_version != simulator_version) {
      out.other_version = run;
      continue;
    }
    out.current = run;
    if (run.status == store::RunStatus::completed) completed = run;
  }
  if (completed) out.current = completed;
  return out;
}

// "earlier run 3 was simulator sim-2.2" for a row that has one.
std::string earlier_run_text(const SuiteRow& row) {
  return "earlier run " + std::to_string(row.earlier_run.value_or(0)) + " was simulator " +
         row.earlier_simulator_version;
}

std::string stored_goal_yaml(const Goal& goal) { return store::redact_url_credentials(to_yaml(goal)); }

}  // namespace

Suite load_suite(const std::filesystem::path& path) {
  Suite suite;
  suite.file = path;
  const YAML::Node document = load_yaml_file(path);
  if (!document || !document.IsMap()) throw UserError(path.string() + ":1: a suite file is a YAML mapping");
  ConfigReader top(document, path.string());
  suite.name = top.name("name", path.stem().string());
  suite.description = top.optional<std::string>("description", "");
  const YAML::Node targets_node = top.raw("targets");
  suite.targets = top.required<std::vector<std::string>>("targets", "a list of target names (trn1, trn2)");
  if (suite.targets.empty())
    top.fail("targets", "empty list; accepted: target names (trn1, trn2)", &targets_node);
  for (std::size_t i = 0; i < suite.targets.size(); ++i) {
    const YAML::Node item = targets_node[i];
    if (std::count(suite.targets.begin(), suite.targets.end(), suite.targets[i]) > 1)
      top.fail("targets", "'" + suite.targets[i] + "' is listed twice", &item);
    try {
      (void)sim::load_target(suite.targets[i]);
    } catch (const UserError& e) {
      top.fail("targets", e.what(), &item);
    }
  }
  suite.seed = top.optional<std::uint64_t>("seed", 0);
  if (auto budget = top.maybe_child("budget")) {
    suite.budget_evaluations = budget->optional<int>("evaluations", suite.budget_evaluations);
    suite.budget_wall_time_s = budget->optional_seconds("wall_time_s", suite.budget_wall_time_s);
    if (suite.budget_evaluations < 1) budget->fail("evaluations", "must be at least 1");
    budget->finish({"evaluations", "wall_time_s"});
  }
  suite.max_iterations = top.optional<int>("max_iterations", suite.max_iterations);
  if (suite.max_iterations < 1) top.fail("max_iterations", "must be at least 1");
  if (auto search = top.maybe_child("search")) {
    read_search_strategy(*search, suite.strategy, suite.strategy_options);
    search->finish({"strategy", "options"});
  }
  suite.parallel = static_cast<int>(top.optional_count("parallel", suite.parallel, 1, kMaxParallel));
  if (auto goal = top.maybe_child("goal")) {
    suite.stop_fraction_of_peak = goal->optional<double>("fraction_of_peak", suite.stop_fraction_of_peak);
    if (!(suite.stop_fraction_of_peak > 0 && suite.stop_fraction_of_peak <= 1))
      goal->fail("fraction_of_peak",
                 "must be in (0, 1]: the loop stops once the tuned latency is this "
                 "fraction of the roofline bound");
    goal->finish({"fraction_of_peak"});
  }
  const YAML::Node tasks = top.raw("tasks");
  if (!tasks) top.fail_missing("tasks", "missing required key", "a list of tasks {name, kernel, ...}");
  if (!tasks.IsSequence() || tasks.size() == 0)
    top.fail("tasks", "expected a non-empty list of tasks {name, kernel, start, variants, search, note}",
             &tasks);
  top.finish(kTopKeys);

  std::set<std::string> names;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const YAML::Node node = tasks[i];
    if (!node.IsMap()) top.fail("tasks", "each task is a mapping {name, kernel, ...}", &node);
    ConfigReader reader(node, path.string(), "tasks");
    SuiteTask task;
    task.node = node;
    const YAML::Node name_node = reader.raw("name");
    task.name = reader.name("name");
    if (!names.insert(task.name).second)
      reader.fail("name", "task '" + task.name + "' is listed twice", &name_node);
    task.note = reader.optional<std::string>("note", "");
    task.unavailable = reader.optional<std::string>("unavailable", "");
    if (!task.unavailable.empty())
      reader.finish({"name", "note", "unavailable"});  // nothing to run: no goal sections
    suite.tasks.push_back(std::move(task));
  }
  // Every available task on every target, checked as its goal now: nothing
  // runs until the whole file is right. A mistake the targets do not share
  // (a constraint only one target's SBUF cannot meet) names the target.
  for (const auto& task : suite.tasks) {
    if (!task.unavailable.empty()) continue;
    std::vector<std::pair<std::string, std::string>> refused;  // target, error
    std::vector<std::string> taken;
    for (const auto& target : suite.targets) {
      try {
        (void)task_goal(suite, task, target);
        taken.push_back(target);
      } catch (const UserError& e) {
        refused.emplace_back(target, e.what());
      }
    }
    if (refused.empty()) continue;
    const bool everywhere_alike =
        taken.empty() && std::all_of(refused.begin(), refused.end(),
                                     [&](const auto& r) { return r.second == refused.front().second; });
    if (everywhere_alike || suite.targets.size() == 1) throw UserError(refused.front().second);
    throw UserError(
        refused.front().second + " (on target " + refused.front().first +
        (taken.empty() ? "" : "; " + join(taken, ", ") + (taken.size() == 1 ? " takes" : " take") + " it") +
        ")");
  }
  return suite;
}

TaskGoal task_goal(const Suite& suite, const SuiteTask& task, const std::string& target) {
  TaskGoal out;
  Goal& goal = out.goal;
  goal.file = suite.file;
  // Errors found when the goal is prepared point into the task's mapping.
  goal.where = KeyLocations(task.node, suite.file.string(), task_path(task));
  goal.name = suite.name + "/" + task.name;
  goal.target.kind = "sim";
  goal.target.name = target;
  read_task_sections(suite, task, goal);
  goal.objective = Objective::latency;
  goal.max_iterations = suite.max_iterations;
  goal.budget_evaluations = suite.budget_evaluations;
  goal.budget_wall_time_s = suite.budget_wall_time_s;
  goal.strategy = suite.strategy;
  goal.strategy_options = suite.strategy_options;
  goal.parallel = suite.parallel;
  goal.seed = suite.seed;
  const auto& family = kernels::family_registry().get(goal.family);
  const auto dtype = sim::parse_dtype(goal.dtype);
  AUTOTUNE_CHECK(dtype.has_value(), "a dtype the goal reader accepted does not parse: " + goal.dtype);
  out.roofline_bound_s = kernels::roofline_bound_s(family, goal.shape, *dtype, sim::load_target(target));
  // The loop's goal: the latency at the suite's fraction of the bound (at 1,
  // the bound itself, which no verified candidate beats: the budget decides).
  goal.absolute = out.roofline_bound_s / suite.stop_fraction_of_peak;
  out.setup = prepare_run(goal);
  return out;
}

std::optional<double> SuiteRow::fraction_of_peak() const {
  if (!tuned_latency_s || roofline_bound_s <= 0) return std::nullopt;
  return roofline_bound_s / *tuned_latency_s;
}

std::optional<double> SuiteRow::baseline_fraction_of_peak() const {
  if (!baseline_latency_s || roofline_bound_s <= 0) return std::nullopt;
  return roofline_bound_s / *baseline_latency_s;
}

Json SuiteRow::to_json() const {
  auto maybe = [](const std::optional<double>& v) { return v ? Json(*v) : Json(); };
  Json out = {{"task", task},
              {"target", target},
              {"status", status},
              {"family", family.empty() ? Json() : Json(family)},
              {"shape", shape.empty() ? Json() : Json(shape)},
              {"dtype", dtype.empty() ? Json() : Json(dtype)},
              {"run", run ? Json(*run) : Json()},
              {"ran_now", ran_now},
              {"roofline_bound_s", roofline_bound_s > 0 ? Json(roofline_bound_s) : Json()},
              {"baseline_latency_s", maybe(baseline_latency_s)},
              {"tuned_latency_s", maybe(tuned_latency_s)},
              {"baseline_fraction_of_peak", maybe(baseline_fraction_of_peak())},
              {"fraction_of_peak", maybe(fraction_of_peak())},
              {"evaluations", evaluations},
              {"wall_time_s", wall_time_s},
              {"stop_reason", stop_reason}};
  if (!reason.empty()) out["reason"] = reason;
  if (!note.empty()) out["note"] = note;
  if (earlier_run)
    out["earlier_run"] = {{"run", *earlier_run}, {"simulator_version", earlier_simulator_version}};
  return out;
}

std::vector<SuiteMean> suite_means(const Suite& suite, const std::vector<SuiteRow>& rows) {
  std::vector<SuiteMean> means;
  for (const auto& target : suite.targets) {
    SuiteMean mean;
    mean.target = target;
    for (const auto& row : rows) {
      if (row.target != target || !row.fraction_of_peak() || !row.baseline_fraction_of_peak()) continue;
      ++mean.tasks;
      mean.fraction_of_peak += *row.fraction_of_peak();
      mean.baseline_fraction_of_peak += *row.baseline_fraction_of_peak();
    }
    if (mean.tasks > 0) {
      mean.fraction_of_peak /= mean.tasks;
      mean.baseline_fraction_of_peak /= mean.tasks;
    }
    means.push_back(mean);
  }
  return means;
}

Json SuiteResult::to_json(const Suite& suite, const std::string& database) const {
  Json rows_json = Json::array();
  for (const auto& row : rows) rows_json.push_back(row.to_json());
  Json means = Json::array();
  for (const auto& mean : suite_means(suite, rows))
    means.push_back(
        {{"target", mean.target},
         {"tasks", mean.tasks},
         {"fraction_of_peak", mean.tasks ? Json(mean.fraction_of_peak) : Json()},
         {"baseline_fraction_of_peak", mean.tasks ? Json(mean.baseline_fraction_of_peak) : Json()}});
  int unavailable = 0;
  for (const auto& task : suite.tasks) unavailable += task.unavailable.empty() ? 0 : 1;
  return {{"suite", suite.name},
          {"file", suite.file.string()},
          {"database", database},
          {"targets", suite.targets},
          {"budget", {{"evaluations", suite.budget_evaluations}, {"wall_time_s", suite.budget_wall_time_s}}},
          {"seed", suite.seed},
          {"tasks", int(suite.tasks.size())},
          {"unavailable_tasks", unavailable},
          {"runs_started", runs_started},
          {"wall_time_s", wall_time_s},
          {"rows", rows_json},
          {"means", means}};
}

int workers_for_next_run(int jobs, int in_use, int starting_now) {
  return std::max(1, (jobs - in_use) / std::max(1, starting_now));
}

std::vector<SuiteRow> suite_rows(const Suite& suite, store::Store& store) {
  const std::vector<store::Run> runs = store.runs();
  std::vector<SuiteRow> rows;
  for (const auto& task : suite.tasks)
    for (const auto& target : suite.targets) {
      SuiteRow row = row_of(suite, task, target);
      if (task.unavailable.empty()) {
        const TaskGoal goal = task_goal(suite, task, target);
        row.roofline_bound_s = goal.roofline_bound_s;
        const PreviousRuns previous =
            previous_runs(runs, stored_goal_yaml(goal.goal), suite.seed, goal.setup.simulator_version);
        if (previous.current) {
          fill_from_run(row, *previous.current);
        } else if (previous.other_version) {
          row.earlier_run = previous.other_version->id;
          row.earlier_simulator_version = previous.other_version->simulator_version;
          row.reason = earlier_run_text(row);
        }
      }
      rows.push_back(std::move(row));
    }
  return rows;
}

SuiteResult run_suite(const Suite& suite, store::Store& store, const SuiteOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  SuiteResult result;
  result.rows = suite_rows(suite, store);

  // What to run: every available row without a completed run.
  struct Work {
    std::size_t row;
    const SuiteTask* task;
    std::optional<int64_t> resume;
  };
  std::vector<Work> work;
  std::size_t index = 0;
  for (const auto& task : suite.tasks)
    for (std::size_t t = 0; t < suite.targets.size(); ++t, ++index) {
      const SuiteRow& row = result.rows[index];
      if (!task.unavailable.empty() || row.status == "completed") continue;
      const bool resumable = row.run && (row.status == "interrupted" || row.status == "running");
      work.push_back({index, &task, resumable ? row.run : std::nullopt});
    }

  std::mutex mutex;  // guards the rows, the callbacks and the counts below
  std::size_t next = 0;
  const int threads = std::max(1, std::min<int>(options.jobs, int(work.size())));
  int in_progress = 0, workers_in_use = 0;
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  auto worker = [&] {
    for (;;) {
      std::size_t item = 0;
      int jobs = 1;
      {
        std::lock_guard lock(mutex);
        if (next >= work.size()) return;
        item = next++;
        const int idle_threads = threads - in_progress;  // this one's included
        const int left_to_start = int(work.size() - item);
        jobs = workers_for_next_run(options.jobs, workers_in_use, std::min(idle_threads, left_to_start));
        ++in_progress;
        workers_in_use += jobs;
      }
      // The workers go back when the run ends, however it ends.
      struct Release {
        std::mutex& mutex;
        int &in_progress, &in_use;
        int jobs;
        ~Release() {
          std::lock_guard lock(mutex);
          --in_progress;
          in_use -= jobs;
        }
      } release{mutex, in_progress, workers_in_use, jobs};
      const Work& w = work[item];
      SuiteRow& row = result.rows[w.row];
      const std::string label = row.task + " on " + row.target;
      std::optional<int64_t> announced;
      try {
        TaskGoal goal = task_goal(suite, *w.task, row.target);
        RunOptions run_options;
        run_options.jobs = jobs;
        run_options.resume = w.resume;
        // In progress from the moment it is stored, before its first progress line.
        run_options.started = [&](int64_t id) {
          std::lock_guard lock(mutex);
          if (options.running) options.running(id, true);
        };
        run_options.progress = [&](const Progress& p) {
          std::lock_guard lock(mutex);
          if (announced || p.run_id == 0) return;
          announced = p.run_id;
          if (options.running) options.running(p.run_id, true);
          say(label + ": run " + std::to_string(p.run_id) + (w.resume ? " resumed" : " started") + " (" +
              std::to_string(jobs) + (jobs == 1 ? " worker)" : " workers)") +
              (row.earlier_run ? " (" + earlier_run_text(row) + ": new run)" : ""));
        };
        run_options.warning = [&](const std::string& line) {
          std::lock_guard lock(mutex);
          say(label + ": warning: " + line);
        };
        RunContext context{goal.goal, goal.setup.catalog,           *goal.setup.target,
                           store,     goal.setup.simulator_version, run_options};
        const RunSummary summary = Orchestrator(context).run();
        const auto stored = store.run(summary.run_id);
        std::lock_guard lock(mutex);
        if (stored) fill_from_run(row, *stored);
        row.ran_now = true;
        ++result.runs_started;
        if (options.running) options.running(summary.run_id, false);
        char line[256];
        std::snprintf(line, sizeof line, "%s: run %lld %s, %d evaluations, %.1f s", label.c_str(),
                      static_cast<long long>(summary.run_id), row.status.c_str(), row.evaluations,
                      row.wall_time_s);
        std::string text = line;
        if (const auto fraction = row.fraction_of_peak()) {
          std::snprintf(line, sizeof line, ", %.1f%% of peak", *fraction * 100);
          text += line;
        }
        say(text);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        row.status = "error";
        row.reason = e.what();
        if (announced) {
          row.run = announced;
          ++result.runs_started;
          if (options.running) options.running(*announced, false);
        }
        say(label + ": error: " + e.what());
      }
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& thread : pool) thread.join();
  result.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace autotune::orchestrator
