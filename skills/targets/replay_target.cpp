#include "skills/targets/replay_target.hpp"

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/json_text.hpp"

namespace autotune::skills {

namespace {

std::string file_text(const std::filesystem::path& cachefile) {
  std::ifstream in(cachefile);
  if (!std::filesystem::is_regular_file(cachefile) || !in)
    throw UserError(cachefile.string() + ": cannot open the cachefile");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ReplayTarget::ReplayTarget(const std::filesystem::path& cachefile, const std::string& objective)
    : ReplayTarget(cachefile, file_text(cachefile), objective) {}

// The text is read once: the cache identity is the hash of exactly what was parsed.
ReplayTarget::ReplayTarget(const std::filesystem::path& cachefile, const std::string& text,
                           const std::string& objective)
    : path_(cachefile),
      content_hash_(stable_hash(text)),
      recording_(search::RecordedSpace::parse(text, cachefile, {.objective = objective, .as_time = true})) {}

std::string ReplayTarget::kernel_name() const {
  return recording_.kernel_name().empty() ? path_.stem().string() : recording_.kernel_name();
}

std::string ReplayTarget::device_name() const {
  return recording_.device_name().empty() ? "recorded" : recording_.device_name();
}

std::string ReplayTarget::description() const {
  return "replay of " + path_.filename().string() + " (" + kernel_name() + " on " + device_name() + ")";
}

std::string ReplayTarget::cache_identity() const {
  return "replay:" + content_hash_ + ":" + recording_.objective();
}

Measurement ReplayTarget::measure(const Candidate& candidate, const MeasureOptions&) {
  Measurement m;
  const auto& space = recording_.space();
  std::optional<std::uint64_t> index;
  try {
    index = space.index_of(search::configuration_from_json(space, candidate.params));
  } catch (
      const UserError&) {  // a value of another type or a missing parameter: not a recorded configuration
  }
  const search::RecordedResult result = index ? recording_.evaluate_index(*index) : search::RecordedResult{};
  if (result.status == Outcome::invalid) {
    m.status = Outcome::invalid;
    m.error = "configuration not recorded in " + path_.filename().string();
    return m;
  }
  if (result.status == Outcome::failed) {
    m.status = Outcome::invalid;
    m.error = kRecordedFailurePrefix + result.failure;
    return m;
  }
  m.status = Outcome::ok;
  m.metrics = {{"latency_s", result.value / 1000.0}, {"recorded_" + recording_.objective(), result.value}};
  if (!result.runs.empty()) m.repeats = result.runs;
  m.verification = {{"method", "recorded"}};
  return m;
}

VariantSpace ReplayTarget::recorded_space() const {
  const auto& space = recording_.space();
  VariantSpace variant;
  variant.name = "recorded";
  variant.description = "the configurations recorded in " + path_.filename().string();
  variant.parameters = space.parameters();
  for (std::uint64_t index = 0; index < space.size(); ++index)
    variant.allowed.push_back(space.positions_at(index));
  for (const auto& parameter : variant.parameters)
    variant.defaults[parameter.name()] = search::to_json(parameter.values().front());
  return variant;
}

}  // namespace autotune::skills
