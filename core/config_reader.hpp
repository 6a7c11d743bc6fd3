#pragma once
// Typed, strict reading of YAML configuration (targets, goals, search spaces).
//
// A ConfigReader wraps one YAML mapping. Each key is read exactly through
// required<T>() / optional<T>() / child(); finish() then rejects every key that
// was not read, so a typo is an error rather than a silently ignored setting.
// Every error is a UserError of one line: "<file>:<line>: <key path>: <what is
// wrong>; <what is accepted>".
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace autotune {

// Loads a YAML file; a missing file or a syntax error is a UserError naming it,
// and so is what check_yaml_document refuses.
YAML::Node load_yaml_file(const std::filesystem::path& path);
// The same for YAML text (a goal stored with its run); `where` names it in errors.
YAML::Node load_yaml_text(const std::string& text, const std::string& where);
// Refuses (UserError, one line naming `where` and the line) a key repeated in
// a mapping, a recursive alias (`a: &a [*a]`), nesting deeper than 100 levels
// and a document of more than 200,000 values once its aliases are expanded
// ("billion laughs"): every reader that walks it afterwards is bounded.
void check_yaml_document(const YAML::Node& document, const std::string& where);

// Where each key of a YAML document was written. Kept with what was read from
// the document, so that a check made later (a parameter the kernel does not
// have, a start point outside the space) names the key's file and line
// without reading the file again.
class KeyLocations {
 public:
  KeyLocations() = default;
  // `prefix` is the dotted path of `document` inside its file ("tasks.adamw" for a suite's task).
  KeyLocations(const YAML::Node& document, std::string file, std::string prefix = "");

  // "<file>:<line>: <prefix.a.b.c>: " for the key path, at the line of its
  // deepest key that the document has (line 1 when it has none).
  std::string operator()(const std::vector<std::string>& key_path) const;
  const std::string& file() const { return file_; }

 private:
  void record(const YAML::Node& node, std::vector<std::string>& path);

  std::string file_;
  std::string prefix_;
  std::map<std::vector<std::string>, int> lines_;  // key path -> 1-based line
};

// The longest duration any setting takes (about 116 days). A timeout or budget
// beyond it would overflow the clocks that wait on it: a timeout of 1e300 s
// expired at once.
constexpr double kMaxSeconds = 1e7;
std::string seconds_range_text();  // "a positive number of seconds, at most 10000000 (about 116 days)"

class ConfigReader {
 public:
  // `path` is the dotted key path of `node` inside `file` ("" at the top).
  ConfigReader(YAML::Node node, std::string file, std::string path = "");

  bool has(const std::string& key) const;
  YAML::Node raw(const std::string& key) const;  // marks the key as read

  template <class T>
  T required(const std::string& key, const std::string& accepted = "");
  template <class T>
  T optional(const std::string& key, T fallback, const std::string& accepted = "");
  template <class T>
  std::optional<T> maybe(const std::string& key, const std::string& accepted = "");

  // A name that listings and messages print (a goal's, a model's, a target's):
  // one line without control characters, which could forge or erase lines
  // on a terminal. `fallback` when absent; required when there is none.
  std::string name(const std::string& key, std::optional<std::string> fallback = std::nullopt);

  // A duration in seconds, `fallback` when absent: positive and at most kMaxSeconds.
  double optional_seconds(const std::string& key, double fallback);

  // A whole number from `lowest` to `largest` (a count: workers, layers, a
  // sequence length). Out of range, or not a whole number, is an error at the
  // key naming the range. Absent, optional_count gives `fallback`, checked
  // the same way (a default derived from another setting may be out of
  // range), maybe_count nothing, and required_count an error.
  std::int64_t required_count(const std::string& key, std::int64_t lowest, std::int64_t largest);
  std::int64_t optional_count(const std::string& key, std::int64_t fallback, std::int64_t lowest,
                              std::int64_t largest);
  std::optional<std::int64_t> maybe_count(const std::string& key, std::int64_t lowest, std::int64_t largest);

  // A nested mapping; throws if `key` is absent or not a mapping.
  ConfigReader child(const std::string& key);
  std::optional<ConfigReader> maybe_child(const std::string& key);

  // Keys of this mapping in file order (for open-ended mappings such as a
  // parameter space); all are marked as read.
  std::vector<std::string> keys();

  // Rejects keys never read. `accepted` lists the keys this mapping accepts.
  void finish(const std::vector<std::string>& accepted = {}) const;

  const std::string& file() const { return file_; }
  std::string key_path(const std::string& key) const;
  const YAML::Node& node() const { return node_; }

  // A UserError located at `node` (or this mapping when null).
  [[noreturn]] void fail(const std::string& key, const std::string& message,
                         const YAML::Node* at = nullptr) const;
  // `key` is required and absent: a UserError saying so (`what`: "missing
  // required key"). When a key of this mapping looks like a misspelling of
  // it, that key is named and located instead of what is `accepted`:
  // "m.yaml:5: mlp.intermediate_size: missing required key; unknown key
  // 'intermediate' (did you mean intermediate_size?)".
  [[noreturn]] void fail_missing(const std::string& key, const std::string& what,
                                 const std::string& accepted = "") const;
  std::string location(const YAML::Node& at) const;

 private:
  // `value`, or an error at `key` naming the range.
  std::int64_t in_count_range(const std::string& key, std::int64_t value, std::int64_t lowest,
                              std::int64_t largest) const;
  YAML::Node lookup(const std::string& key) const;
  // The entry named `key` in this mapping: (key node, value node), both Undefined when absent.
  std::pair<YAML::Node, YAML::Node> entry(const std::string& key) const;
  template <class T>
  T convert(const YAML::Node& value, const std::string& key, const std::string& accepted) const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
  mutable std::set<std::string> read_keys_;
};

// A node on one line, as YAML's flow style writes it: [32, 1e400], {a: 1}.
std::string flow_text(const YAML::Node& node);

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

// Names for diagnostics: "an integer", "a string", "a list of integers", ...
template <class T>
std::string yaml_type_name() {
  if constexpr (std::is_same_v<T, bool>)
    return "true or false";
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>)
    return "a non-negative integer";
  else if constexpr (std::is_integral_v<T>)
    return "an integer";
  else if constexpr (std::is_floating_point_v<T>)
    return "a number";
  else if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else if constexpr (is_vector<T>::value && std::is_same_v<typename T::value_type, bool>)
    return "a list of true or false";
  else if constexpr (is_vector<T>::value && std::is_integral_v<typename T::value_type>)
    return "a list of integers";
  else if constexpr (is_vector<T>::value && std::is_floating_point_v<typename T::value_type>)
    return "a list of numbers";
  else if constexpr (is_vector<T>::value && std::is_same_v<typename T::value_type, std::string>)
    return "a list of strings";
  else
    return "a list";
}

