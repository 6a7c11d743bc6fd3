#include "skills/targets/command_target.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/subprocess.hpp"
#include "core/text.hpp"
#include "skills/candidate.hpp"

namespace autotune::skills {
namespace {

// Beyond any noise estimate a user needs, and far below what would run for days.
constexpr int kMaxRepeats = 1000;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Text as the program should see a parameter value.
std::string argument_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `text` without its leading and trailing whitespace.
std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// The last non-empty line of `text`, untrimmed inside; "" when there is none.
std::string_view last_line_of(std::string_view text) {
  text = trimmed(text);
  const std::size_t newline = text.rfind('\n');
  return newline == std::string_view::npos ? text : text.substr(newline + 1);
}

// A bare token of a JSON-looking line (outside its strings) that stands for
// no finite number: NaN, Infinity (as Python's json module prints them), or a
// number beyond a double's range such as 1e400; "" when there is none.
std::string non_finite_token(std::string_view line) {
  bool in_string = false;
  std::string token;
  auto judge = [](const std::string& t) -> bool {
    std::string lower;
    for (char c : t) lower += char(std::tolower(static_cast<unsigned char>(c)));
    if (!lower.empty() && (lower[0] == '-' || lower[0] == '+')) lower.erase(0, 1);
    if (lower == "nan" || lower == "inf" || lower == "infinity") return true;
    if (t.empty() || !(std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '-')) return false;
    char* end = nullptr;
    const double value = std::strtod(t.c_str(), &end);
    return end != t.c_str() && !std::isfinite(value);
  };
  for (std::size_t i = 0; i <= line.size(); ++i) {
    const char c = i < line.size() ? line[i] : ' ';
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"' || std::isspace(static_cast<unsigned char>(c)) || std::strchr("{}[]:,", c) != nullptr) {
      if (judge(token)) return token;
      token.clear();
      in_string = c == '"';
      continue;
    }
    token += c;
  }
  return "";
}

// The program's metrics line: the last non-empty line of `text` that parses
// as a JSON object (earlier lines that do not are logs). A later line shaped
// like an object ({...}) that fails only because it holds a number that is
// not finite is the program's answer all the same, so it is not passed over
// for an earlier object: *non_finite gets that token and line, and nothing is
// returned.
struct NonFiniteNumber {
  std::string token, line;
};
std::optional<nlohmann::json> last_json_object(const std::string& text, NonFiniteNumber* non_finite) {
  std::size_t end = text.size();
  while (end > 0) {
    const std::size_t start = text.rfind('\n', end - 1);
    const std::size_t from = start == std::string::npos ? 0 : start + 1;
    const std::string_view line(text.data() + from, end - from);
    if (line.find('{') != std::string_view::npos) {
      try {
        auto value = parse_json(line);
        if (value.is_object()) return value;
      } catch (const nlohmann::json::exception&) {
        const std::string_view shape = trimmed(line);
        if (shape.starts_with('{') && shape.ends_with('}')) {
          if (std::string token = non_finite_token(shape); !token.empty()) {
            *non_finite = {std::move(token), one_line_tail(std::string(shape), 120)};
            return std::nullopt;
          }
        }
      }
    }
    if (start == std::string::npos) break;
    end = start;
  }
  return std::nullopt;
}

// The last non-empty line of `text` as messages quote it (one line, at most 120 characters).
std::string last_line(const std::string& text) { return one_line_tail(std::string(last_line_of(text)), 120); }

}  // namespace

