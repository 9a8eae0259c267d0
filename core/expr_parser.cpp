// The precedence-climbing parser of Python expressions into tessel::Expr (see expr_parser.h).
#include "core/expr_parser.h"

#include <climits>
#include <initializer_list>
#include <limits>

#include "core/error.h"
#include "core/expr_printer.h"
#include "core/input_limits.h"

namespace tessel {

namespace {

/// -x: a folded literal, else 0 - x.
Expr negate(const Expr& x) {
  if (auto c = as_const_int(x)) return IntImmNode::make(x.dtype(), -*c);
  if (const auto* f = x.as<FloatImmNode>()) return FloatImmNode::make(x.dtype(), -f->value);
  return SubNode::make(make_const(x.dtype(), 0), x);
}

class Parser {
 public:
  Parser(TokenCursor& cur, const ExprParseHooks& hooks) : cur_(cur), hooks_(hooks) {}

  Expr expression() {
    Expr value = or_test();
    if (cur_.at_name("if")) {
      const Token& at = cur_.next();
      Expr cond = or_test();
      if (!cur_.accept_name("else")) {
        cur_.error_at(cur_.peek(),
                      "expected 'else' to finish the conditional expression started "
                      "at column " +
                          std::to_string(at.column) + ", found " +
                          TokenCursor::describe(cur_.peek()));
      }
      Expr other = expression();
      return if_then_else(cond, value, other);
    }
    return value;
  }

 private:
  Expr or_test() {
    Expr a = and_test();
    while (cur_.accept_name("or")) a = a || and_test();
    return a;
  }

  Expr and_test() {
    Expr a = not_test();
    while (cur_.accept_name("and")) a = a && not_test();
    return a;
  }

  Expr not_test() {
    if (cur_.accept_name("not")) return !not_test();
    return comparison();
  }

  static bool is_compare(const Token& t) {
    if (t.kind != TokenKind::kOp) return false;
    return t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">=" || t.text == "==" ||
           t.text == "!=";
  }

  Expr comparison() {
    Expr left = bit_or();
    Expr result;
    while (is_compare(cur_.peek()) || cur_.at_name("in") || cur_.at_name("is") ||
           (cur_.at_name("not") && cur_.at_name("in", 1))) {
      const Token& op = cur_.next();
      if (op.kind == TokenKind::kName) {
        cur_.error_at(op, "'" + op.text + "' comparisons are not supported in index expressions");
      }
      Expr right = bit_or();
      Expr cmp = op.text == "<"    ? left < right
                 : op.text == ">"  ? left > right
                 : op.text == "<=" ? left <= right
                 : op.text == ">=" ? left >= right
                 : op.text == "==" ? left == right
                                   : left != right;
      result = result.defined() ? (result && cmp) : cmp;
      left = right;
    }
    return result.defined() ? result : left;
  }

  using Operand = Expr (Parser::*)();
  using Combine = Expr (*)(Expr, Expr);
  struct BinaryOp {
    const char* symbol;
    Combine combine;
  };

  /// One left-associative precedence level: operands from `next`, joined by `ops`. A
  /// construction error (division by the constant zero, a float operand of `//`) is reported at
  /// the operator.
  Expr binary_level(Operand next, std::initializer_list<BinaryOp> ops) {
    Expr a = (this->*next)();
    while (true) {
      const BinaryOp* found = nullptr;
      for (const BinaryOp& op : ops) {
        if (cur_.at_op(op.symbol)) found = &op;
      }
      if (!found) return a;
      Token at = cur_.next();
      Expr b = (this->*next)();
      try {
        a = found->combine(a, b);
      } catch (const UserError& e) {
        cur_.error_at(at, e.what());
      }
    }
  }

