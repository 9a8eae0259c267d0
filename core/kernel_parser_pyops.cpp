// Python's operators on the kernel parser's Values: what `+`, `//`, `**`, `==`, `in`, `is` and
// truth mean for numbers, strings, tuples and None. Constants are evaluated as Python would
// (integers exact in 64 bits, floats in double precision); an operand that is an expression of
// variables builds IR through the Expr operators instead.
#include <cmath>
#include <limits>

#include "core/expr_printer.h"
#include "core/int_eval.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

constexpr size_t kMaxSequence = 1 << 20;  ///< items of a tuple or characters of a string

bool is_python_int_type(DataType t) {
  return t == DataType::i32() || t == DataType::i64() || t.is_bool();
}
bool is_python_float_type(DataType t) { return t == DataType::f32(); }

[[noreturn]] void overflow(const std::string& what) {
  user_error(what +
             " does not fit in 64 bits: Tessel's integers are 64-bit (Python's are unbounded)");
}

/// Exact integer power, `e` >= 0.
int64_t int_power(int64_t b, int64_t e) {
  if (b == 0) return e == 0 ? 1 : 0;
  if (b == 1) return 1;
  if (b == -1) return e % 2 == 0 ? 1 : -1;
  if (e > 63) overflow("the power " + std::to_string(b) + " ** " + std::to_string(e));
  int64_t result = 1;
  for (int64_t k = 0; k < e; ++k) {
    if (__builtin_mul_overflow(result, b, &result)) {
      overflow("the power " + std::to_string(b) + " ** " + std::to_string(e));
    }
  }
  return result;
}

double float_of(const Value& v) {
  if (auto i = py_int(v)) return static_cast<double>(*i);
  return v.expr.as<FloatImmNode>()->value;
}

Value of_bool(bool b) { return Value::of(IntImmNode::make(DataType::boolean(), b ? 1 : 0)); }

Value of_float(double d) {
  // Python floats are doubles; a float constant of a kernel is float32 (TileLang's default for
  // Python floats), so each constant result is rounded to float32, as the literals are.
  return Value::of(Expr(d));
}

/// `a OP b` on two constant Python integers.
Value int_binary(const std::string& op, int64_t a, int64_t b, bool both_bool) {
  int64_t r = 0;
  std::string what = "the result of " + std::to_string(a) + " " + op + " " + std::to_string(b);
  if (op == "+" || op == "-" || op == "*") {
    bool overflowed = op == "+"   ? __builtin_add_overflow(a, b, &r)
                      : op == "-" ? __builtin_sub_overflow(a, b, &r)
                                  : __builtin_mul_overflow(a, b, &r);
    if (overflowed) overflow(what);
    return Value::of(make_int(r));
  }
  if (op == "//" || op == "%") {
    if (b == 0)
      user_error("integer division or modulo by zero (" + std::to_string(a) + " " + op + " 0)");
    if (a == std::numeric_limits<int64_t>::min() && b == -1 && op == "//") overflow(what);
    return Value::of(make_int(op == "//" ? floor_div(a, b) : floor_mod(a, b)));
  }
  if (op == "/") {
    if (b == 0) user_error("division by zero (" + std::to_string(a) + " / 0)");
    return of_float(static_cast<double>(a) / static_cast<double>(b));
  }
  if (op == "**") {
    if (b < 0) {
      if (a == 0) user_error("0 cannot be raised to a negative power");
      return of_float(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
    return Value::of(make_int(int_power(a, b)));
  }
  if (op == "<<" || op == ">>") {
    if (b < 0) user_error("negative shift count (" + what + ")");
    if (op == ">>") return Value::of(make_int(b >= 63 ? (a < 0 ? -1 : 0) : a >> b));
    if (a != 0 && (b >= 63 || (a > 0 ? a > (std::numeric_limits<int64_t>::max() >> b)
                                     : a < (std::numeric_limits<int64_t>::min() >> b)))) {
      overflow(what);
    }
    return Value::of(make_int(a == 0 ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b)));
  }
  int64_t bits = op == "&" ? (a & b) : op == "|" ? (a | b) : (a ^ b);
  if (both_bool) return of_bool(bits != 0);
  return Value::of(make_int(bits));
}

/// `a OP b` on two constant Python numbers, at least one a float.
Value float_binary(const std::string& op, double a, double b) {
  if (op == "+") return of_float(a + b);
  if (op == "-") return of_float(a - b);
  if (op == "*") return of_float(a * b);
  if (op == "/" || op == "//" || op == "%") {
    if (b == 0) user_error("float division or modulo by zero");
    if (op == "/") return of_float(a / b);
    double q = std::floor(a / b);
    return of_float(op == "//" ? q : a - q * b);
  }
  if (op == "**") {
    if (a == 0 && b < 0) user_error("0.0 cannot be raised to a negative power");
    if (a < 0 && b != std::floor(b)) {
      user_error("a negative number raised to a fractional power is a complex number");
    }
    return of_float(std::pow(a, b));
  }
  user_error("operator '" + op + "' needs integer operands, got floats");
}

/// `a OP b` when one side is an expression of variables (or a typed constant): the IR's operator.
Expr expr_binary(const std::string& op, const Expr& a, const Expr& b) {
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") return DivNode::make(a, b);
  if (op == "//") return floordiv(a, b);
  if (op == "%") return floormod(a, b);
  if (op == "&") return a & b;
  if (op == "|") return a | b;
  if (op == "^") return a ^ b;
  if (op == "<<") return a << b;
  if (op == ">>") return a >> b;
  internal_error("expr_binary: operator " + op);
}

Expr expr_power(const Expr& base, const Expr& exponent) {
  if (base.dtype().is_float()) return call(Builtin::kPow, {base, exponent});
  auto e = as_const_int(exponent);
  if (!e || *e < 0 || *e > 62) {
    user_error("'**' on an integer expression needs a constant exponent between 0 and 62, got `" +
               to_string(exponent) + "`");
  }
  Expr result = IntImmNode::make(base.dtype(), 1);
  for (int64_t k = 0; k < *e; ++k) result = k == 0 ? base : result * base;
  return result;
}

Value repeat(const Value& seq, int64_t times) {
  size_t n = seq.kind == Value::Kind::kString ? seq.text.size() : seq.items.size();
  if (times > 0 && n > 0 && static_cast<uint64_t>(times) > kMaxSequence / n) {
    user_error("repeating " + seq.describe() + " " + std::to_string(times) +
               " times makes more than " + std::to_string(kMaxSequence) + " items");
  }
  Value r = seq;
  r.text.clear();
  r.items.clear();
  for (int64_t k = 0; k < times; ++k) {
    r.text += seq.text;
    r.items.insert(r.items.end(), seq.items.begin(), seq.items.end());
  }
  return r;
}

[[noreturn]] void unsupported_operands(const std::string& op, const Value& a, const Value& b) {
  user_error("operator '" + op + "' is not defined between " + a.describe() + " and " +
             b.describe() + "; at compile time Tessel computes with numbers, strings, tuples and " +
             "None as Python does, and builds expressions of numbers");
}

}  // namespace