nlohmann::json summarise_runs(const std::vector<nlohmann::json>& runs, double confidence) {
  nlohmann::json metrics = nlohmann::json::object();
  std::map<std::string, std::vector<double>> numeric;
  for (const auto& output : runs) {
    if (!output.is_object()) continue;
    for (const auto& [key, value] : output.items()) {
      if (key == "valid" || key == "error") continue;
      if (value.is_number()) {
        numeric[key].push_back(value.get<double>());
      } else if (!metrics.contains(key)) {
        metrics[key] = value;
      }
    }
  }
  nlohmann::json intervals = nlohmann::json::object();
  for (auto& [key, values] : numeric) {
    const bool all_integers = std::all_of(runs.begin(), runs.end(), [&](const auto& o) {
      return !o.is_object() || !o.contains(key) || o[key].is_number_integer();
    });
    const MedianInterval interval = median_interval(values, confidence);
    if (all_integers && values.size() % 2 == 1) {
      metrics[key] = static_cast<long long>(interval.median);  // an odd count's median is one of the integers
    } else {
      metrics[key] = interval.median;
    }
    if (values.size() >= 2) intervals[key] = interval_json(interval);
  }
  if (!intervals.empty()) metrics["intervals"] = intervals;
  return metrics;
}

CommandTarget::CommandTarget(CommandTargetConfig config) : config_(std::move(config)) {
  if (config_.argv.empty())
    throw UserError("command target: argv is empty; give the program and its arguments");
  for (std::size_t index = 0; index < config_.argv.size(); ++index) {
    const std::string& text = config_.argv[index];
    std::vector<Segment> segments;
    std::string literal;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
        literal += c;  // {{ and }} are literal braces
        ++i;
        continue;
      }
      if (c != '{') {
        literal += c;
        continue;
      }
      std::size_t close = i + 1;
      while (close < text.size() && is_name_char(text[close])) ++close;
      if (close == i + 1 || !is_name_start(text[i + 1]) || close >= text.size() || text[close] != '}') {
        throw UserError("argv[" + std::to_string(index) + "] '" + text +
                        "': malformed placeholder at column " + std::to_string(i + 1) +
                        "; write {parameter_name}, or {{ for a literal brace");
      }
      if (!literal.empty()) segments.push_back({false, std::move(literal)});
      literal.clear();
      segments.push_back({true, text.substr(i + 1, close - i - 1)});
      i = close;
    }
    if (!literal.empty() || segments.empty()) segments.push_back({false, literal});
    templates_.push_back(std::move(segments));
  }
}

std::vector<std::string> CommandTarget::reserved_metric_names() const {
  std::vector<std::string> names = {"intervals", "objective", "remeasured"};
  if (config_.objective != "latency_s") names.push_back(kProgramLatencyMetric);
  return names;
}

std::vector<std::string> CommandTarget::placeholders() const {
  std::set<std::string> names;
  for (const auto& segments : templates_) {
    for (const auto& s : segments) {
      if (s.placeholder) names.insert(s.text);
    }
  }
  return {names.begin(), names.end()};
}

std::optional<std::vector<std::string>> CommandTarget::expand(const nlohmann::json& params,
                                                              std::string* error) const {
  std::vector<std::string> argv;
  for (const auto& segments : templates_) {
    std::string argument;
    for (const auto& s : segments) {
      if (!s.placeholder) {
        argument += s.text;
      } else if (params.is_object() && params.contains(s.text)) {
        argument += argument_text(params[s.text]);
      } else {
        if (error) *error = "argv uses {" + s.text + "} but the candidate has no parameter '" + s.text + "'";
        return std::nullopt;
      }
    }
    argv.push_back(std::move(argument));
  }
  return argv;
}

