#include "search/expression.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.hpp"

namespace autotune::search {

namespace {

enum class TokenKind { number, identifier, string, op, end };
struct Token {
  TokenKind kind;
  std::string text;
  std::size_t position;  // 1-based column
  double number = 0;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

// Parsing and evaluation recurse, so nesting is bounded far above any real
// constraint and far below what exhausts a thread's stack.
constexpr std::size_t kMaxNesting = 256;

}  // namespace

class ExpressionParser {
 public:
  ExpressionParser(const std::string& text, const SymbolResolver& resolve) : text_(text), resolve_(resolve) {
    expression_.text_ = text;
    tokenize();
  }

  Expression run() {
    expression_.root_ = parse_or();
    if (peek().kind != TokenKind::end) error("unexpected token", peek());
    switch (expression_.nodes_[static_cast<std::size_t>(expression_.root_)].op) {
      case Op::eq:
      case Op::ne:
      case Op::lt:
      case Op::le:
      case Op::gt:
      case Op::ge:
      case Op::logical_and:
      case Op::logical_or:
      case Op::logical_not:
        break;
      default:
        // A number as a condition (C's "nonzero is true") is almost always a
        // comparison left unfinished: "tile_m + 1" holds everywhere.
        throw UserError(
            "constraint '" + text_ +
            "': not a condition; write a comparison (==, !=, <, <=, >, >=), or comparisons joined "
            "by && and || or negated by !");
    }
    std::sort(expression_.slots_.begin(), expression_.slots_.end());
    expression_.slots_.erase(std::unique(expression_.slots_.begin(), expression_.slots_.end()),
                             expression_.slots_.end());
    return std::move(expression_);
  }

 private:
  using Op = Expression::Op;

  [[noreturn]] void error(const std::string& what, const Token& token) const {
    const std::string shown = token.kind == TokenKind::end ? "end of expression" : "'" + token.text + "'";
    throw UserError("constraint '" + text_ + "': " + what + " at position " + std::to_string(token.position) +
                    " (token " + shown + ")");
  }

