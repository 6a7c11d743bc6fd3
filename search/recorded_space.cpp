#include "search/recorded_space.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>

#include "core/error.hpp"
#include "core/json_text.hpp"

namespace autotune::search {

namespace {

[[noreturn]] void malformed(const std::filesystem::path& path, const std::string& what) {
  throw UserError(path.string() + ": not a Kernel Tuner cachefile: " + what);
}

}  // namespace

RecordedSpace RecordedSpace::load(const std::filesystem::path& path, const CachefileReading& reading) {
  std::ifstream in(path);
  if (!std::filesystem::is_regular_file(path) || !in)
    throw UserError(path.string() + ": cachefile not found");
  return parse(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), path,
               reading);
}

RecordedSpace RecordedSpace::parse(const std::string& text, const std::filesystem::path& path,
                                   const CachefileReading& reading) {
  nlohmann::json document;
  try {
    document = parse_json(text);
  } catch (const nlohmann::json::exception& e) {
    malformed(path, std::string("invalid JSON (") + e.what() + ")");
  }
  if (!document.is_object()) malformed(path, "expected a JSON object");
  for (const char* key : {"tune_params_keys", "tune_params", "cache"})
    if (!document.contains(key)) malformed(path, std::string("missing '") + key + "'");
  const auto& keys = document.at("tune_params_keys");
  const auto& tune_params = document.at("tune_params");
  const auto& cache = document.at("cache");
  if (!keys.is_array() || keys.empty())
    malformed(path, "'tune_params_keys' must be a non-empty list of names");
  if (!tune_params.is_object()) malformed(path, "'tune_params' must be an object of value lists");
  if (!cache.is_object()) malformed(path, "'cache' must be an object of records");

  if (document.contains("objective") && !document.at("objective").is_string())
    malformed(path, "'objective' must name a field of the records, e.g. \"time\"");
  RecordedSpace target;
  target.name_ = path.parent_path().filename().string() + "/" + path.stem().string();
  target.kernel_name_ = document.value("kernel_name", std::string());
  target.device_name_ = document.value("device_name", std::string());
  target.objective_ = !reading.objective.empty() ? reading.objective
                      : document.contains("objective") && document.at("objective").is_string()
                          ? document.at("objective").get<std::string>()
                          : "time";
  const bool as_time = reading.as_time || target.objective_ == "time";

  std::vector<ParameterSpec> parameters;
  std::vector<std::string> names;
  try {
    for (const auto& key : keys) {
      if (!key.is_string()) malformed(path, "'tune_params_keys' must list names");
      const std::string name = key.get<std::string>();
      if (std::find(names.begin(), names.end(), name) != names.end())
        malformed(path, "'tune_params_keys' names '" + name + "' twice");
      if (!tune_params.contains(name) || !tune_params.at(name).is_array())
        malformed(path, "'tune_params' has no value list for '" + name + "'");
      std::vector<ParamValue> values;
      for (const auto& v : tune_params.at(name))
        values.push_back(param_value_from_json(v, "parameter '" + name + "'"));
      parameters.push_back(ParameterSpec::ordered(name, std::move(values)));
      names.push_back(name);
    }
  } catch (const UserError& e) {
    const std::string message = e.what();
    if (message.rfind(path.string(), 0) == 0) throw;
    malformed(path, message);
  }

  std::vector<Positions> allowed;
  std::vector<double> values;
  std::vector<std::string> failures;
  std::vector<std::vector<double>> runs_of_record;
  std::vector<std::string> record_keys;
  for (const auto& [key, record] : cache.items()) {
    record_keys.push_back(key);
    if (!record.is_object()) malformed(path, "cache record '" + key + "' is not an object");
    Positions positions(names.size());
    for (std::size_t p = 0; p < names.size(); ++p) {
      if (!record.contains(names[p]))
        malformed(path, "cache record '" + key + "' has no value for '" + names[p] + "'");
      const auto& raw = record.at(names[p]);
      std::optional<std::uint32_t> position;
      if (raw.is_number() || raw.is_string())
        position = parameters[p].position(param_value_from_json(raw, names[p]));
      if (!position)
        malformed(path,
                  "cache record '" + key + "': " + names[p] + " = " + raw.dump() + " is not in tune_params");
      positions[p] = *position;
    }
    // A record's objective is a value, not the file's format: these name the record alone.
    const std::string where = path.string() + ": cache record '" + key + "'";
    if (!record.contains(target.objective_))
      throw UserError(where + " has no '" + target.objective_ + "', the field read as the objective");
    const auto& objective = record.at(target.objective_);
    std::vector<double> runs;
    if (objective.is_number()) {
      // A time is a duration: one of zero or less would be the optimum of every search, and a replay
      // goal's latency.
      if (as_time && !(objective.get<double>() > 0))
        throw UserError(where + ": " + target.objective_ + " = " + objective.dump() +
                        " is not a positive time in ms (a failure is recorded as a string)");
      values.push_back(objective.get<double>());
      failures.emplace_back();
      if (const auto times = record.find("times"); times != record.end() && times->is_array())
        for (const auto& run : *times)
          if (run.is_number()) runs.push_back(run.get<double>());
    } else if (objective.is_string()) {
      values.push_back(std::numeric_limits<double>::quiet_NaN());
      failures.push_back(objective.get<std::string>());
    } else {
      throw UserError(where + ": '" + target.objective_ + "' is neither a number nor a failure");
    }
    runs_of_record.push_back(std::move(runs));
    allowed.push_back(std::move(positions));
  }
  if (allowed.empty()) malformed(path, "'cache' is empty");
  std::vector<Positions> ordered = allowed;
  target.space_ = std::make_shared<const SearchSpace>(
      SearchSpace::from_allowed(std::move(parameters), std::move(ordered)));
  target.value_by_index_.assign(target.space_->size(), std::numeric_limits<double>::quiet_NaN());
  target.failure_by_index_.assign(target.space_->size(), "");
  target.runs_by_index_.assign(target.space_->size(), {});
  // Two records of one configuration: which of their values is the space's would be a silent choice.
  std::vector<std::size_t> record_of_index(target.space_->size(), allowed.size());
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    const auto index = target.space_->index_of_positions(allowed[i]);
    AUTOTUNE_CHECK(index.has_value(), "recorded configuration missing from its own space");
    if (const std::size_t first = record_of_index[*index]; first != allowed.size())
      malformed(path, "cache records '" + record_keys[first] + "' and '" + record_keys[i] +
                          "' hold the same configuration");
    record_of_index[*index] = i;
    target.value_by_index_[*index] = values[i];
    target.failure_by_index_[*index] = failures[i];
    target.runs_by_index_[*index] = std::move(runs_of_record[i]);
  }
  if (target.valid_values().empty()) malformed(path, "every recorded configuration failed");
  return target;
}