  static Expr op_or(Expr a, Expr b) { return a | b; }
  static Expr op_xor(Expr a, Expr b) { return a ^ b; }
  static Expr op_and(Expr a, Expr b) { return a & b; }
  static Expr op_shl(Expr a, Expr b) { return a << b; }
  static Expr op_shr(Expr a, Expr b) { return a >> b; }
  static Expr op_add(Expr a, Expr b) { return a + b; }
  static Expr op_sub(Expr a, Expr b) { return a - b; }
  static Expr op_mul(Expr a, Expr b) { return a * b; }
  static Expr op_floordiv(Expr a, Expr b) { return floordiv(a, b); }
  static Expr op_floormod(Expr a, Expr b) { return floormod(a, b); }
  static Expr op_div(Expr a, Expr b) { return DivNode::make(a, b); }

  Expr bit_or() { return binary_level(&Parser::bit_xor, {{"|", op_or}}); }
  Expr bit_xor() { return binary_level(&Parser::bit_and, {{"^", op_xor}}); }
  Expr bit_and() { return binary_level(&Parser::shift, {{"&", op_and}}); }
  Expr shift() { return binary_level(&Parser::arith, {{"<<", op_shl}, {">>", op_shr}}); }
  Expr arith() { return binary_level(&Parser::term, {{"+", op_add}, {"-", op_sub}}); }

  Expr term() {
    Expr a = binary_level(&Parser::factor,
                          {{"*", op_mul}, {"//", op_floordiv}, {"%", op_floormod}, {"/", op_div}});
    if (cur_.at_op("@")) {
      cur_.error_at(cur_.peek(), "matrix multiplication '@' is not an index operation");
    }
    return a;
  }

  Expr factor() {
    if (cur_.accept_op("-")) return negate(factor());
    if (cur_.accept_op("+")) return factor();
    if (cur_.at_op("~")) {
      const Token& at = cur_.next();
      Expr x = factor();
      if (!x.dtype().is_integral()) cur_.error_at(at, "'~' needs an integer operand");
      return x ^ IntImmNode::make(x.dtype(), -1);
    }
    return power();
  }

  Expr power() {
    Expr base = postfix();
    if (!cur_.at_op("**")) return base;
    const Token& at = cur_.next();
    Expr exponent = factor();
    auto e = as_const_int(exponent);
    if (base.dtype().is_float()) return call(Builtin::kPow, {base, exponent});
    if (!e || *e < 0 || *e > 62) {
      cur_.error_at(at, "'**' on integers needs a constant exponent between 0 and 62, got `" +
                            to_string(exponent) + "`");
    }
    if (auto b = as_const_int(base)) {
      // A constant power is exact (Python integers), as long as it fits 64 bits.
      __int128 v = 1;
      for (int64_t k = 0; k < *e; ++k) {
        v *= *b;
        if (v > INT64_MAX || v < INT64_MIN) cur_.error_at(at, "the power does not fit 64 bits");
      }
      return make_int(static_cast<int64_t>(v));
    }
    Expr result = IntImmNode::make(base.dtype(), 1);
    for (int64_t k = 0; k < *e; ++k) result = k == 0 ? base : result * base;
    return result;
  }

  Expr postfix() {
    const Token& t = cur_.peek();
    switch (t.kind) {
      case TokenKind::kInt:
        cur_.next();
        return make_int(t.int_value);
      case TokenKind::kFloat:
        cur_.next();
        return Expr(t.float_value);
      case TokenKind::kString:
        cur_.error_at(t, "a string is not a value here; expected a number or an expression");
      case TokenKind::kName:
        return name_expr();
      case TokenKind::kOp:
        if (t.text == "(") {
          const Token& open = cur_.next();
          Expr inner = expression();
          if (cur_.at_op(",")) {
            cur_.error_at(cur_.peek(),
                          "a tuple is not a value here; expected ')' to close '(' at "
                          "column " +
                              std::to_string(open.column));
          }
          cur_.expect_op(")", "to close '(' at column " + std::to_string(open.column));
          return inner;
        }
        break;
      default:
        break;
    }
    cur_.error_at(t, "expected an expression, found " + TokenCursor::describe(t));
  }