CommandMeasurement CommandTarget::evaluate(const nlohmann::json& params,
                                           std::optional<double> budget_s) const {
  CommandMeasurement measurement;
  const auto start = std::chrono::steady_clock::now();
  auto finish = [&](Outcome status, std::string error) {
    measurement.status = status;
    measurement.error = std::move(error);
    measurement.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (status != Outcome::ok) measurement.metrics = nlohmann::json::object();
    return measurement;
  };

  std::string expand_error;
  auto argv = expand(params, &expand_error);
  if (!argv) return finish(Outcome::failed, expand_error);
  measurement.argv = *argv;

  ProcessOptions options;
  options.workdir = config_.workdir;
  // The metrics are the last JSON line: a program that floods its stdout
  // keeps its last 16 MiB, not its first.
  options.keep_stdout_tail = true;
  options.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(config_.timeout_s * 1000.0)));
  options.extra_env["AUTOTUNE_PARAMS"] =
      params.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  for (int repeat = 0; repeat < config_.repeats; ++repeat) {
    const std::string which = config_.repeats > 1 ? "run " + std::to_string(repeat + 1) + " of " +
                                                        std::to_string(config_.repeats) + ": "
                                                  : "";
    options.extra_env["AUTOTUNE_REPEAT"] = std::to_string(repeat);
    if (budget_s) {
      const double left =
          *budget_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (left <= 0) return finish(Outcome::timeout, which + "the measurement's time budget is spent");
      options.timeout = std::min(options.timeout,
                                 std::chrono::milliseconds(static_cast<long long>(std::ceil(left * 1000.0))));
    }
    ProcessResult run = run_process(*argv, options);
    if (run.timed_out()) return finish(Outcome::timeout, which + run.describe_failure());
    if (!run.ok()) return finish(Outcome::failed, which + run.describe_failure());

    NonFiniteNumber non_finite;
    auto output = last_json_object(run.stdout_text, &non_finite);
    if (!output) {
      const std::string tail = last_line(run.stdout_text);
      std::string reason;
      if (!non_finite.token.empty()) {
        reason = which + "printed a JSON object whose number " + non_finite.token +
                 " is not a finite number: '" + non_finite.line + "'";
      } else if (json_too_deep(last_line_of(run.stdout_text))) {
        // A deep object is no JSON object to the reader: say why (the bound, not "no object").
        reason = which + "printed JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                 " levels (arrays and objects), which is refused";
      } else {
        reason = which + "printed no JSON object on stdout" +
                 (tail.empty() ? std::string(" (stdout is empty)") : " (last line: '" + tail + "')");
      }
      if (run.stdout_truncated) reason += " (only the last 16 MiB of stdout were kept)";
      const std::string err = one_line_tail(run.stderr_tail, 400);
      if (!err.empty()) reason += "; stderr: " + err;
      return finish(Outcome::failed, reason);
    }
    measurement.repeats.push_back(*output);
    measurement.repeat_wall_s.push_back(run.wall_s);

    if (output->contains("valid") && !(*output)["valid"].is_boolean()) {
      return finish(Outcome::failed, which + "the output's 'valid' is " +
                                         one_line_tail((*output)["valid"].dump(), 100) +
                                         ", not true or false (a JSON boolean, unquoted)");
    }
    if (output->contains("valid") && (*output)["valid"] == false) {
      const auto& why = (*output).value("error", nlohmann::json());
      return finish(Outcome::invalid,
                    which + (why.is_string() ? one_line_tail(why.get<std::string>(), 600)
                                             : std::string("the program reported the candidate invalid")));
    }
    for (const std::string& key : reserved_metric_names()) {
      if (output->contains(key))
        return finish(Outcome::failed,
                      which + "the output holds '" + key +
                          "', a metric name autotune sets itself in a trial; print it under another name");
    }
    if (!output->contains(config_.objective)) {
      return finish(Outcome::failed, which + "the output has no objective metric '" + config_.objective +
                                         "': " + one_line_tail(output->dump(), 200));
    }
    const auto& objective = (*output)[config_.objective];
    if (!objective.is_number() || !std::isfinite(objective.get<double>())) {
      return finish(Outcome::failed, which + "the objective metric '" + config_.objective + "' is " +
                                         objective.dump() + ", not a finite number");
    }
    if (objective.get<double>() <= 0) {  // a time, a rate or a utilisation: zero or less is no measurement
      return finish(Outcome::failed, which + "the objective metric '" + config_.objective + "' is " +
                                         objective.dump() + "; a measurement must be positive");
    }
    for (const auto& name : config_.metrics) {
      if (!output->contains(name)) {
        return finish(Outcome::failed, which + "the output has no metric '" + name + "' (listed in metrics)");
      }
    }
  }

  measurement.metrics = summarise_runs(measurement.repeats, config_.confidence);
  return finish(Outcome::ok, "");
}

