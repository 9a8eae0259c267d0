// Interval bounds of exact index values, and the bit width that holds them.
#include "verify/index_bounds.h"

#include <algorithm>

#include "core/error.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"

namespace tessel {

namespace {

using i128 = __int128;
/// Magnitude past which an interval counts as unbounded (widths stay <= 127 bits).
constexpr i128 kLimit = static_cast<i128>(1) << 125;

struct Interval {
  i128 lo, hi;
};

i128 clamp(i128 v) { return std::max(-kLimit, std::min(kLimit, v)); }
Interval make(i128 a, i128 b) { return {clamp(std::min(a, b)), clamp(std::max(a, b))}; }
Interval hull(std::initializer_list<i128> values) {
  return make(std::min(values), std::max(values));
}

i128 floordiv128(i128 a, i128 b) {
  i128 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

i128 pow2(int k) { return static_cast<i128>(1) << std::min(k, 126); }

/// Bits of the smallest signed two's-complement type holding [lo, hi].
int signed_bits(i128 lo, i128 hi) {
  int bits = 1;
  while (bits < 127 && (lo < -pow2(bits - 1) || hi > pow2(bits - 1) - 1)) ++bits;
  return bits;
}

/// The signed envelope [-2^(w-1), 2^(w-1) - 1] of `w` bits.
Interval envelope(int bits) { return {-pow2(bits - 1), pow2(bits - 1) - 1}; }

Interval dtype_range(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (t.is_uint()) return {0, pow2(t.bits) - 1};
  return envelope(t.bits);
}

bool is_power_of_two(int64_t c) { return c > 0 && (c & (c - 1)) == 0; }

/// The operands of a node (none for leaves).
std::vector<Expr> children(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kNot:
      return {e.as<NotNode>()->a};
    case ExprKind::kCast:
      return {e.as<CastNode>()->value};
    case ExprKind::kSelect: {
      const auto* op = e.as<SelectNode>();
      return {op->cond, op->t, op->f};
    }
#define TESSEL_BIN_CASE_(name, ...) case ExprKind::k##name:
      TESSEL_BINARY_NODES(TESSEL_BIN_CASE_) {
        const auto* op = static_cast<const BinaryNode*>(e.get());
        return {op->a, op->b};
      }
      TESSEL_COMPARE_NODES(TESSEL_BIN_CASE_) {
        const auto* op = static_cast<const CompareNode*>(e.get());
        return {op->a, op->b};
      }
#undef TESSEL_BIN_CASE_
    default:
      return {};
  }
}

[[noreturn]] void unsupported(const Expr& e) {
  user_error("cannot reason about '" + to_string(e) + "' (" + kind_name(e.kind()) + " of type " +
             e.dtype().name() + ") in a proof: index expressions must be integer arithmetic");
}

}  // namespace

struct IndexBounds::Wide : Interval {};

IndexBounds::IndexBounds(const VarDomain& domain) {
  for (const auto& [v, b] : domain.ranges) {
    if (b.min > b.max) {
      user_error("variable '" + v.name() + "' has an empty range [" + std::to_string(b.min) + ", " +
                 std::to_string(b.max) + "]");
    }
    ranges_[v.operator->()] = b;
    analyzer_.bind(v, b);
  }
}

IndexBounds::~IndexBounds() = default;

IntBound IndexBounds::bound(const Expr& e) {
  Wide w = wide(e);
  auto narrow = [](i128 v, int64_t inf) {
    return (v >= kLimit || v <= -kLimit || v > INT64_MAX || v < INT64_MIN)
               ? inf
               : static_cast<int64_t>(v);
  };
  return {narrow(w.lo, IntBound::kNegInf), narrow(w.hi, IntBound::kPosInf)};
}

IndexBounds::Wide IndexBounds::wide(const Expr& e) {
  if (auto it = memo_.find(e.get()); it != memo_.end()) return {{it->second.lo, it->second.hi}};
  if (!e.dtype().is_integral()) unsupported(e);
  Interval r{0, 0};
  auto sub = [&](const Expr& x) -> Interval { return wide(x); };
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      int64_t v = e.as<IntImmNode>()->value;
      r = {v, v};
      break;
    }
    case ExprKind::kVar: {
      auto it = ranges_.find(static_cast<const VarNode*>(e.get()));
      r = it != ranges_.end() ? Interval{it->second.min, it->second.max} : dtype_range(e.dtype());
      break;
    }
    case ExprKind::kAdd: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      Interval a = sub(op->a), b = sub(op->b);
      r = make(a.lo + b.lo, a.hi + b.hi);
      break;
    }
    case ExprKind::kSub: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      Interval a = sub(op->a), b = sub(op->b);
      r = make(a.lo - b.hi, a.hi - b.lo);
      break;
    }
    case ExprKind::kMul: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      Interval a = sub(op->a), b = sub(op->b);
      // Operands are clamped to 2^125, so products of clamped values need care: clamp first.
      auto mul = [](i128 x, i128 y) -> i128 {
        if (x == 0 || y == 0) return 0;
        int bx = signed_bits(x, x), by = signed_bits(y, y);
        if (bx + by > 126) return ((x < 0) != (y < 0)) ? -kLimit : kLimit;
        return x * y;
      };
      r = hull({mul(a.lo, b.lo), mul(a.lo, b.hi), mul(a.hi, b.lo), mul(a.hi, b.hi)});
      break;
    }
    case ExprKind::kFloorDiv:
    case ExprKind::kShr: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      Interval a = sub(op->a), b = sub(op->b);
      if (e.kind() == ExprKind::kShr) {  // a >> s == a // 2^s for s >= 0
        b = {pow2(static_cast<int>(std::max<i128>(0, std::min<i128>(b.lo, 126)))),
             pow2(static_cast<int>(std::max<i128>(0, std::min<i128>(b.hi, 126))))};
      }
      if (b.lo > 0 || b.hi < 0) {  // divisor keeps one sign: extremes at the corners
        r = hull({floordiv128(a.lo, b.lo), floordiv128(a.lo, b.hi), floordiv128(a.hi, b.lo),
                  floordiv128(a.hi, b.hi)});
      } else {  // |a // b| <= |a| for every non-zero b
        i128 m = std::max(a.hi < 0 ? -a.hi : a.hi, a.lo < 0 ? -a.lo : a.lo);
        r = make(-m, m);
      }
      break;
    }
    case ExprKind::kFloorMod: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      Interval a = sub(op->a), b = sub(op->b);
      if (b.lo > 0) {
        r = (a.lo >= 0 && a.hi < b.lo) ? a : Interval{0, b.hi - 1};
      } else if (b.hi < 0) {
        r = (a.hi <= 0 && a.lo > b.hi) ? a : Interval{b.lo + 1, 0};
      } else {
        r = make(std::min<i128>(b.lo + 1, 0), std::max<i128>(b.hi - 1, 0));
      }
      break;
    }
    case ExprKind::kMin:
    case ExprKind::kMax: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      Interval a = sub(op->a), b = sub(op->b);
      r = e.kind() == ExprKind::kMin ? Interval{std::min(a.lo, b.lo), std::min(a.hi, b.hi)}
                                     : Interval{std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
      break;
    }
    case ExprKind::kBitAnd:
    case ExprKind::kBitOr:
    case ExprKind::kBitXor: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      Interval a = sub(op->a), b = sub(op->b);
      int bits = std::max(signed_bits(a.lo, a.hi), signed_bits(b.lo, b.hi));
      if (a.lo >= 0 && b.lo >= 0) {
        // Non-negative operands: the result has no bit above the operands' top bit.
        r = e.kind() == ExprKind::kBitAnd ? Interval{0, std::min(a.hi, b.hi)}
                                          : Interval{0, pow2(bits - 1) - 1};
      } else if (e.kind() == ExprKind::kBitAnd && (a.lo >= 0 || b.lo >= 0)) {
        r = {0, a.lo >= 0 ? a.hi : b.hi};
      } else {
        r = envelope(bits);
      }
      break;
    }
    case ExprKind::kShl: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      Interval a = sub(op->a), b = sub(op->b);
      i128 lo_s = std::max<i128>(0, std::min<i128>(b.lo, 126));
      i128 hi_s = std::max<i128>(0, std::min<i128>(b.hi, 126));
      auto shl = [](i128 x, i128 s) -> i128 {
        if (x == 0) return 0;
        if (signed_bits(x, x) + s > 126) return x < 0 ? -kLimit : kLimit;
        return x * pow2(static_cast<int>(s));
      };
      r = hull({shl(a.lo, lo_s), shl(a.lo, hi_s), shl(a.hi, lo_s), shl(a.hi, hi_s)});
      break;
    }
    case ExprKind::kSelect: {
      const auto* op = e.as<SelectNode>();
      sub(op->cond);
      Interval t = sub(op->t), f = sub(op->f);
      r = {std::min(t.lo, f.lo), std::max(t.hi, f.hi)};
      break;
    }
    case ExprKind::kCast: {
      const auto* op = e.as<CastNode>();
      if (!op->value.dtype().is_integral()) unsupported(e);
      Interval v = sub(op->value), t = dtype_range(e.dtype());
      if (e.dtype().is_bool()) {
        r = {0, 1};
      } else {
        r = (v.lo >= t.lo && v.hi <= t.hi) ? v : t;
      }
      break;
    }
    case ExprKind::kNot:
      sub(e.as<NotNode>()->a);
      r = {0, 1};
      break;