  Expr name_expr() {
    const Token& first = cur_.next();
    if (first.text == "True" || first.text == "False") {
      return IntImmNode::make(DataType::boolean(), first.text == "True");
    }
    if (first.text == "lambda" || first.text == "if" || first.text == "else" ||
        first.text == "and" || first.text == "or" || first.text == "None") {
      cur_.error_at(first, "expected an expression, found '" + first.text + "'");
    }
    std::string name = first.text;
    while (cur_.at_op(".") && cur_.peek(1).kind == TokenKind::kName) {
      cur_.next();
      name += "." + cur_.next().text;
    }
    if (cur_.at_op("(")) return call_expr(name, first);
    if (cur_.at_op("[")) return subscript_expr(name, first);
    if (hooks_.resolve_name) {
      if (auto e = hooks_.resolve_name(name, first)) return *e;
    }
    if (name == "T.inf") return Expr(std::numeric_limits<double>::infinity());
    if (name == "T.nan") return Expr(std::numeric_limits<double>::quiet_NaN());
    cur_.error_at(first, "unknown name '" + name + "'");
  }

  std::vector<Expr> arguments(const Token& open_at, const char* close) {
    std::vector<Expr> args;
    while (!cur_.at_op(close)) {
      if (cur_.peek().kind == TokenKind::kName && cur_.at_op("=", 1)) {
        cur_.error_at(cur_.peek(), "keyword arguments are not supported here");
      }
      args.push_back(expression());
      if (!cur_.accept_op(",")) break;
    }
    cur_.expect_op(close, std::string("to close '") + (close[0] == ')' ? "(" : "[") +
                              "' at column " + std::to_string(open_at.column));
    return args;
  }

  Expr subscript_expr(const std::string& name, const Token& at) {
    const Token& open = cur_.next();
    std::vector<Expr> indices = arguments(open, "]");
    if (hooks_.resolve_subscript) {
      if (auto e = hooks_.resolve_subscript(name, indices, at)) return *e;
    }
    cur_.error_at(at, "cannot subscript '" + name + "' here");
  }

  Expr call_expr(const std::string& callee, const Token& at) {
    if (hooks_.parse_call) {
      if (auto e = hooks_.parse_call(callee, cur_, at)) return *e;
    }
    const Token& open = cur_.next();
    if (callee == "T.cast") return cast_call(open);
    std::vector<Expr> args = arguments(open, ")");
    if (hooks_.resolve_call) {
      if (auto e = hooks_.resolve_call(callee, args, at)) return *e;
    }
    try {
      if (auto e = call_builtin_function(callee, args)) return *e;
    } catch (const UserError& e) {
      cur_.error_at(at, e.what());
    }
    cur_.error_at(at, "unknown function '" + callee + "'");
  }

  Expr cast_call(const Token& open) {
    Expr value = expression();
    cur_.expect_op(",", "between the value and the type of T.cast");
    const Token& type_tok = cur_.next();
    std::string type_name = type_tok.text;
    if (type_tok.kind == TokenKind::kName && type_name == "T" && cur_.at_op(".")) {
      cur_.next();
      type_name = cur_.expect_name("a type name").text;
    }
    auto dtype = DataType::parse(type_name);
    if ((type_tok.kind != TokenKind::kString && type_tok.kind != TokenKind::kName) || !dtype) {
      cur_.error_at(type_tok, "expected a type such as \"float16\", found " +
                                  TokenCursor::describe(type_tok) +
                                  "; accepted: " + DataType::accepted_names());
    }
    cur_.expect_op(")", "to close '(' at column " + std::to_string(open.column));
    return cast(*dtype, value);
  }

