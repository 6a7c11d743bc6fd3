#pragma once
// Constraint expressions over parameters and named constants.
//
// Grammar (C-like, all arithmetic in double; `/` is real division, `%` is
// fmod, so `a % b == 0` tests divisibility of integers):
//   expr    := or
//   or      := and ("||" and)*          and := not ("&&" not)*
//   cmp     := sum (("=="|"!="|"<"|"<="|">"|">=") sum)?
//   sum     := product (("+"|"-") product)*
//   product := unary (("*"|"/"|"%") unary)*
//   unary   := ("-"|"!"|"+") unary | primary
//   primary := number | identifier | "string" | "(" expr ")" | min(expr, expr) | max(expr, expr)
// A categorical parameter compares with a string literal ("layout == 'row'"):
// inside expressions it stands for its position, and the literal is resolved
// to that position when parsed. A value is true when non-zero; NaN (x % 0,
// 0 / 0) makes a comparison false, so such a configuration is rejected.
//
// Besides exact evaluation, an Expression evaluates over intervals (each
// parameter either bound to one value or ranging over its domain), giving a
// conservative answer "surely false / surely true / unknown" that lets space
// enumeration prune a partial assignment before all parameters are bound.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace autotune::search {

struct Interval {
  double lo = 0, hi = 0;
  static Interval point(double v) { return {v, v}; }
};

// What an identifier stands for: a parameter (by slot) or a constant.
struct Symbol {
  std::optional<std::size_t> parameter_slot;
  double constant = 0;
  // For a categorical parameter, its values (string literals compared with it
  // resolve to their position).
  const std::vector<std::string>* categories = nullptr;
};
using SymbolResolver = std::function<std::optional<Symbol>(std::string_view name)>;

class Expression {
 public:
  // Parses `text`. A syntax error, or an identifier `resolve` does not know, is
  // a UserError "constraint '<text>': <what> at position <column> (token '<t>')".
  static Expression parse(const std::string& text, const SymbolResolver& resolve);

  // Exact value; `parameters` is indexed by parameter slot.
  double evaluate(std::span<const double> parameters) const;
  bool holds(std::span<const double> parameters) const { return truth(evaluate(parameters)); }
  // Over intervals; for a boolean result, [0,0] is surely false, [1,1] surely true.
  Interval bounds(std::span<const Interval> parameters) const;
  bool surely_false(std::span<const Interval> parameters) const {
    const Interval r = bounds(parameters);
    return r.lo == 0 && r.hi == 0;
  }

  const std::string& text() const { return text_; }
  // Slots of the parameters the expression reads, ascending, unique.
  const std::vector<std::size_t>& parameter_slots() const { return slots_; }

  static bool truth(double v) { return v != 0 && v == v; }

  enum class Op : std::uint8_t {
    constant,
    parameter,
    neg,
    logical_not,
    add,
    sub,
    mul,
    div,
    mod,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    logical_and,
    logical_or,
    min,
    max
  };
  struct Node {
    Op op;
    std::int32_t a = -1, b = -1;  // child node indices
    double value = 0;             // constant
    std::size_t slot = 0;         // parameter
  };

 private:
  friend class ExpressionParser;
  double eval(std::int32_t node, std::span<const double> parameters) const;
  Interval eval_bounds(std::int32_t node, std::span<const Interval> parameters) const;

  std::string text_;
  std::vector<Node> nodes_;
  std::int32_t root_ = -1;
  std::vector<std::size_t> slots_;
};

}  // namespace autotune::search
