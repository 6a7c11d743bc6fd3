#include "search/expression.hpp"

#include <doctest/doctest.h>

#include "core/error.hpp"

using namespace autotune;
using namespace autotune::search;

namespace {

const std::vector<std::string> kLayouts{"row", "col"};

std::optional<Symbol> resolve(std::string_view name) {
  Symbol s;
  if (name == "a")
    s.parameter_slot = 0;
  else if (name == "b")
    s.parameter_slot = 1;
  else if (name == "layout") {
    s.parameter_slot = 2;
    s.categories = &kLayouts;
  } else if (name == "limit")
    s.constant = 100;
  else
    return std::nullopt;
  return s;
}

double eval(const std::string& text, double a, double b, double layout = 0) {
  const std::vector<double> values{a, b, layout};
  return Expression::parse(text, resolve).evaluate(values);
}

std::string error_of(const std::string& text) {
  try {
    Expression::parse(text, resolve);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("expressions evaluate with C-like precedence") {
  CHECK(eval("a + b * 2 == 7", 1, 3) == 1);
  CHECK(eval("(a + b) * 2 == 8", 1, 3) == 1);
  CHECK(eval("-a + 10 % 4 == 1", 1, 0) == 1);
  CHECK(eval("a / b == 1.5", 3, 2) == 1);
  CHECK(eval("a * b <= limit && a != b", 5, 20) == 1);
  CHECK(eval("a * b <= limit && a != b", 5, 21) == 0);
  CHECK(eval("a > 3 || !(b == 2)", 1, 2) == 0);
  CHECK(eval("min(a, b) + max(a, b) == 11", 2, 9) == 1);
  CHECK(eval("a % b == 0", 8, 4) == 1);
  CHECK(eval("a % b == 0", 8, 0) == 0);  // NaN: comparison false
  CHECK(eval("layout == 'col'", 0, 0, 1) == 1);
  CHECK(eval("layout != \"col\"", 0, 0, 1) == 0);
  CHECK(eval("1.5e1 >= .5", 0, 0) == 1);
}

TEST_CASE("parse errors give position and token") {
  CHECK(error_of("a * (b + 1").find("expected ')' at position 11 (token end of expression)") !=
        std::string::npos);
  CHECK(error_of("a + * b").find("position 5 (token '*')") != std::string::npos);
  CHECK(error_of("a $ b").find("unexpected character at position 3 (token '$')") != std::string::npos);
  CHECK(error_of("a + c").find("unknown identifier 'c'") != std::string::npos);
  CHECK(error_of("a + c").find("position 5") != std::string::npos);
  CHECK(error_of("a b").find("unexpected token at position 3 (token 'b')") != std::string::npos);
  CHECK(error_of("layout == 'diag'").find("not a value") != std::string::npos);
  CHECK(error_of("a == 'row'").find("categorical") != std::string::npos);
  CHECK(error_of("min(a)").find("','") != std::string::npos);
  CHECK(error_of("").find("ends early") != std::string::npos);
}

TEST_CASE("interval bounds are conservative and exact on points") {
  const Expression e = Expression::parse("a * b <= 12 && a % 2 == 0", resolve);
  const std::vector<Interval> free{{1, 10}, {1, 10}, {0, 1}};
  CHECK_FALSE(e.surely_false(free));
  const std::vector<Interval> too_big{{5, 5}, {3, 10}, {0, 1}};
  CHECK(e.surely_false(too_big));
  const std::vector<Interval> odd{{3, 3}, {1, 1}, {0, 1}};
  CHECK(e.surely_false(odd));
  const std::vector<Interval> fine{{2, 2}, {1, 6}, {0, 1}};
  CHECK_FALSE(e.surely_false(fine));
  CHECK(e.parameter_slots() == std::vector<std::size_t>{0, 1});
}

TEST_CASE("nesting past the bound is a parse error, not an exhausted stack") {
  // Both parsing and evaluation recurse: deep brackets recurse in the parser,
  // a long chain of operators in evaluation.
  const std::string deep_brackets = std::string(100000, '(') + "a" + std::string(100000, ')');
  CHECK(error_of(deep_brackets).find("nested more than 256 deep") != std::string::npos);
  CHECK(error_of(std::string(100000, '-') + "a").find("nested more than 256 deep") != std::string::npos);
  std::string long_chain = "a";
  for (int i = 0; i < 100000; ++i) long_chain += " + a";
  CHECK(error_of(long_chain).find("operations nested or chained") != std::string::npos);

  // Just within the bound, both parse and evaluate.
  const std::string within = std::string(200, '(') + "a" + std::string(200, ')') + " + 1 == 3";
  CHECK(eval(within, 2, 0) == 1);
  std::string chain = "a";
  for (int i = 0; i < 254; ++i) chain += " + a";
  CHECK(eval(chain + " == 255", 1, 0) == 1);
}

TEST_CASE("a constraint is a condition, not a number") {
  for (const char* text : {"5", "a + 1", "min(a, b)", "-(a < b)", "(a * b)"})
    CHECK_MESSAGE(error_of(text).find("not a condition") != std::string::npos, text);
  for (const char* text : {"a < 5", "!(a == b)", "a > 1 && b > 1", "(a <= b) || a == 3"})
    CHECK_MESSAGE(error_of(text).empty(), text);
}
