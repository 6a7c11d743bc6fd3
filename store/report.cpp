#include "store/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"

namespace autotune::store::report {
namespace {

// Left-aligned text columns, numbers right-aligned, two spaces between.
class TextTable {
 public:
  TextTable(std::vector<std::string> header, std::vector<bool> right_aligned)
      : right_aligned_(std::move(right_aligned)) {
    rows_.push_back(std::move(header));
  }
  // A cell is one line: stored text (a goal's name, a variant) with a line
  // break or another control character shows it as \xHH, not as a new row.
  void add(std::vector<std::string> row) {
    AUTOTUNE_CHECK(row.size() == rows_.front().size(), "table row has the wrong number of cells");
    for (auto& cell : row) cell = single_line(cell);
    rows_.push_back(std::move(row));
  }
  std::string render() const {
    std::vector<std::size_t> widths(rows_.front().size(), 0);
    for (const auto& row : rows_) {
      for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    }
    std::string out;
    for (const auto& row : rows_) {
      std::string line;
      for (std::size_t c = 0; c < row.size(); ++c) {
        const std::string padding(widths[c] - row[c].size(), ' ');
        if (c > 0) line += "  ";
        line += right_aligned_[c] ? padding + row[c] : row[c] + padding;
      }
      line.erase(line.find_last_not_of(' ') + 1);
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<bool> right_aligned_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace

std::optional<double> latency_of(const std::optional<Trial>& trial) {
  if (!trial || !is_measured(trial->status)) return std::nullopt;
  auto latency = trial->metric("latency_s");
  if (!latency || !(*latency > 0)) return std::nullopt;
  return latency;
}

std::optional<double> ratio(std::optional<double> numerator, std::optional<double> denominator) {
  if (!numerator || !denominator || !(*denominator > 0)) return std::nullopt;
  return *numerator / *denominator;
}

Json number_or_null(std::optional<double> value) { return value ? Json(*value) : Json(nullptr); }
Json trial_or_null(const std::optional<Trial>& trial) { return trial ? Json(*trial) : Json(nullptr); }

std::string first_line(const std::string& text, std::size_t max_width) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > max_width) line = line.substr(0, max_width - 3) + "...";
  return line;
}

std::string scalar_text(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", value.get<double>());
    return text;
  }
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string describe_trial(const Trial& trial) {
  return "trial " + std::to_string(trial.id) + " " + trial.variant + " {" + compact(trial.params, 200) + "}";
}

std::string latency_text(const std::optional<Trial>& trial) {
  auto latency = latency_of(trial);
  return latency ? format_seconds(*latency) : "-";
}

std::string string_at(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

Run require_run(Store& store, int64_t run_id) {
  auto run = store.run(run_id);
  if (!run) throw UserError("run " + std::to_string(run_id) + " not found in " + store.location());
  return *run;
}

Trial require_trial(Store& store, int64_t run_id, int64_t trial_id) {
  require_run(store, run_id);
  auto trial = store.trial(run_id, trial_id);
  if (!trial) {
    // Trial ids are unique across runs: a trial of another run is named as such.
    for (const Run& other : store.runs())
      if (other.id != run_id && store.trial(other.id, trial_id))
        throw UserError("trial " + std::to_string(trial_id) + " is a trial of run " +
                        std::to_string(other.id) + ", not of run " + std::to_string(run_id) + " (" +
                        store.location() + ")");
    throw UserError("trial " + std::to_string(trial_id) + " not found in run " + std::to_string(run_id) +
                    " of " + store.location());
  }
  return *trial;
}

std::optional<std::vector<int64_t>> kernel_runs_of(const Run& run) {
  if (!run.summary.is_object() || !run.summary.contains("kernel_runs") ||
      !run.summary["kernel_runs"].is_array())
    return std::nullopt;
  std::vector<int64_t> ids;
  for (const auto& id : run.summary["kernel_runs"])
    if (id.is_number_integer()) ids.push_back(id.get<int64_t>());
  return ids;
}

std::string id_ranges(const std::vector<int64_t>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ids[i]) + (j > i ? "-" + std::to_string(ids[j]) : "");
    i = j + 1;
  }
  return out;
}

namespace {

std::optional<double> positive_number_at(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return std::nullopt;
  const double value = object[key].get<double>();
  return value > 0 ? std::optional<double>(value) : std::nullopt;
}

RunOverview model_overview(Store& store, const Run& run, std::vector<int64_t> kernel_runs) {
  RunOverview out;
  out.run = run;
  out.model = true;
  out.kernel_runs = std::move(kernel_runs);
  for (const int64_t id : out.kernel_runs) {
    const TrialCounts c = store.trial_counts(id);
    out.counts.total += c.total;
    out.counts.ok += c.ok;
    out.counts.invalid += c.invalid;
    out.counts.wrong_answer += c.wrong_answer;
    out.counts.failed += c.failed;
    out.counts.timeout += c.timeout;
    out.counts.cache_hits += c.cache_hits;
  }
  out.baseline_latency_s = positive_number_at(run.summary, "baseline_latency_s");
  out.best_latency_s = positive_number_at(run.summary, "best_latency_s");
  out.speedup = ratio(out.baseline_latency_s, out.best_latency_s);
  if (run.summary.contains("improvement") && run.summary["improvement"].is_number())
    out.improvement = run.summary["improvement"].get<double>();
  return out;
}

}  // namespace

RunOverview overview(Store& store, const Run& run) {
  if (auto kernel_runs = kernel_runs_of(run)) return model_overview(store, run, std::move(*kernel_runs));
  RunOverview out;
  out.run = run;
  out.counts = store.trial_counts(run.id);
  if (run.baseline_trial) {
    out.baseline = store.trial(run.id, *run.baseline_trial);
  } else if (out.counts.ok > 0) {
    for (auto& trial : store.trials(run.id)) {
      if (latency_of(trial)) {
        out.baseline = std::move(trial);
        break;
      }
    }
  }
  out.best = run.best_trial ? store.trial(run.id, *run.best_trial) : store.best_trial(run.id);
  out.baseline_latency_s = latency_of(out.baseline);
  out.best_latency_s = latency_of(out.best);
  out.speedup = ratio(out.baseline_latency_s, out.best_latency_s);
  if (run.summary.is_object() && run.summary.contains("improvement") &&
      run.summary["improvement"].is_number()) {
    out.improvement = run.summary["improvement"].get<double>();
  } else if (auto inverse = ratio(out.best_latency_s, out.baseline_latency_s)) {
    out.improvement = 1.0 - *inverse;
  }
  return out;
}

std::vector<RunOverview> overviews(Store& store) {
  std::vector<RunOverview> out;
  for (const Run& run : store.runs()) out.push_back(overview(store, run));
  return out;
}

// ---- text

namespace {

struct TimeUnit {
  double scale;
  const char* name;
};

// The unit that puts `seconds` in [1, 1000).
const TimeUnit& time_unit(double seconds) {
  static constexpr TimeUnit kUnits[] = {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  const double magnitude = std::fabs(seconds);
  for (const TimeUnit& unit : kUnits)
    if (magnitude >= unit.scale) return unit;
  return kUnits[3];
}

}  // namespace

namespace {

// `value` with `decimals` after the point, or in three significant digits
// with an exponent once it has more than six before it (a value stored by
// another tool, or a hang recorded as 1e20 ms): never a line of digits.
std::string fixed_or_exponent(double value, int decimals, bool with_sign = false) {
  char text[64];
  if (std::isfinite(value) && std::fabs(value) >= 1e6)
    std::snprintf(text, sizeof text, with_sign ? "%+.3g" : "%.3g", value);
  else
    std::snprintf(text, sizeof text, with_sign ? "%+.*f" : "%.*f", decimals, value);
  return text;
}

}  // namespace

std::string format_seconds(double seconds) {
  const TimeUnit& unit = time_unit(seconds);
  return fixed_or_exponent(seconds / unit.scale, 3) + " " + unit.name;
}

std::string format_speedup(double speedup) { return fixed_or_exponent(speedup, 2) + "x"; }

std::string format_improvement(double improvement) {
  return fixed_or_exponent(improvement * 100.0, 1, true) + "%";
}

std::string compact(const Json& value, std::size_t max_width) {
  std::string text;
  if (value.is_null()) {
    text = "";
  } else if (value.is_object()) {
    for (const auto& [key, item] : value.items()) {
      if (key == "_") continue;  // the placeholder of a variant without parameters
      if (!text.empty()) text += ' ';
      text += key + "=" + scalar_text(item);
    }
    if (text.empty() && !value.empty()) text = "(no parameters)";
  } else {
    text = scalar_text(value);
  }
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (max_width >= 4 && text.size() > max_width) text = text.substr(0, max_width - 3) + "...";
  return text;
}

std::string format_runs(const std::vector<RunOverview>& runs) {
  if (runs.empty()) return "no runs yet\n";
  TextTable table(
      {"id", "created", "goal", "kernel", "target", "status", "best", "speedup", "improvement", "evals"},
      {true, false, false, false, false, false, true, true, true, true});
  for (const auto& entry : runs) {
    const Run& run = entry.run;
    std::string created = run.created.substr(0, 16);
    std::replace(created.begin(), created.end(), 'T', ' ');
    std::string status(to_string(run.status));
    if (run.goal_met) status += " (goal met)";
    std::string kernel = run.kernel;
    if (entry.model)
      kernel += entry.kernel_runs.empty()
                    ? " (no kernel run yet)"
                    : std::string(entry.kernel_runs.size() == 1 ? " (kernel run " : " (kernel runs ") +
                          id_ranges(entry.kernel_runs) + ")";
    table.add({std::to_string(run.id), created, run.goal_name, kernel, run.target, status,
               entry.best_latency_s ? format_seconds(*entry.best_latency_s) : "-",
               entry.speedup ? format_speedup(*entry.speedup) : "-",
               entry.improvement ? format_improvement(*entry.improvement) : "-",
               std::to_string(entry.counts.total)});
  }
  return table.render();
}

std::string interval_text(const Trial& trial) {
  const auto median = latency_of(trial);
  if (!median) return "";
  const Json& metrics = trial.metrics;
  if (!metrics.contains("intervals") || !metrics["intervals"].is_object()) return "";
  const Json& interval = metrics["intervals"].value("latency_s", Json());
  if (!interval.is_object() || !interval.contains("low") || !interval.contains("high") ||
      !interval["low"].is_number() || !interval["high"].is_number())
    return "";
  const double low = interval["low"].get<double>(), high = interval["high"].get<double>();
  if (!(high > low)) return "";
  const TimeUnit& unit = time_unit(*median);  // the median's unit, as the latency column shows it
  char text[96];
  std::snprintf(text, sizeof text, "%.3f-%.3f %s", low / unit.scale, high / unit.scale, unit.name);
  std::string out = text;
  std::vector<std::string> about;
  if (interval.contains("confidence") && interval["confidence"].is_number()) {
    std::snprintf(text, sizeof text, "%.4g%%", interval["confidence"].get<double>() * 100);
    about.push_back(text);
  }
  if (interval.contains("n") && interval["n"].is_number_integer())
    about.push_back(std::to_string(interval["n"].get<int64_t>()) + " runs");
  if (!about.empty()) out += " (" + join(about, ", ") + ")";
  return out;
}

std::string format_trials(const std::vector<Trial>& trials, std::optional<double> baseline_latency_s) {
  if (trials.empty()) return "no trials\n";
  // Parameters with one value in every listed trial that has them are said
  // once above the table; each row shows only those that tell it apart.
  std::map<std::string, std::set<std::string>> values;
  std::map<std::string, std::size_t> holders;
  for (const Trial& trial : trials)
    if (trial.params.is_object())
      for (const auto& [key, value] : trial.params.items()) {
        if (key == "_") continue;  // the placeholder of a variant without parameters
        values[key].insert(value.dump(-1, ' ', false, Json::error_handler_t::replace));
        ++holders[key];
      }
  std::set<std::string> shared;
  if (trials.size() > 1)
    for (const auto& [key, seen] : values)
      if (seen.size() == 1 && holders[key] == trials.size()) shared.insert(key);
  const std::string shared_text = join(
      shared, " ", [&](const std::string& key) { return key + "=" + compact(trials.front().params[key]); });
  // A noisy target's trials (repeated runs): their median's interval, in a
  // column of its own only when some listed trial has one.
  const bool intervals = std::any_of(trials.begin(), trials.end(),
                                     [](const Trial& trial) { return !interval_text(trial).empty(); });
  std::vector<std::string> header = {"id",      "iter",    "variant", "params", "status",
                                     "latency", "speedup", "cache",   "error"};
  std::vector<bool> right = {true, true, false, false, false, true, true, false, false};
  if (intervals) {
    header.insert(header.begin() + 6, "interval of the median");
    right.insert(right.begin() + 6, false);
  }
  TextTable table(header, right);
  for (const Trial& trial : trials) {
    const auto latency = latency_of(trial);
    const auto speedup = ratio(baseline_latency_s, latency);
    Json differing = Json::object();
    if (trial.params.is_object())
      for (const auto& [key, value] : trial.params.items())
        if (!shared.count(key)) differing[key] = value;
    std::string params = compact(differing, 0);  // whole: the differing ones are the point
    if (params.empty()) params = shared.empty() ? "(no parameters)" : "(the shared ones)";
    std::vector<std::string> row = {std::to_string(trial.id),
                                    std::to_string(trial.iteration),
                                    trial.variant,
                                    params,
                                    std::string(to_string(trial.status)),
                                    latency ? format_seconds(*latency) : "-",
                                    speedup ? format_speedup(*speedup) : "-",
                                    trial.cache_hit ? "hit" : "",
                                    first_line(trial.error, 60)};
    if (intervals) row.insert(row.begin() + 6, interval_text(trial));
    table.add(std::move(row));
  }
  return (shared_text.empty() ? "" : "every trial listed has " + shared_text + "\n") + table.render();
}

namespace {

// `text` as lines of at most `width` characters, broken between words, each
// after the first indented by `indent` spaces.
std::string wrapped(const std::string& text, std::size_t width, std::size_t indent) {
  std::string out, line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  return out + line;
}

}  // namespace

std::string format_decisions(const std::vector<Decision>& decisions) {
  if (decisions.empty()) return "no decisions\n";
  // One block per decision: who decided what, then why (the rationale, else
  // the evidence) and what came of it, wrapped rather than cut.
  constexpr std::size_t kWidth = 100, kIndent = 15;
  std::string out;
  for (const Decision& decision : decisions) {
    char head[64];
    std::snprintf(head, sizeof head, "%4lld  iter %-3d ", static_cast<long long>(decision.seq),
                  decision.iteration);
    out += head + decision.skill + " / " + decision.action + "  (" + decision.proposer + ")\n";
    std::string reason = decision.rationale;
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    if (reason.empty()) reason = compact(decision.evidence, 0);
    if (!reason.empty()) out += "      why:     " + wrapped(reason, kWidth - kIndent, kIndent) + "\n";
    std::string outcome = decision.outcome;
    std::replace(outcome.begin(), outcome.end(), '\n', ' ');
    if (!outcome.empty()) out += "      outcome: " + wrapped(outcome, kWidth - kIndent, kIndent) + "\n";
  }
  return out;
}

// ---- JSON

Json runs_json(const std::vector<RunOverview>& runs) {
  Json out = Json::array();
  for (const auto& entry : runs) {
    Json item = run_listing_json(entry.run);
    // The overview's baseline and best, found from the trials while a run is going.
    item["baseline_trial"] = entry.baseline ? Json(entry.baseline->id) : Json(nullptr);
    item["best_trial"] = entry.best ? Json(entry.best->id) : Json(nullptr);
    item["baseline_latency_s"] = number_or_null(entry.baseline_latency_s);
    item["best_latency_s"] = number_or_null(entry.best_latency_s);
    item["speedup"] = number_or_null(entry.speedup);
    item["improvement"] = number_or_null(entry.improvement);
    item["evaluations"] = entry.counts.total;
    item["cache_hits"] = entry.counts.cache_hits;
    if (entry.model) item["kernel_runs"] = entry.kernel_runs;
    out.push_back(std::move(item));
  }
  return out;
}

Json trials_json(const std::vector<Trial>& trials, std::optional<double> baseline_latency_s) {
  Json out = Json::array();
  for (const Trial& trial : trials) {
    Json item = trial;
    const auto speedup = ratio(baseline_latency_s, latency_of(trial));
    item["speedup"] = number_or_null(speedup);
    out.push_back(std::move(item));
  }
  return out;
}

Json decisions_json(const std::vector<Decision>& decisions) {
  Json out = Json::array();
  for (const Decision& decision : decisions) out.push_back(decision);
  return out;
}

}  // namespace autotune::store::report