  TokenCursor& cur_;
  const ExprParseHooks& hooks_;
};

}  // namespace

std::optional<Expr> call_builtin_function(const std::string& callee,
                                          const std::vector<Expr>& args) {
  auto arity = [&](size_t n) {
    if (args.size() != n) {
      user_error(callee + " takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") +
                 ", got " + std::to_string(args.size()));
    }
  };
  if (callee == "min" || callee == "max" || callee == "T.min" || callee == "T.max") {
    if (args.size() < 2) user_error(callee + " needs at least 2 arguments");
    bool is_min = callee.back() == 'n';
    Expr r = args[0];
    for (size_t k = 1; k < args.size(); ++k) r = is_min ? min(r, args[k]) : max(r, args[k]);
    return r;
  }
  if (callee == "T.if_then_else" || callee == "T.Select") {
    arity(3);
    return if_then_else(args[0], args[1], args[2]);
  }
  if (callee == "T.floordiv") {
    arity(2);
    return floordiv(args[0], args[1]);
  }
  if (callee == "T.floormod") {
    arity(2);
    return floormod(args[0], args[1]);
  }
  if (callee == "abs") {
    arity(1);
    return abs(args[0]);
  }
  if (callee.rfind("T.", 0) == 0) {
    std::string short_name = callee.substr(2);
#define TESSEL_BUILTIN_CASE_(id, text) \
  if (short_name == text) return call(Builtin::id, args);
    TESSEL_BUILTINS(TESSEL_BUILTIN_CASE_)
#undef TESSEL_BUILTIN_CASE_
    if (auto dtype = DataType::parse(short_name)) {
      arity(1);
      return cast(*dtype, args[0]);
    }
  }
  return std::nullopt;
}

Expr parse_expression(TokenCursor& cursor, const ExprParseHooks& hooks) {
  const Token at = cursor.peek();
  Expr e = Parser(cursor, hooks).expression();
  if (e.height() > static_cast<uint32_t>(kMaxExprDepth)) {
    cursor.error_at(at, "this expression nests more than " + std::to_string(kMaxExprDepth) +
                            " operations deep; write it with fewer nested operations");
  }
  if (e.tree_size() > kMaxExprSize) {
    cursor.error_at(at, "this expression has more than " + std::to_string(kMaxExprSize) +
                            " operations; write it with fewer");
  }
  return e;
}

ParsedLambda parse_lambda(TokenCursor& cur) {
  ParsedLambda l;
  if (!cur.at_name("lambda")) {
    cur.error_at(cur.peek(), "expected 'lambda', found " + TokenCursor::describe(cur.peek()));
  }
  l.at = cur.next();
  while (!cur.at_op(":")) {
    const Token& p = cur.expect_name("a parameter name");
    for (const Var& v : l.params) {
      if (v.name() == p.text) cur.error_at(p, "duplicate parameter '" + p.text + "'");
    }
    l.params.emplace_back(p.text);
    if (!cur.accept_op(",")) break;
  }
  cur.expect_op(":", "after the lambda's parameters");
  l.body_at = cur.peek();
  ExprParseHooks hooks;
  hooks.resolve_name = [&](const std::string& name, const Token&) -> std::optional<Expr> {
    for (const Var& v : l.params) {
      if (v.name() == name) return Expr(v);
    }
    return std::nullopt;
  };
  // A parenthesised tuple, or one expression (which may itself start with '(').
  if (cur.at_op("(")) {
    size_t save = cur.position();
    const Token& open = cur.next();
    std::vector<Expr> items{parse_expression(cur, hooks)};
    bool tuple = false;
    while (cur.accept_op(",")) {
      tuple = true;
      if (cur.at_op(")")) break;
      items.push_back(parse_expression(cur, hooks));
    }
    if (tuple) {
      cur.expect_op(")", "to close the tuple opened at column " + std::to_string(open.column));
      l.outputs = std::move(items);
      return l;
    }
    cur.rewind(save);
  }
  l.outputs.push_back(parse_expression(cur, hooks));
  return l;
}

Expr parse_expression(const std::string& text, const ExprParseHooks& hooks) {
  TokenCursor cursor(text);
  Expr e = parse_expression(cursor, hooks);
  if (!cursor.at_end()) {
    cursor.error_at(cursor.peek(), "unexpected " + TokenCursor::describe(cursor.peek()) +
                                       " after a complete expression");
  }
  return e;
}

Expr parse_expression(const std::string& text, const std::vector<Var>& names) {
  ExprParseHooks hooks;
  hooks.resolve_name = [&](const std::string& name, const Token&) -> std::optional<Expr> {
    for (const Var& v : names) {
      if (v.name() == name) return Expr(v);
    }
    return std::nullopt;
  };
  return parse_expression(text, hooks);
}

}  // namespace tessel