  void tokenize() {
    std::size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
        continue;
      }
      const std::size_t start = i;
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && i + 1 < text_.size() && std::isdigit(static_cast<unsigned char>(text_[i + 1])))) {
        std::size_t used = 0;
        double v = 0;
        try {
          v = std::stod(text_.substr(i), &used);
        } catch (const std::exception&) {
          error("malformed number", {TokenKind::number, text_.substr(i, 1), i + 1});
        }
        i += used;
        if (i < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[i])) || text_[i] == '_'))
          error("malformed number", {TokenKind::number, text_.substr(start, i + 1 - start), start + 1});
        tokens_.push_back({TokenKind::number, text_.substr(start, i - start), start + 1, v});
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        while (i < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[i])) || text_[i] == '_'))
          ++i;
        tokens_.push_back({TokenKind::identifier, text_.substr(start, i - start), start + 1});
      } else if (c == '\'' || c == '"') {
        const std::size_t close = text_.find(c, i + 1);
        if (close == std::string::npos)
          error("unterminated string", {TokenKind::string, text_.substr(i), start + 1});
        tokens_.push_back({TokenKind::string, text_.substr(i + 1, close - i - 1), start + 1});
        i = close + 1;
      } else {
        static const char* two[] = {"==", "!=", "<=", ">=", "&&", "||"};
        std::string op;
        for (const char* t : two)
          if (text_.compare(i, 2, t) == 0) op = t;
        if (op.empty() && std::string("+-*/%<>!(),").find(c) != std::string::npos) op = std::string(1, c);
        if (op.empty()) error("unexpected character", {TokenKind::op, std::string(1, c), start + 1});
        tokens_.push_back({TokenKind::op, op, start + 1});
        i += op.size();
      }
    }
    tokens_.push_back({TokenKind::end, "", text_.size() + 1});
  }

  const Token& peek() const { return tokens_[next_]; }
  bool accept(const char* op) {
    if (peek().kind == TokenKind::op && peek().text == op) {
      ++next_;
      return true;
    }
    return false;
  }
  void expect(const char* op, const std::string& what) {
    if (!accept(op)) error("expected " + what, peek());
  }

  std::int32_t add(Expression::Node node) {
    std::size_t depth = 1;
    for (const std::int32_t child : {node.a, node.b})
      if (child >= 0) depth = std::max(depth, depths_[static_cast<std::size_t>(child)] + 1);
    if (depth > kMaxNesting)
      error("more than " + std::to_string(kMaxNesting) + " operations nested or chained", tokens_[next_ - 1]);
    expression_.nodes_.push_back(node);
    depths_.push_back(depth);
    return static_cast<std::int32_t>(expression_.nodes_.size() - 1);
  }
  std::int32_t binary(Op op, std::int32_t a, std::int32_t b) { return add({op, a, b}); }

  std::int32_t parse_or() {
    std::int32_t left = parse_and();
    while (accept("||")) left = binary(Op::logical_or, left, parse_and());
    return left;
  }
  std::int32_t parse_and() {
    std::int32_t left = parse_cmp();
    while (accept("&&")) left = binary(Op::logical_and, left, parse_cmp());
    return left;
  }
  std::int32_t parse_cmp() {
    // A string literal is only meaningful against a categorical parameter, so
    // comparisons resolve it here, where both operands are known.
    const Token left_token = peek();
    std::int32_t left = left_token.kind == TokenKind::string ? -1 : parse_sum();
    static const std::pair<const char*, Op> ops[] = {{"==", Op::eq}, {"!=", Op::ne}, {"<=", Op::le},
                                                     {">=", Op::ge}, {"<", Op::lt},  {">", Op::gt}};
    for (const auto& [text, op] : ops) {
      if (left == -1 && peek().kind == TokenKind::string) ++next_;
      if (!accept(text)) continue;
      const Token right_token = peek();
      std::int32_t right = right_token.kind == TokenKind::string ? -1 : parse_sum();
      if (right_token.kind == TokenKind::string) ++next_;
      if (left == -1 && right == -1)
        error("a string must be compared with a categorical parameter", left_token);
      if (left == -1) left = resolve_literal(left_token, right);
      if (right == -1) right = resolve_literal(right_token, left);
      return binary(op, left, right);
    }
    if (left == -1) error("a string must be compared with a categorical parameter", left_token);
    return left;
  }
  std::int32_t resolve_literal(const Token& literal, std::int32_t other) {
    const auto& node = expression_.nodes_[other];
    const std::vector<std::string>* categories =
        node.op == Op::parameter ? categories_by_slot_[node.slot] : nullptr;
    if (categories == nullptr) error("a string must be compared with a categorical parameter", literal);
    const auto it = std::find(categories->begin(), categories->end(), literal.text);
    if (it == categories->end()) error("not a value of the compared categorical parameter", literal);
    return add({Op::constant, -1, -1, static_cast<double>(it - categories->begin())});
  }
  std::int32_t parse_sum() {
    std::int32_t left = parse_product();
    for (;;) {
      if (accept("+"))
        left = binary(Op::add, left, parse_product());
      else if (accept("-"))
        left = binary(Op::sub, left, parse_product());
      else
        return left;
    }
  }
  std::int32_t parse_product() {
    std::int32_t left = parse_unary();
    for (;;) {
      if (accept("*"))
        left = binary(Op::mul, left, parse_unary());
      else if (accept("/"))
        left = binary(Op::div, left, parse_unary());
      else if (accept("%"))
        left = binary(Op::mod, left, parse_unary());
      else
        return left;
    }
  }
  std::int32_t parse_unary() {
    if (++nesting_ > kMaxNesting)
      error("brackets or unary operators nested more than " + std::to_string(kMaxNesting) + " deep", peek());
    const std::int32_t node = parse_unary_operand();
    --nesting_;
    return node;
  }
  std::int32_t parse_unary_operand() {
    if (accept("-")) return add({Op::neg, parse_unary()});
    if (accept("+")) return parse_unary();
    if (accept("!")) return add({Op::logical_not, parse_unary()});
    return parse_primary();
  }
  std::int32_t parse_primary() {
    const Token token = peek();
    if (token.kind == TokenKind::number) {
      ++next_;
      return add({Op::constant, -1, -1, token.number});
    }
    if (accept("(")) {
      const std::int32_t inner = parse_or();
      expect(")", "')'");
      return inner;
    }
    if (token.kind == TokenKind::identifier) {
      ++next_;
      if (token.text == "min" || token.text == "max") {
        expect("(", "'(' after " + token.text);
        const std::int32_t a = parse_or();
        expect(",", "',' between the two arguments");
        const std::int32_t b = parse_or();
        expect(")", "')' after the two arguments");
        return binary(token.text == "min" ? Op::min : Op::max, a, b);
      }
      const auto symbol = resolve_(token.text);
      if (!symbol)
        error("unknown identifier '" + token.text + "' (neither a parameter nor a constant)", token);
      if (!symbol->parameter_slot) return add({Op::constant, -1, -1, symbol->constant});
      const std::size_t slot = *symbol->parameter_slot;
      expression_.slots_.push_back(slot);
      categories_by_slot_[slot] = symbol->categories;
      Expression::Node node{Op::parameter};
      node.slot = slot;
      return add(node);
    }
    if (token.kind == TokenKind::end) error("expression ends early", token);
    error("unexpected token", token);
  }

  const std::string& text_;
  const SymbolResolver& resolve_;
  std::vector<Token> tokens_;
  std::size_t next_ = 0;
  std::size_t nesting_ = 0;          // parse_unary calls under way
  std::vector<std::size_t> depths_;  // each node's height in the tree
  Expression expression_;
  std::map<std::size_t, const std::vector<std::string>*> categories_by_slot_;
};

