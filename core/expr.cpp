// Expression node construction: operand type matching, validation and light constant folding.
#include "core/expr.h"

#include <cmath>
#include <limits>

#include "core/buffer.h"
#include "core/error.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"

namespace tessel {

const char* kind_name(ExprKind kind) {
  switch (kind) {
#define TESSEL_NAME_(name, ...) \
  case ExprKind::k##name:       \
    return #name;
    TESSEL_OTHER_EXPR_NODES(TESSEL_NAME_)
    TESSEL_BINARY_NODES(TESSEL_NAME_)
    TESSEL_COMPARE_NODES(TESSEL_NAME_)
#undef TESSEL_NAME_
  }
  return "?";
}

void Expr::reject_oversized() const {
  if (node_->height > kMaxExprHeight) {
    user_error("an expression nests more than " + std::to_string(kMaxExprHeight) +
               " operations deep; compute it in smaller steps");
  }
  user_error("an expression grows past " + std::to_string(kMaxExprTreeSize) +
             " operations when each use of a shared sub-expression is counted (a value built "
             "from itself repeatedly, like e2 = e1 + e1, doubles each time); compute it in "
             "smaller steps");
}

Expr::Expr(int value) : Expr(IntImmNode::make(DataType::i32(), value)) {}
Expr::Expr(int64_t value) : Expr(make_int(value)) {}
Expr::Expr(double value) : Expr(FloatImmNode::make(DataType::f32(), value)) {}

Var::Var(std::string name, DataType dtype)
    : Expr(std::make_shared<const VarNode>(std::move(name), dtype)) {}

Expr IntImmNode::make(DataType dtype, int64_t value) {
  internal_check(dtype.is_integral(), "IntImm needs an integral dtype");
  return Expr(std::make_shared<const IntImmNode>(dtype, wrap_int(dtype, value)));
}

Expr FloatImmNode::make(DataType dtype, double value) {
  internal_check(dtype.is_float(), "FloatImm needs a float dtype");
  return Expr(std::make_shared<const FloatImmNode>(dtype, round_to(dtype, value)));
}

Expr make_int(int64_t value) {
  bool fits32 =
      value >= std::numeric_limits<int32_t>::min() && value <= std::numeric_limits<int32_t>::max();
  return IntImmNode::make(fits32 ? DataType::i32() : DataType::i64(), value);
}

Expr make_const(DataType dtype, double value) {
  if (dtype.is_float()) return FloatImmNode::make(dtype, value);
  return IntImmNode::make(dtype, static_cast<int64_t>(std::nearbyint(value)));
}

DataType loop_var_type(const Expr& min, const Expr& extent) {
  bool wide = (min.dtype().is_integral() && min.dtype().bits > 32) ||
              (extent.dtype().is_integral() && extent.dtype().bits > 32);
  return wide ? DataType::i64() : DataType::i32();
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (const auto* imm = e.as<IntImmNode>()) return imm->value;
  return std::nullopt;
}

namespace {

bool is_imm(const Expr& e) {
  return e.kind() == ExprKind::kIntImm || e.kind() == ExprKind::kFloatImm;
}

/// The common type of two operands: a literal takes the other side's type; otherwise floats win
/// over integers and the wider type wins.
/// True when an integer literal's value survives conversion to `t`.
bool fits(const Expr& imm, DataType t) {
  auto c = as_const_int(imm);
  return !c || !t.is_integral() || wrap_int(t, *c) == *c;
}

DataType common_type(const Expr& a, const Expr& b) {
  DataType ta = a.dtype(), tb = b.dtype();
  if (ta == tb) return ta;
  if (is_imm(b) && !(tb.is_float() && !ta.is_float()) && fits(b, ta)) return ta;
  if (is_imm(a) && !(ta.is_float() && !tb.is_float()) && fits(a, tb)) return tb;
  if (ta.is_float() != tb.is_float()) return ta.is_float() ? ta : tb;
  if (ta.bits != tb.bits) return ta.bits > tb.bits ? ta : tb;
  return ta.is_uint() ? tb : ta;  // int beats uint of the same width, bool loses to both
}

Expr convert(const Expr& e, DataType t) { return e.dtype() == t ? e : cast(t, e); }

void require_defined(const Expr& e, const char* op) {
  if (!e.defined()) internal_error(std::string("undefined operand of ") + op);
}

/// The exact result of integer arithmetic on two literals, Python semantics: nullopt when not
/// foldable (division by zero, a negative shift) and `*overflow` set when it leaves int64.
std::optional<int64_t> fold_int(ExprKind k, int64_t a, int64_t b, bool* overflow) {
  int64_t r = 0;
  switch (k) {
    case ExprKind::kAdd:
      *overflow = __builtin_add_overflow(a, b, &r);
      return r;
    case ExprKind::kSub:
      *overflow = __builtin_sub_overflow(a, b, &r);
      return r;
    case ExprKind::kMul:
      *overflow = __builtin_mul_overflow(a, b, &r);
      return r;
    case ExprKind::kFloorDiv:
      if (b == 0) return std::nullopt;
      *overflow = a == std::numeric_limits<int64_t>::min() && b == -1;
      return floor_div(a, b);
    case ExprKind::kFloorMod:
      return b == 0 ? std::nullopt : std::optional(floor_mod(a, b));
    case ExprKind::kMin:
      return std::min(a, b);
    case ExprKind::kMax:
      return std::max(a, b);
    case ExprKind::kBitAnd:
      return a & b;
    case ExprKind::kBitOr:
      return a | b;
    case ExprKind::kBitXor:
      return a ^ b;
    case ExprKind::kShl:
      if (b < 0) return std::nullopt;
      *overflow = a != 0 && (b >= 63 || (a > 0 ? a > (std::numeric_limits<int64_t>::max() >> b)
                                               : a < (std::numeric_limits<int64_t>::min() >> b)));
      // 0 << b is 0 for any b (a shift by 64 or more is undefined in C++).
      return *overflow || a == 0 ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
    case ExprKind::kShr:
      return b < 0 ? std::nullopt : std::optional(a >> std::min<int64_t>(b, 63));
    default:
      return std::nullopt;
  }
}

/// An integer literal folded from `a k b`. Literals of the default index type (int32, what a
/// Python integer becomes) fold exactly, as Python integers do: a result past int32 becomes an
/// int64 literal, one past int64 is a user error. Literals of another integer dtype were given
/// that dtype on purpose and wrap around to it.
std::optional<Expr> fold_literals(ExprKind k, const char* symbol, DataType t, int64_t a,
                                  int64_t b) {
  bool overflow = false;
  auto folded = fold_int(k, a, b, &overflow);
  if (!folded) return std::nullopt;
  bool exact = t == DataType::i32() || t == DataType::i64();
  if (!exact) return IntImmNode::make(t, *folded);
  if (overflow) {
    user_error("integer overflow: " + std::to_string(a) + " " + symbol + " " + std::to_string(b) +
               " does not fit in 64 bits; index arithmetic is exact up to int64, so use smaller "
               "sizes or offsets");
  }
  return t == DataType::i64() ? IntImmNode::make(t, *folded) : make_int(*folded);
}

bool is_bitwise(ExprKind k) {
  return k == ExprKind::kBitAnd || k == ExprKind::kBitOr || k == ExprKind::kBitXor ||
         k == ExprKind::kShl || k == ExprKind::kShr;
}

template <typename Node>
Expr make_binary(Expr a, Expr b) {
  require_defined(a, Node::kSymbol);
  require_defined(b, Node::kSymbol);
  constexpr ExprKind k = Node::kKind;
  DataType t = common_type(a, b);
  if (k == ExprKind::kDiv && !t.is_float()) t = DataType::f32();
  if ((is_bitwise(k) || k == ExprKind::kFloorDiv || k == ExprKind::kFloorMod) && t.is_float()) {
    user_error(std::string("operator '") + Node::kSymbol + "' needs integer operands, got " +
               a.dtype().name() + " and " + b.dtype().name() + "; cast them to an integer type");
  }
  a = convert(a, t);
  b = convert(b, t);
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) {
    if (auto folded = fold_literals(k, Node::kSymbol, t, *ca, *cb)) return *folded;
  }
  // Identities that keep printed index expressions readable: x + 0, x * 1, x * 0, x // 1.
  if (k == ExprKind::kAdd && cb == 0) return a;
  if (k == ExprKind::kAdd && ca == 0) return b;
  if (k == ExprKind::kSub && cb == 0) return a;
  if (k == ExprKind::kMul && cb == 1) return a;
  if (k == ExprKind::kMul && ca == 1) return b;
  if (k == ExprKind::kMul && (ca == 0 || cb == 0)) return IntImmNode::make(t, 0);
  if (k == ExprKind::kFloorDiv && cb == 1) return a;
  if (k == ExprKind::kFloorMod && cb == 1) return IntImmNode::make(t, 0);
  if ((k == ExprKind::kFloorDiv || k == ExprKind::kFloorMod) && cb == 0) {
    user_error(std::string("division by the constant zero: `") + to_string(a) + "` " +
               Node::kSymbol + " 0; the divisor (often a tile size) must be nonzero");
  }
  return Expr(std::make_shared<const Node>(t, std::move(a), std::move(b)));
}

template <typename Node>
Expr make_compare(Expr a, Expr b) {
  require_defined(a, Node::kSymbol);
  require_defined(b, Node::kSymbol);
  constexpr ExprKind k = Node::kKind;
  if (k == ExprKind::kAnd || k == ExprKind::kOr) {
    a = convert(a, DataType::boolean());
    b = convert(b, DataType::boolean());
  } else {
    DataType t = common_type(a, b);
    a = convert(a, t);
    b = convert(b, t);
  }
  return Expr(std::make_shared<const Node>(std::move(a), std::move(b)));
}

}  // namespace