template <class T>
T ConfigReader::convert(const YAML::Node& value, const std::string& key, const std::string& accepted) const {
  const std::string expected = accepted.empty() ? std::string("expected ") + yaml_type_name<T>() : accepted;
  if constexpr (std::is_same_v<T, std::string> || std::is_arithmetic_v<T>) {
    if (!value.IsScalar())
      fail(key,
           std::string("expected ") + yaml_type_name<T>() +
               (accepted.empty() ? "" : "; accepted: " + accepted),
           &value);
  }
  if constexpr (std::is_arithmetic_v<T>) {
    // A quoted scalar is a string, as it is in a search space's domain, where
    // "32" is a name: a number or a truth value is written without quotes.
    if (value.Tag() == "!")
      fail(key,
           "'" + value.Scalar() + "' is quoted, so it is a string, not " + yaml_type_name<T>() +
               "; write it without quotes",
           &value);
  }
  try {
    const T converted = value.as<T>();
    // YAML spells infinity and NaN (.inf, .nan); no setting of ours means either.
    if constexpr (std::is_floating_point_v<T>)
      if (!std::isfinite(converted))
        fail(key,
             "'" + value.Scalar() + "' is not a finite number" +
                 (accepted.empty() ? "" : "; accepted: " + accepted),
             &value);
    return converted;
  } catch (const YAML::Exception&) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const std::string& text = value.IsScalar() ? value.Scalar() : std::string();
      const std::size_t digits = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
      if (text.size() > digits && text.find_first_not_of("0123456789", digits) == std::string::npos &&
          !(std::is_unsigned_v<T> && text[0] == '-'))
        fail(key,
             "'" + text + "' is out of range: this key holds " +
                 (text[0] == '-' ? "at least " + std::to_string(std::numeric_limits<T>::min())
                                 : "at most " + std::to_string(std::numeric_limits<T>::max())) +
                 (accepted.empty() ? "" : " (" + accepted + ")"),
             &value);
    }
    fail(key,
         (value.IsScalar()
              ? "'" + value.Scalar() + "'"
              : std::string(value.IsSequence() ? "a list" : "a mapping") + " (" + flow_text(value) + ")") +
             " is not " + yaml_type_name<T>() + (accepted.empty() ? "" : "; accepted: " + accepted),
         &value);
  }
  (void)expected;
}

template <class T>
T ConfigReader::required(const std::string& key, const std::string& accepted) {
  read_keys_.insert(key);
  YAML::Node value = lookup(key);
  if (!value) fail_missing(key, "missing required key", accepted);
  return convert<T>(value, key, accepted);
}

template <class T>
T ConfigReader::optional(const std::string& key, T fallback, const std::string& accepted) {
  read_keys_.insert(key);
  YAML::Node value = lookup(key);
  if (!value || value.IsNull()) return fallback;
  return convert<T>(value, key, accepted);
}

template <class T>
std::optional<T> ConfigReader::maybe(const std::string& key, const std::string& accepted) {
  read_keys_.insert(key);
  YAML::Node value = lookup(key);
  if (!value || value.IsNull()) return std::nullopt;
  return convert<T>(value, key, accepted);
}

}  // namespace autotune