std::optional<int64_t> py_int(const Value& v) {
  if (v.kind != Value::Kind::kExpr || !is_python_int_type(v.expr.dtype())) return std::nullopt;
  return as_const_int(v.expr);
}

bool py_float(const Value& v) {
  return v.kind == Value::Kind::kExpr && v.expr.as<FloatImmNode>() &&
         is_python_float_type(v.expr.dtype());
}

bool py_number(const Value& v) { return py_int(v) || py_float(v); }

std::optional<bool> py_truth(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kString:
      return !v.text.empty();
    case Value::Kind::kTuple:
      return !v.items.empty();
    case Value::Kind::kExpr:
      if (auto c = as_const_int(v.expr)) return *c != 0;
      if (const auto* f = v.expr.as<FloatImmNode>()) return f->value != 0;
      return std::nullopt;
    default:
      return true;
  }
}

Value py_binary(const std::string& op, const Value& a, const Value& b) {
  using K = Value::Kind;
  if (op == "@") user_error("matrix multiplication '@' is not supported; use T.gemm on tiles");
  auto ia = py_int(a), ib = py_int(b);
  if (ia && ib) {
    bool both_bool = a.expr.dtype().is_bool() && b.expr.dtype().is_bool();
    return int_binary(op, *ia, *ib, both_bool);
  }
  if (py_number(a) && py_number(b)) return float_binary(op, float_of(a), float_of(b));
  if (a.kind == K::kExpr && b.kind == K::kExpr) {
    if (op == "**") return Value::of(expr_power(a.expr, b.expr));
    return Value::of(expr_binary(op, a.expr, b.expr));
  }
  bool seq_a = a.kind == K::kString || a.kind == K::kTuple;
  bool seq_b = b.kind == K::kString || b.kind == K::kTuple;
  if (op == "+" && seq_a && a.kind == b.kind && (a.kind == K::kString || a.is_list == b.is_list)) {
    Value r = a;
    r.text += b.text;
    r.items.insert(r.items.end(), b.items.begin(), b.items.end());
    if (r.text.size() > kMaxSequence || r.items.size() > kMaxSequence) {
      user_error("the concatenation has more than " + std::to_string(kMaxSequence) + " items");
    }
    return r;
  }
  if (op == "*" && seq_a && ib) return repeat(a, *ib);
  if (op == "*" && seq_b && ia) return repeat(b, *ia);
  if (op == "%" && a.kind == K::kString) {
    user_error(
        "'%' string formatting is not supported; strings in kernel files name dtypes, "
        "scopes and variants");
  }
  unsupported_operands(op, a, b);
}

