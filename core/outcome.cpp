#include "core/outcome.hpp"

#include <array>
#include <utility>

namespace autotune {

namespace {

constexpr std::array<std::pair<Outcome, std::string_view>, 7> kNames{{
    {Outcome::ok, "ok"},
    {Outcome::invalid, "invalid"},
    {Outcome::wrong_answer, "wrong_answer"},
    {Outcome::implausible, "implausible"},
    {Outcome::failed, "failed"},
    {Outcome::timeout, "timeout"},
    {Outcome::cached, "cached"},
}};

}  // namespace

std::string_view to_string(Outcome outcome) {
  for (const auto& [value, name] : kNames)
    if (value == outcome) return name;
  return "failed";
}

std::optional<Outcome> outcome_named(std::string_view name) {
  for (const auto& [value, candidate] : kNames)
    if (candidate == name) return value;
  return std::nullopt;
}

std::string_view outcome_names() { return "ok, invalid, wrong_answer, implausible, failed, timeout, cached"; }

bool is_measured(Outcome outcome) { return outcome == Outcome::ok || outcome == Outcome::cached; }

}  // namespace autotune