CommandTargetConfig parse_command_target(ConfigReader& target, const std::filesystem::path& goal_dir,
                                         const std::vector<std::string>* parameter_names) {
  CommandTargetConfig config;
  const auto kind = target.required<std::string>("kind", "command");
  if (kind != "command") target.fail("kind", "'" + kind + "' is not the command target; accepted: command");
  const YAML::Node argv_node = target.raw("argv");
  config.argv =
      target.required<std::vector<std::string>>("argv", "a list of strings: the program and its arguments");
  if (config.argv.empty() || config.argv[0].empty()) {
    target.fail("argv", "must name a program, e.g. [python3, bench.py, \"{tile_size}\"]", &argv_node);
  }
  config.timeout_s = target.optional_seconds("timeout_s", config.timeout_s);
  config.repeats = target.optional<int>("repeats", config.repeats);
  if (config.repeats < 1 || config.repeats > kMaxRepeats) {
    const YAML::Node node = target.raw("repeats");
    target.fail("repeats",
                "must be 1 to " + std::to_string(kMaxRepeats) + " (runs of the program per candidate)",
                &node);
  }
  config.confidence = target.optional<double>("confidence", config.confidence);
  if (!(config.confidence > 0 && config.confidence < 1)) {
    const YAML::Node node = target.raw("confidence");
    target.fail("confidence", "must be a probability between 0 and 1 (exclusive), e.g. 0.95", &node);
  }
  config.remeasure_beyond = target.optional<double>("remeasure_beyond", config.remeasure_beyond);
  if (!(config.remeasure_beyond >= 0) || !std::isfinite(config.remeasure_beyond)) {
    const YAML::Node node = target.raw("remeasure_beyond");
    target.fail(
        "remeasure_beyond",
        "must be a number of noise widths, 0 or more (0: every win beyond the noise is measured again)",
        &node);
  }
  config.objective = target.optional<std::string>("objective", config.objective);
  if (config.objective.empty()) {
    const YAML::Node node = target.raw("objective");
    target.fail("objective", "must name a metric the program prints", &node);
  }
  config.metrics = target.optional<std::vector<std::string>>("metrics", {});
  const auto workdir = target.maybe<std::string>("workdir");
  config.workdir = goal_dir;
  if (workdir) {
    std::filesystem::path path(*workdir);
    config.workdir = path.is_absolute() ? path : goal_dir / path;
  }
  if (!config.workdir.empty() && !std::filesystem::is_directory(config.workdir)) {
    target.fail(
        workdir ? "workdir" : "",
        "working directory '" + config.workdir.string() + "' " +
            (std::filesystem::exists(config.workdir) ? "is a file, not a directory" : "does not exist"));
  }
  target.finish({"kind", "argv", "timeout_s", "repeats", "confidence", "remeasure_beyond", "objective",
                 "metrics", "workdir"});

  std::optional<CommandTarget> parsed;
  try {
    parsed.emplace(config);
  } catch (const UserError& e) {
    target.fail("argv", e.what(), &argv_node);
  }
  if (parameter_names) {
    for (const auto& name : parsed->placeholders()) {
      if (std::find(parameter_names->begin(), parameter_names->end(), name) == parameter_names->end()) {
        std::string known;
        for (const auto& p : *parameter_names) known += (known.empty() ? "" : ", ") + p;
        target.fail("argv", "placeholder {" + name + "} names no parameter; parameters: " + known,
                    &argv_node);
      }
    }
  }
  if (config.argv[0].find('{') == std::string::npos && !find_executable(config.argv[0], config.workdir)) {
    target.fail("argv",
                missing_executable_reason(config.argv[0], config.workdir,
                                          workdir ? "target.workdir" : "the goal file's folder"),
                &argv_node);
  }
  return config;
}