Value py_equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (py_number(a) && py_number(b)) {
    auto ia = py_int(a), ib = py_int(b);
    return of_bool(ia && ib ? *ia == *ib : float_of(a) == float_of(b));
  }
  if (a.kind == K::kExpr && b.kind == K::kExpr) return Value::of(a.expr == b.expr);
  if (a.kind != b.kind) return of_bool(false);
  switch (a.kind) {
    case K::kNone:
      return of_bool(true);
    case K::kString:
      return of_bool(a.text == b.text);
    case K::kTuple: {
      if (a.items.size() != b.items.size() || a.is_list != b.is_list) return of_bool(false);
      Value all = of_bool(true);
      for (size_t i = 0; i < a.items.size(); ++i) {
        Value e = py_equal(a.items[i], b.items[i]);
        auto t = py_truth(e);
        if (t && !*t) return of_bool(false);
        if (!t) all = Value::of(py_truth(all) ? e.expr : all.expr && e.expr);
      }
      return all;
    }
    case K::kBuffer:
      return of_bool(a.buffer.get() == b.buffer.get());
    case K::kModule:
      return of_bool(a.text == b.text);
    case K::kPolicy:
      return of_bool(a.policy == b.policy);
    default:
      user_error("'==' between " + a.describe() + " and " + b.describe() + " is not supported");
  }
}

Value py_compare(const std::string& op, const Value& a, const Value& b) {
  using K = Value::Kind;
  if (op == "==") return py_equal(a, b);
  if (op == "!=") {
    Value eq = py_equal(a, b);
    if (auto t = py_truth(eq)) return of_bool(!*t);
    return Value::of(!eq.expr);
  }
  if (op == "is" || op == "is not") {
    bool negate = op == "is not";
    if (a.kind == K::kNone || b.kind == K::kNone) {
      return of_bool((a.kind == b.kind) != negate);
    }
    if ((py_int(a) && py_int(b)) || (a.kind == K::kString && b.kind == K::kString)) {
      Value eq = py_equal(a, b);
      return of_bool(*py_truth(eq) != negate);
    }
    user_error("'" + op + "' compares with None here (x is None); between " + a.describe() +
               " and " + b.describe() + " write '==' or '!='");
  }
  if (op == "in" || op == "not in") {
    bool negate = op == "not in";
    if (b.kind == K::kString) {
      if (a.kind != K::kString) {
        user_error("'in <string>' needs a string on the left, got " + a.describe());
      }
      return of_bool((b.text.find(a.text) != std::string::npos) != negate);
    }
    if (b.kind != K::kTuple) {
      user_error("'" + op + "' needs a tuple, a list or a string on the right, got " +
                 b.describe());
    }
    Value any = of_bool(false);
    for (const Value& item : b.items) {
      Value eq = py_equal(a, item);
      auto t = py_truth(eq);
      if (t && *t) return of_bool(!negate);
      if (!t) any = Value::of(py_truth(any) ? eq.expr : any.expr || eq.expr);
    }
    if (auto t = py_truth(any)) return of_bool(*t != negate);
    return Value::of(negate ? !any.expr : any.expr);
  }
  // < <= > >=
  auto ordered = [&](int c) {
    return of_bool(op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0);
  };
  if (py_number(a) && py_number(b)) {
    auto ia = py_int(a), ib = py_int(b);
    if (ia && ib) return ordered(*ia < *ib ? -1 : *ia > *ib ? 1 : 0);
    double x = float_of(a), y = float_of(b);
    if (std::isnan(x) || std::isnan(y)) return of_bool(false);
    return ordered(x < y ? -1 : x > y ? 1 : 0);
  }
  if (a.kind == K::kExpr && b.kind == K::kExpr) {
    const Expr &x = a.expr, &y = b.expr;
    return Value::of(op == "<" ? x < y : op == "<=" ? x <= y : op == ">" ? x > y : x >= y);
  }
  if (a.kind == K::kString && b.kind == K::kString) return ordered(a.text.compare(b.text));
  user_error("'" + op + "' is not defined between " + a.describe() + " and " + b.describe());
}

Value py_negate(const Value& v) {
  if (auto i = py_int(v)) {
    if (*i == std::numeric_limits<int64_t>::min()) overflow("-(" + std::to_string(*i) + ")");
    return Value::of(make_int(-*i));
  }
  if (py_float(v)) return of_float(-float_of(v));
  if (v.kind == Value::Kind::kExpr) return Value::of(-v.expr);
  user_error("unary '-' needs a number, got " + v.describe());
}

Value py_invert(const Value& v) {
  if (auto i = py_int(v)) return Value::of(make_int(~*i));
  if (v.kind == Value::Kind::kExpr && v.expr.dtype().is_integral()) {
    return Value::of(v.expr ^ IntImmNode::make(v.expr.dtype(), -1));
  }
  user_error("'~' needs an integer, got " + v.describe());
}

Value py_not(const Value& v) {
  if (auto t = py_truth(v)) return of_bool(!*t);
  return Value::of(!v.expr);
}

Value py_bool(bool b) { return of_bool(b); }

Value py_float_value(double d) { return of_float(d); }

}  // namespace tessel::kernel_parser_detail
