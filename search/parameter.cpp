#include "search/parameter.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.hpp"

namespace autotune::search {

namespace {
constexpr std::size_t kMaxDomainSize = 1'000'000;
}

std::string to_string(const ParamValue& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  std::ostringstream out;
  out.precision(17);
  out << std::get<double>(value);
  return out.str();
}

nlohmann::json to_json(const ParamValue& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

ParamValue param_value_from_json(const nlohmann::json& value, const std::string& what) {
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_number_float()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return static_cast<std::int64_t>(value.get<bool>());
  throw UserError(what + ": '" + value.dump() +
                  "' is not a parameter value; accepted: an integer, a real or a string");
}

bool is_numeric(const ParamValue& value) { return !std::holds_alternative<std::string>(value); }

double numeric_value(const ParamValue& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&value)) return *d;
  throw InternalError("numeric_value of the string '" + std::get<std::string>(value) + "'");
}

bool same_value(const ParamValue& a, const ParamValue& b) {
  if (is_numeric(a) != is_numeric(b)) return false;
  if (!is_numeric(a)) return std::get<std::string>(a) == std::get<std::string>(b);
  return numeric_value(a) == numeric_value(b);
}

const char* to_string(ParameterKind kind) {
  switch (kind) {
    case ParameterKind::integer_range:
      return "range";
    case ParameterKind::power_of_two:
      return "pow2";
    case ParameterKind::ordered_list:
      return "list";
    case ParameterKind::categorical:
      return "categorical";
  }
  return "?";
}

ParameterSpec::ParameterSpec(std::string name, ParameterKind kind, std::vector<ParamValue> values)
    : name_(std::move(name)), kind_(kind), values_(std::move(values)) {
  if (values_.empty()) throw UserError("parameter '" + name_ + "': empty domain (no value to choose from)");
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (kind_ == ParameterKind::categorical) {
      numeric_.push_back(static_cast<double>(i));
    } else {
      if (!is_numeric(values_[i]))
        throw UserError("parameter '" + name_ + "': '" + to_string(values_[i]) +
                        "' is not a number; a list of strings must be declared categorical");
      const double v = numeric_value(values_[i]);
      if (!std::isfinite(v)) throw UserError("parameter '" + name_ + "': value is not finite");
      numeric_.push_back(v);
    }
  }
  for (std::size_t i = 0; i < values_.size(); ++i) {
    for (std::size_t j = i + 1; j < values_.size() && values_.size() <= 4096; ++j) {
      if (same_value(values_[i], values_[j]))
        throw UserError("parameter '" + name_ + "': value '" + to_string(values_[i]) + "' listed twice");
    }
  }
}

ParameterSpec ParameterSpec::range(std::string name, std::int64_t lo, std::int64_t hi, std::int64_t step) {
  if (step <= 0)
    throw UserError("parameter '" + name + "': range step must be positive, got " + std::to_string(step));
  if (hi < lo)
    throw UserError("parameter '" + name + "': empty domain: range [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "] has hi < lo");
  const std::uint64_t count = static_cast<std::uint64_t>(hi - lo) / static_cast<std::uint64_t>(step) + 1;
  if (count > kMaxDomainSize)
    throw UserError("parameter '" + name + "': range has " + std::to_string(count) + " values; at most " +
                    std::to_string(kMaxDomainSize) + " are accepted");
  std::vector<ParamValue> values;
  for (std::int64_t v = lo;; v += step) {
    values.emplace_back(v);
    if (hi - v < step) break;
  }
  return ParameterSpec(std::move(name), ParameterKind::integer_range, std::move(values));
}

ParameterSpec ParameterSpec::powers_of_two(std::string name, std::int64_t lo, std::int64_t hi) {
  std::vector<ParamValue> values;
  for (std::int64_t v = 1; v > 0 && v <= hi; v *= 2) {
    if (v >= lo) values.emplace_back(v);
    if (v > (std::int64_t{1} << 61)) break;
  }
  if (values.empty())
    throw UserError("parameter '" + name + "': empty domain: no power of two in [" + std::to_string(lo) +
                    ", " + std::to_string(hi) + "]");
  return ParameterSpec(std::move(name), ParameterKind::power_of_two, std::move(values));
}

ParameterSpec ParameterSpec::ordered(std::string name, std::vector<ParamValue> values) {
  const bool all_strings = !values.empty() && std::all_of(values.begin(), values.end(), [](const auto& v) {
    return std::holds_alternative<std::string>(v);
  });
  return ParameterSpec(std::move(name),
                       all_strings ? ParameterKind::categorical : ParameterKind::ordered_list,
                       std::move(values));
}

ParameterSpec ParameterSpec::categorical(std::string name, std::vector<std::string> values) {
  std::vector<ParamValue> out(values.begin(), values.end());
  return ParameterSpec(std::move(name), ParameterKind::categorical, std::move(out));
}

std::optional<std::uint32_t> ParameterSpec::position(const ParamValue& value) const {
  if (kind_ == ParameterKind::categorical) {
    for (std::size_t i = 0; i < values_.size(); ++i)
      if (same_value(values_[i], value)) return static_cast<std::uint32_t>(i);
    return std::nullopt;
  }
  if (!is_numeric(value)) return std::nullopt;
  const double v = numeric_value(value);
  if (kind_ == ParameterKind::integer_range && numeric_.size() > 1) {
    const double lo = numeric_[0], step = numeric_[1] - numeric_[0];
    const double k = (v - lo) / step;
    if (k < 0 || k != std::floor(k) || k >= static_cast<double>(numeric_.size())) return std::nullopt;
    return static_cast<std::uint32_t>(k);
  }
  for (std::size_t i = 0; i < numeric_.size(); ++i)
    if (numeric_[i] == v) return static_cast<std::uint32_t>(i);
  return std::nullopt;
}

double ParameterSpec::expression_value(std::uint32_t position) const { return numeric_[position]; }

}  // namespace autotune::search