#define TESSEL_CMP_CASE_(name, ...) case ExprKind::k##name:
      TESSEL_COMPARE_NODES(TESSEL_CMP_CASE_)
#undef TESSEL_CMP_CASE_
      {
        const auto* op = static_cast<const CompareNode*>(e.get());
        sub(op->a);
        sub(op->b);
        r = {0, 1};
        break;
      }
    default:
      unsupported(e);
  }
  bool children_exact = true;
  for (const Expr& c : children(e)) children_exact = children_exact && !wrapping_.count(c.get());
  if (!children_exact) wrapping_.insert(e.get());
  if (!e.dtype().is_bool() && e.kind() != ExprKind::kIntImm && e.kind() != ExprKind::kVar) {
    Interval t = dtype_range(e.dtype());
    bool fits = r.lo >= t.lo && r.hi <= t.hi;
    if (!fits) {
      overflows_.push_back(e);
      wrapping_.insert(e.get());
    } else if (children_exact) {
      // The analyzer bounds values as the evaluator computes them, wrapping at each dtype; where
      // nothing in `e` can wrap that is the exact value, and the analyzer may know better
      // (`(i * 8 + j) // 8` when 0 <= j < 8). Both bounds are sound, so intersect them.
      IntBound ab = analyzer_.const_int_bound(e);
      if (ab.min != IntBound::kNegInf) r.lo = std::max<i128>(r.lo, ab.min);
      if (ab.max != IntBound::kPosInf) r.hi = std::min<i128>(r.hi, ab.max);
      internal_check(r.lo <= r.hi, "analyzer bound disjoint from interval bound");
    }
  }
  memo_[e.get()] = {e, r.lo, r.hi};
  return {r};
}