Expression Expression::parse(const std::string& text, const SymbolResolver& resolve) {
  return ExpressionParser(text, resolve).run();
}

double Expression::evaluate(std::span<const double> parameters) const { return eval(root_, parameters); }

double Expression::eval(std::int32_t index, std::span<const double> p) const {
  const Node& n = nodes_[index];
  switch (n.op) {
    case Op::constant:
      return n.value;
    case Op::parameter:
      return p[n.slot];
    case Op::neg:
      return -eval(n.a, p);
    case Op::logical_not:
      return truth(eval(n.a, p)) ? 0.0 : 1.0;
    case Op::logical_and:
      return truth(eval(n.a, p)) && truth(eval(n.b, p)) ? 1.0 : 0.0;
    case Op::logical_or:
      return truth(eval(n.a, p)) || truth(eval(n.b, p)) ? 1.0 : 0.0;
    default:
      break;
  }
  const double a = eval(n.a, p), b = eval(n.b, p);
  switch (n.op) {
    case Op::add:
      return a + b;
    case Op::sub:
      return a - b;
    case Op::mul:
      return a * b;
    case Op::div:
      return a / b;
    case Op::mod:
      return std::fmod(a, b);
    case Op::eq:
      return a == b ? 1.0 : 0.0;
    case Op::ne:
      return (a == a && b == b && a != b) ? 1.0 : 0.0;
    case Op::lt:
      return a < b ? 1.0 : 0.0;
    case Op::le:
      return a <= b ? 1.0 : 0.0;
    case Op::gt:
      return a > b ? 1.0 : 0.0;
    case Op::ge:
      return a >= b ? 1.0 : 0.0;
    case Op::min:
      return std::min(a, b);
    case Op::max:
      return std::max(a, b);
    default:
      break;
  }
  throw InternalError("unhandled expression node");
}

namespace {

constexpr Interval kUnknownTruth{0, 1};
constexpr Interval kEverything{-kInf, kInf};

bool is_point(const Interval& v) { return v.lo == v.hi; }
Interval truth_of(bool surely_true, bool surely_false) {
  if (surely_true) return {1, 1};
  if (surely_false) return {0, 0};
  return kUnknownTruth;
}
bool is_surely_true(const Interval& v) { return v.lo > 0 || v.hi < 0; }
bool is_surely_false(const Interval& v) { return v.lo == 0 && v.hi == 0; }
Interval checked(double lo, double hi) {
  if (lo != lo || hi != hi) return kEverything;
  return {lo, hi};
}

}  // namespace

Interval Expression::bounds(std::span<const Interval> parameters) const {
  return eval_bounds(root_, parameters);
}

