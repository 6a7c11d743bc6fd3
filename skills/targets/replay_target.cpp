#include "skills/targets/replay_target.hpp"

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/json_text.hpp"

namespace autotune::skills {

ReplayTarget::ReplayTarget(const std::filesystem::path& cachefile, const std::string& objective)
    : path_(cachefile) {
  std::ifstream in(cachefile);
  if (!in) throw UserError(cachefile.string() + ": cannot open the cachefile");
  std::stringstream text;
  text << in.rdbuf();
  content_hash_ = stable_hash(text.str());
  Json document;
  try {
    document = parse_json(text.str());
  } catch (const Json::exception& e) {
    throw UserError(cachefile.string() + ": not a JSON cachefile: " + e.what());
  }
  if (!document.contains("tune_params_keys") || !document.contains("cache"))
    throw UserError(cachefile.string() + ": not a Kernel Tuner cachefile (needs tune_params_keys and cache)");
  kernel_name_ = document.value("kernel_name", cachefile.stem().string());
  device_name_ = document.value("device_name", "recorded");
  objective_ = !objective.empty() ? objective : document.value("objective", std::string("time"));
  keys_ = document.at("tune_params_keys").get<std::vector<std::string>>();
  for (const auto& key : keys_) {
    auto& domain = domains_[key];
    for (const auto& v : document.at("tune_params").at(key))
      domain.push_back(search::param_value_from_json(v, key));
  }
  for (const auto& [id, entry] : document.at("cache").items()) {
    // Each record is replayed as a latency in milliseconds, or as a failure (a string).
    const std::string record = cachefile.string() + ": cache record '" + id + "'";
    if (!entry.is_object() || !entry.contains(objective_))
      throw UserError(record + " has no '" + objective_ + "' (the field replayed as the time, in ms)");
    const Json& value = entry.at(objective_);
    if (!value.is_string() && !(value.is_number() && value.get<double>() > 0))
      throw UserError(record + ": " + objective_ + " = " + value.dump() +
                      " is not a positive time in ms (a failure is recorded as a string)");
    Json params = Json::object();
    for (const auto& key : keys_) params[key] = entry.at(key);
    entries_[params.dump()] = entry;
  }
  if (entries_.empty()) throw UserError(cachefile.string() + ": the cachefile records no configuration");
}

std::string ReplayTarget::description() const {
  return "replay of " + path_.filename().string() + " (" + kernel_name_ + " on " + device_name_ + ")";
}

std::string ReplayTarget::cache_identity() const { return "replay:" + content_hash_ + ":" + objective_; }

Measurement ReplayTarget::measure(const Candidate& candidate, const MeasureOptions&) {
  Measurement m;
  const auto it = entries_.find(candidate.params.dump());
  if (it == entries_.end()) {
    m.status = Outcome::invalid;
    m.error = "configuration not recorded in " + path_.filename().string();
    return m;
  }
  const Json& value = it->second.contains(objective_) ? it->second.at(objective_) : Json(nullptr);
  if (!value.is_number()) {
    m.status = Outcome::invalid;
    m.error = "recorded as " + (value.is_string() ? value.get<std::string>() : value.dump());
    return m;
  }
  m.status = Outcome::ok;
  const double seconds = value.get<double>() / 1000.0;
  m.metrics = {{"latency_s", seconds}, {"recorded_" + objective_, value}};
  if (it->second.contains("times")) m.repeats = it->second.at("times");
  m.verification = {{"method", "recorded"}};
  return m;
}

VariantSpace ReplayTarget::recorded_space() const {
  VariantSpace variant;
  variant.name = "recorded";
  variant.description = "the configurations recorded in " + path_.filename().string();
  for (const auto& key : keys_) {
    const auto& domain = domains_.at(key);
    bool numeric = true;
    for (const auto& v : domain) numeric = numeric && search::is_numeric(v);
    if (numeric) {
      variant.parameters.push_back(search::ParameterSpec::ordered(key, domain));
    } else {
      std::vector<std::string> names;
      for (const auto& v : domain) names.push_back(search::to_string(v));
      variant.parameters.push_back(search::ParameterSpec::categorical(key, names));
    }
  }
  for (const auto& [dump, entry] : entries_) {
    search::Positions positions;
    bool ok = true;
    for (std::size_t p = 0; p < keys_.size() && ok; ++p) {
      const auto position =
          variant.parameters[p].position(search::param_value_from_json(entry.at(keys_[p]), keys_[p]));
      ok = position.has_value();
      positions.push_back(position.value_or(0));
    }
    if (ok) variant.allowed.push_back(positions);
  }
  for (std::size_t p = 0; p < keys_.size(); ++p)
    variant.defaults[keys_[p]] = search::to_json(variant.parameters[p].values().front());
  return variant;
}

}  // namespace autotune::skills
