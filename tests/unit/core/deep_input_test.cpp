// Inputs deep or wide enough to crash a reader: YAML aliases that recurse or
// expand exponentially, JSON nested far deeper than any real document.
#include <doctest/doctest.h>

#include <string>

#include "core/config_reader.hpp"
#include "core/json_text.hpp"

using namespace autotune;

namespace {
std::string error_of(const std::string& yaml) {
  try {
    load_yaml_text(yaml, "goal.yaml");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("a recursive YAML alias is one error line, not a stack overflow") {
  for (const char* text : {"a: &a [*a]\n", "name: x\nskills: &s {inner: *s}\n", "- &l [1, [2, *l]]\n"}) {
    const std::string error = error_of(text);
    CAPTURE(text);
    CHECK(error.find("goal.yaml:") == 0);
    CHECK(error.find("recursive alias") != std::string::npos);
    CHECK(error.find('\n') == std::string::npos);
  }
}

TEST_CASE("aliases that expand to billions of values are refused at once") {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) text += (j ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  const std::string error = error_of(text);
  CHECK(error.find("goal.yaml: more than 200000 values once its aliases are expanded") == 0);
}

TEST_CASE("ordinary aliases, repeated keys and deep nesting") {
  CHECK(error_of("base: &b {tile: 64}\nx: *b\ny: *b\n").empty());
  CHECK(error_of("a: 1\nb: 2\na: 3\n") ==
        "goal.yaml:3: a: the key appears twice (first at line 1); each key may appear once");
  CHECK(
      error_of(std::string(150, '[') + std::string(150, ']') + "\n").find("nested deeper than 100 levels") !=
      std::string::npos);
}

TEST_CASE("JSON nested deeper than the bound is a parse error before any value is built") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK(json_too_deep(deep).value() == kMaxJsonDepth);
  CHECK_THROWS_AS(parse_json(deep), nlohmann::json::parse_error);
  try {
    parse_json("{\"latency_s\": " + deep + "}");
    FAIL("a deep value parsed");
  } catch (const nlohmann::json::parse_error& e) {
    CHECK(std::string(e.what()).find("nested deeper than 256 levels") != std::string::npos);
  }
  // Brackets inside strings do not nest; a document at the bound parses.
  CHECK(parse_json("{\"a\": \"" + std::string(1000, '[') + "\\\"[\"}")["a"].get<std::string>().size() ==
        1002);
  const std::string at_bound = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  CHECK(parse_json(at_bound).is_array());
}

TEST_CASE("JSON with a key given twice in one object, or a number beyond a double, is a parse error") {
  auto parse_failure = [](const std::string& text) -> std::string {
    try {
      parse_json(text);
    } catch (const nlohmann::json::parse_error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(parse_failure(R"({"measured_ms": 0.25, "measured_ms": 5})")
            .find("the key \"measured_ms\" is given twice in one object") != std::string::npos);
  CHECK(parse_failure(R"({"a": {"x": 1, "x": 2}})").find("\"x\" is given twice") != std::string::npos);
  CHECK(parse_failure(R"({"x": 1e400})").find("number overflow") != std::string::npos);
  // The same key in two objects, and an object of many keys (hashed past the first few), are fine.
  CHECK(parse_json(R"([{"x": 1}, {"x": 2, "y": {"x": 3}}])").size() == 2);
  std::string many = "{";
  for (int i = 0; i < 1000; ++i)
    many += (i ? ", \"k" : "\"k") + std::to_string(i) + "\": " + std::to_string(i);
  CHECK(parse_json(many + "}").size() == 1000);
  CHECK(parse_failure(many + ", \"k999\": 0}").find("\"k999\" is given twice") != std::string::npos);
}