RecordedResult RecordedSpace::evaluate_index(std::uint64_t index) const {
  RecordedResult result;
  if (index >= value_by_index_.size()) return result;
  if (std::isnan(value_by_index_[index])) {
    result.status = Outcome::failed;
    result.failure = failure_by_index_[index];
  } else {
    result.status = Outcome::ok;
    result.value = value_by_index_[index];
    result.runs = runs_by_index_[index];
  }
  return result;
}

RecordedResult RecordedSpace::evaluate(const Configuration& configuration) const {
  const auto index = space_->index_of(configuration);
  if (!index) return {};
  return evaluate_index(*index);
}

std::optional<Observation> RecordedSpace::observe(const Configuration& configuration) const {
  const RecordedResult result = evaluate(configuration);
  if (result.status == Outcome::ok) return Observation::success(configuration, result.value);
  if (result.status == Outcome::failed) return Observation::failed(configuration, result.failure);
  return std::nullopt;
}

bool RecordedSpace::same_kernel_as(const RecordedSpace& other) const {
  const auto& mine = space().parameters();
  const auto& theirs = other.space().parameters();
  if (kernel_name_ != other.kernel_name_ || mine.size() != theirs.size()) return false;
  for (std::size_t p = 0; p < mine.size(); ++p)
    if (mine[p].name() != theirs[p].name()) return false;
  return true;
}

std::vector<double> RecordedSpace::valid_values() const {
  std::vector<double> out;
  for (double v : value_by_index_)
    if (!std::isnan(v)) out.push_back(v);
  return out;
}

double RecordedSpace::optimum() const {
  const auto values = valid_values();
  return *std::min_element(values.begin(), values.end());
}

}  // namespace autotune::search