#define TESSEL_DEFINE_BINARY_(name, sym)                        \
  Expr name##Node::make(Expr a, Expr b) {                       \
    return make_binary<name##Node>(std::move(a), std::move(b)); \
  }
TESSEL_BINARY_NODES(TESSEL_DEFINE_BINARY_)
#undef TESSEL_DEFINE_BINARY_

#define TESSEL_DEFINE_COMPARE_(name, sym)                        \
  Expr name##Node::make(Expr a, Expr b) {                        \
    return make_compare<name##Node>(std::move(a), std::move(b)); \
  }
TESSEL_COMPARE_NODES(TESSEL_DEFINE_COMPARE_)
#undef TESSEL_DEFINE_COMPARE_

Expr NotNode::make(Expr a) {
  require_defined(a, "not");
  return Expr(std::make_shared<const NotNode>(convert(a, DataType::boolean())));
}

Expr SelectNode::make(Expr cond, Expr t, Expr f) {
  require_defined(cond, "if_then_else");
  require_defined(t, "if_then_else");
  require_defined(f, "if_then_else");
  DataType type = common_type(t, f);
  return Expr(std::make_shared<const SelectNode>(convert(cond, DataType::boolean()),
                                                 convert(t, type), convert(f, type)));
}

Expr CastNode::make(DataType dtype, Expr value) {
  require_defined(value, "cast");
  if (value.dtype() == dtype) return value;
  if (auto c = as_const_int(value); c && dtype.is_integral()) return IntImmNode::make(dtype, *c);
  if (auto c = as_const_int(value); c && dtype.is_float()) {
    return FloatImmNode::make(dtype, static_cast<double>(*c));
  }
  if (const auto* f = value.as<FloatImmNode>(); f && dtype.is_float()) {
    return FloatImmNode::make(dtype, f->value);
  }
  return Expr(std::make_shared<const CastNode>(dtype, std::move(value)));
}

