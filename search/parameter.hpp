#pragma once
// Parameters of a search space: a name and an ordered, finite domain.
//
// Four kinds, all reduced to an explicit ordered list of values at
// construction (so every other part of search/ works on positions 0..n-1):
//  - integer_range: lo, lo+step, ..., <= hi
//  - power_of_two:  the powers of two in [lo, hi]
//  - ordered_list:  explicit values (integers or reals), in the given order
//  - categorical:   strings, unordered (neighbours are all other values)
// An empty domain or a repeated value is a UserError naming the parameter.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace autotune::search {

// A parameter value: integer, real or string (categorical).
using ParamValue = std::variant<std::int64_t, double, std::string>;

std::string to_string(const ParamValue& value);  // 16, 1.5, row
nlohmann::json to_json(const ParamValue& value);
// Reads an integer, real or string JSON value; anything else is a UserError.
ParamValue param_value_from_json(const nlohmann::json& value, const std::string& what);
bool is_numeric(const ParamValue& value);
// The numeric value; a string is an InternalError.
double numeric_value(const ParamValue& value);
// Numeric values compare by value (16 == 16.0); strings by text.
bool same_value(const ParamValue& a, const ParamValue& b);

enum class ParameterKind { integer_range, power_of_two, ordered_list, categorical };
const char* to_string(ParameterKind kind);

class ParameterSpec {
 public:
  static ParameterSpec range(std::string name, std::int64_t lo, std::int64_t hi, std::int64_t step = 1);
  static ParameterSpec powers_of_two(std::string name, std::int64_t lo, std::int64_t hi);
  static ParameterSpec ordered(std::string name, std::vector<ParamValue> values);
  static ParameterSpec categorical(std::string name, std::vector<std::string> values);

  const std::string& name() const { return name_; }
  ParameterKind kind() const { return kind_; }
  const std::vector<ParamValue>& values() const { return values_; }
  std::size_t size() const { return values_.size(); }
  bool is_categorical() const { return kind_ == ParameterKind::categorical; }
  // Position of `value` in the domain, if it is one of its values.
  std::optional<std::uint32_t> position(const ParamValue& value) const;
  // The value used for this parameter inside constraint expressions: the
  // number itself, or the position for a categorical value.
  double expression_value(std::uint32_t position) const;

 private:
  ParameterSpec(std::string name, ParameterKind kind, std::vector<ParamValue> values);
  std::string name_;
  ParameterKind kind_;
  std::vector<ParamValue> values_;
  std::vector<double> numeric_;  // numeric values (positions for categorical)
};

}  // namespace autotune::search