CommandMeasurementTarget::CommandMeasurementTarget(CommandTargetConfig config) : target_(std::move(config)) {
  const auto& c = target_.config();
  Json identity = {{"argv", c.argv},       {"workdir", c.workdir.string()}, {"objective", c.objective},
                   {"repeats", c.repeats}, {"metrics", c.metrics},          {"files", Json::object()}};
  // Only when not the default, so that trials measured before intervals existed stay cached.
  if (c.confidence != kDefaultConfidence) identity["confidence"] = c.confidence;
  for (const auto& element : c.argv) {
    if (element.empty() || element.find('{') != std::string::npos) continue;
    std::filesystem::path path(element);
    if (path.is_relative()) path = c.workdir / path;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) > (64u << 20))
      continue;
    std::ifstream in(path, std::ios::binary);
    const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    identity["files"][element] = stable_hash(content);
  }
  cache_identity_ = "command:" + stable_hash(identity.dump());
}

std::string CommandMeasurementTarget::description() const {
  std::string text = "command:";
  for (const auto& a : target_.config().argv) text += " " + a;
  return text;
}

std::string CommandMeasurementTarget::cache_identity() const { return cache_identity_; }

std::optional<TimeLimit> CommandMeasurementTarget::own_time_limit() const {
  const auto& c = target_.config();
  const std::string per_run = "target.timeout_s " + number_text(c.timeout_s) + " s";
  return TimeLimit{c.timeout_s * c.repeats,
                   c.repeats == 1 ? per_run : per_run + " x target.repeats " + std::to_string(c.repeats)};
}

Measurement CommandMeasurementTarget::from_summary(Json metrics) const {
  Measurement m;
  m.metrics = std::move(metrics);
  if (m.metrics.contains("profile") && m.metrics["profile"].is_object()) {
    m.profile = m.metrics["profile"];
    m.metrics.erase("profile");
  }
  const std::string& objective = target_.config().objective;
  if (objective == "latency_s" || !m.metrics.contains(objective)) return m;
  // The runner ranks by metrics["latency_s"], so it holds the objective's
  // value (checked finite and positive on every run); a latency_s the program
  // printed beside it must not be ranked, and is kept under its own name.
  const bool has_intervals = m.metrics.contains("intervals") && m.metrics["intervals"].is_object();
  if (m.metrics.contains("latency_s")) {
    m.metrics[kProgramLatencyMetric] = std::move(m.metrics["latency_s"]);
    if (has_intervals && m.metrics["intervals"].contains("latency_s")) {
      m.metrics["intervals"][kProgramLatencyMetric] = std::move(m.metrics["intervals"]["latency_s"]);
      m.metrics["intervals"].erase("latency_s");
    }
  }
  m.metrics["latency_s"] = m.metrics[objective];
  m.metrics["objective"] = objective;
  if (has_intervals && m.metrics["intervals"].contains(objective))
    m.metrics["intervals"]["latency_s"] = m.metrics["intervals"][objective];
  return m;
}

Measurement CommandMeasurementTarget::measure(const Candidate& candidate, const MeasureOptions& options) {
  CommandMeasurement run = target_.evaluate(candidate.params, options.deadline_s);
  Measurement m = from_summary(run.metrics);
  m.status = run.status;
  m.repeats = Json::array();
  for (const auto& output : run.repeats) m.repeats.push_back(output);
  m.error = run.error;
  m.duration_ms = run.wall_s * 1000.0;
  return m;
}

Measurement CommandMeasurementTarget::combine(const Json& earlier_repeats, const Measurement& again) const {
  if (again.status != Outcome::ok || !earlier_repeats.is_array() || !again.repeats.is_array()) return again;
  std::vector<Json> runs(earlier_repeats.begin(), earlier_repeats.end());
  runs.insert(runs.end(), again.repeats.begin(), again.repeats.end());
  Measurement m = from_summary(summarise_runs(runs, target_.config().confidence));
  m.status = Outcome::ok;
  m.repeats = Json(runs);
  m.duration_ms = again.duration_ms;
  return m;
}

}  // namespace autotune::skills