Expr BufferLoadNode::make(Buffer buffer, std::vector<Expr> indices) {
  internal_check(buffer.defined(), "load from an undefined buffer");
  check_indices(buffer, indices, "load");
  DataType t = buffer->dtype;
  return Expr(std::make_shared<const BufferLoadNode>(t, std::move(buffer), std::move(indices)));
}

Expr cast(DataType dtype, Expr value) { return CastNode::make(dtype, std::move(value)); }
Expr floordiv(Expr a, Expr b) { return FloorDivNode::make(std::move(a), std::move(b)); }
Expr floormod(Expr a, Expr b) { return FloorModNode::make(std::move(a), std::move(b)); }
Expr ceildiv(Expr a, Expr b) {
  if (auto cb = as_const_int(b)) return floordiv(a + (*cb - 1), b);
  return floordiv(a + b - 1, b);
}
Expr min(Expr a, Expr b) { return MinNode::make(std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return MaxNode::make(std::move(a), std::move(b)); }
Expr if_then_else(Expr c, Expr t, Expr f) {
  return SelectNode::make(std::move(c), std::move(t), std::move(f));
}
Expr call(Builtin op, std::vector<Expr> args) { return CallNode::make(op, std::move(args)); }
Expr exp(Expr x) { return call(Builtin::kExp, {std::move(x)}); }
Expr exp2(Expr x) { return call(Builtin::kExp2, {std::move(x)}); }
Expr log(Expr x) { return call(Builtin::kLog, {std::move(x)}); }
Expr abs(Expr x) { return call(Builtin::kAbs, {std::move(x)}); }
Expr rsqrt(Expr x) { return call(Builtin::kRsqrt, {std::move(x)}); }
Expr sqrt(Expr x) { return call(Builtin::kSqrt, {std::move(x)}); }

Expr operator+(Expr a, Expr b) { return AddNode::make(std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return SubNode::make(std::move(a), std::move(b)); }
Expr operator-(Expr a) {
  if (auto c = as_const_int(a)) {
    if (a.dtype() == DataType::i32()) return make_int(-*c);  // a Python integer: exact
    return IntImmNode::make(a.dtype(), static_cast<int64_t>(0 - static_cast<uint64_t>(*c)));
  }
  if (const auto* f = a.as<FloatImmNode>()) return FloatImmNode::make(a.dtype(), -f->value);
  Expr zero = make_const(a.dtype(), 0);
  return SubNode::make(zero, a);
}
Expr operator*(Expr a, Expr b) { return MulNode::make(std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) {
  if (common_type(a, b).is_float()) return DivNode::make(std::move(a), std::move(b));
  return FloorDivNode::make(std::move(a), std::move(b));
}
Expr operator%(Expr a, Expr b) { return FloorModNode::make(std::move(a), std::move(b)); }
Expr operator&(Expr a, Expr b) { return BitAndNode::make(std::move(a), std::move(b)); }
Expr operator|(Expr a, Expr b) { return BitOrNode::make(std::move(a), std::move(b)); }
Expr operator^(Expr a, Expr b) { return BitXorNode::make(std::move(a), std::move(b)); }
Expr operator<<(Expr a, Expr b) { return ShlNode::make(std::move(a), std::move(b)); }
Expr operator>>(Expr a, Expr b) { return ShrNode::make(std::move(a), std::move(b)); }
Expr operator==(Expr a, Expr b) { return EQNode::make(std::move(a), std::move(b)); }
Expr operator!=(Expr a, Expr b) { return NENode::make(std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return LTNode::make(std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return LENode::make(std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return GTNode::make(std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return GENode::make(std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return AndNode::make(std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return OrNode::make(std::move(a), std::move(b)); }
Expr operator!(Expr a) { return NotNode::make(std::move(a)); }

}  // namespace tessel