Interval Expression::eval_bounds(std::int32_t index, std::span<const Interval> p) const {
  const Node& n = nodes_[index];
  switch (n.op) {
    case Op::constant:
      return Interval::point(n.value);
    case Op::parameter:
      return p[n.slot];
    case Op::neg: {
      const Interval a = eval_bounds(n.a, p);
      return {-a.hi, -a.lo};
    }
    case Op::logical_not: {
      const Interval a = eval_bounds(n.a, p);
      if (is_point(a)) return Interval::point(truth(a.lo) ? 0.0 : 1.0);
      return truth_of(is_surely_false(a), is_surely_true(a));
    }
    case Op::logical_and: {
      const Interval a = eval_bounds(n.a, p);
      if (is_surely_false(a)) return {0, 0};
      const Interval b = eval_bounds(n.b, p);
      return truth_of(is_surely_true(a) && is_surely_true(b), is_surely_false(b));
    }
    case Op::logical_or: {
      const Interval a = eval_bounds(n.a, p);
      if (is_surely_true(a)) return {1, 1};
      const Interval b = eval_bounds(n.b, p);
      return truth_of(is_surely_true(b), is_surely_false(a) && is_surely_false(b));
    }
    default:
      break;
  }
  const Interval a = eval_bounds(n.a, p), b = eval_bounds(n.b, p);
  if (is_point(a) && is_point(b)) {
    // Exact on points so that a full assignment agrees with evaluate().
    const double x = a.lo, y = b.lo;
    double r = 0;
    switch (n.op) {
      case Op::add:
        r = x + y;
        break;
      case Op::sub:
        r = x - y;
        break;
      case Op::mul:
        r = x * y;
        break;
      case Op::div:
        r = x / y;
        break;
      case Op::mod:
        r = std::fmod(x, y);
        break;
      case Op::eq:
        r = x == y;
        break;
      case Op::ne:
        r = (x == x && y == y && x != y);
        break;
      case Op::lt:
        r = x < y;
        break;
      case Op::le:
        r = x <= y;
        break;
      case Op::gt:
        r = x > y;
        break;
      case Op::ge:
        r = x >= y;
        break;
      case Op::min:
        r = std::min(x, y);
        break;
      case Op::max:
        r = std::max(x, y);
        break;
      default:
        throw InternalError("unhandled expression node");
    }
    return Interval::point(r);
  }
  // A NaN bound (inf - inf, 0 * inf) means nothing is known.
  switch (n.op) {
    case Op::add:
      return checked(a.lo + b.lo, a.hi + b.hi);
    case Op::sub:
      return checked(a.lo - b.hi, a.hi - b.lo);
    case Op::mul: {
      const double c[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
      for (double v : c)
        if (v != v) return kEverything;
      return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    case Op::div: {
      if (b.lo <= 0 && b.hi >= 0) return kEverything;
      const double c[] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
      for (double v : c)
        if (v != v) return kEverything;
      return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    case Op::mod: {
      if (b.lo <= 0 && b.hi >= 0) return kEverything;  // x % 0 is NaN: nothing is known
      const double m = std::max(std::fabs(b.lo), std::fabs(b.hi));
      if (a.lo >= 0) return {0, std::min(a.hi, m)};
      if (a.hi <= 0) return {-std::min(-a.lo, m), 0};
      return {-m, m};
    }
    // Comparisons: surely true/false when the intervals cannot overlap the
    // other way. NaN cannot arise from non-point operands' bounds here except
    // through kEverything, which never decides anything.
    case Op::eq:
      return truth_of(false, a.hi < b.lo || b.hi < a.lo);
    case Op::ne:
      return truth_of(a.hi < b.lo || b.hi < a.lo, false);
    case Op::lt:
      return truth_of(a.hi < b.lo, a.lo >= b.hi);
    case Op::le:
      return truth_of(a.hi <= b.lo, a.lo > b.hi);
    case Op::gt:
      return truth_of(a.lo > b.hi, a.hi <= b.lo);
    case Op::ge:
      return truth_of(a.lo >= b.hi, a.hi < b.lo);
    case Op::min:
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    case Op::max:
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    default:
      break;
  }
  throw InternalError("unhandled expression node");
}

}  // namespace autotune::search