int IndexBounds::bits_of(const Expr& e) {
  Wide w = wide(e);
  if (w.lo <= -kLimit || w.hi >= kLimit) {
    user_error("cannot bound '" + to_string(e) +
               "' over the variables' ranges; give every symbolic variable a finite range");
  }
  int bits = signed_bits(w.lo, w.hi);
  // Terms the translator introduces besides the node's own value.
  if (e.kind() == ExprKind::kFloorDiv || e.kind() == ExprKind::kFloorMod) {
    const auto* op = static_cast<const BinaryNode*>(e.get());
    Wide a = wide(op->a), b = wide(op->b);
    bits = std::max({bits, signed_bits(a.lo, a.hi), signed_bits(b.lo, b.hi)});
    auto c = as_const_int(op->b);
    if (c && *c > 0 && !is_power_of_two(*c)) {
      // q = a // c ranges over [a.lo // c, a.hi // c] and q * c over c times that.
      i128 qlo = floordiv128(a.lo, *c), qhi = floordiv128(a.hi, *c);
      bits = std::max(bits, signed_bits(qlo * *c, qhi * *c));
    } else if (!c) {
      // a - (a mod b) and its quotient by b.
      i128 m = std::max({a.hi < 0 ? -a.hi : a.hi, a.lo < 0 ? -a.lo : a.lo, b.hi < 0 ? -b.hi : b.hi,
                         b.lo < 0 ? -b.lo : b.lo});
      bits = std::max(bits, signed_bits(-2 * m, 2 * m));
    }
  }
  if (e.kind() == ExprKind::kShl || e.kind() == ExprKind::kShr) {
    // The shift amount is compared against the width; it is small, but must be representable.
    bits = std::max(bits, 8);
  }
  return bits;
}

int IndexBounds::width_for(const std::vector<Expr>& exprs) {
  int bits = 2;
  for (const Expr& root : exprs) {
    pre_order_visit(root, [&](const Expr& e) {
      if (!e.dtype().is_bool())
        bits = std::max(bits, bits_of(e));
      else
        wide(e);  // validates the kinds
    });
  }
  return std::min(bits + 1, 127);
}

}  // namespace tessel
