// Analyzer::simplify, can_prove and can_prove_equal: canonical affine sums, floordiv/floormod rules
// and comparisons, min/max and selects decided by bounds.
//
// Integer +, - and * wrap around to their dtype, so they compute exactly modulo 2^bits: rewriting
// a sum into canonical form is always exact. Rules that need the true, unwrapped value (division,
// modulo, comparisons) are applied only when the bound of the true sum fits the dtype, for then
// the wrapped value and the true value are the same number.
#include <limits>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "core/analyzer.h"
#include "core/expr_functor.h"
#include "core/int_eval.h"

namespace tessel {

namespace {

/// Types whose +, -, * form a ring modulo 2^bits (bool does not: it saturates to 1).
bool is_affine_type(DataType t) { return (t.is_int() || t.is_uint()) && t.lanes == 1; }

/// The values an integer dtype can hold.
IntBound int_range(DataType t) {
  if (t.bits >= 64) return {IntBound::kNegInf, IntBound::kPosInf};
  if (t.is_uint()) return {0, (int64_t{1} << t.bits) - 1};
  return {-(int64_t{1} << (t.bits - 1)), (int64_t{1} << (t.bits - 1)) - 1};
}

int64_t mul_wrap(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t add_wrap(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t neg_wrap(int64_t a) { return static_cast<int64_t>(-static_cast<uint64_t>(a)); }

/// An integer linear combination `sum(coef * atom) + constant` of one dtype. Atoms are
/// sub-expressions that are not sums or products by constants. Coefficients and the constant are
/// kept as the signed representative modulo 2^bits, so `x - 1` stays `x - 1` for unsigned types.
struct Affine {
  DataType dtype;
  std::vector<std::pair<Expr, int64_t>> terms;  // in order of first appearance, no zero coef
  int64_t constant = 0;

  explicit Affine(DataType t) : dtype(t) {}

  int64_t wrap(int64_t v) const {
    return dtype.bits >= 64 ? v : wrap_int(DataType{TypeCode::kInt, dtype.bits, 1}, v);
  }
  void add_const(int64_t c) { constant = wrap(add_wrap(constant, c)); }
  void add(const Expr& atom, int64_t coef) {
    for (auto it = terms.begin(); it != terms.end(); ++it) {
      if (structural_equal(it->first, atom)) {
        it->second = wrap(add_wrap(it->second, coef));
        if (it->second == 0) terms.erase(it);
        return;
      }
    }
    if (wrap(coef) != 0) terms.emplace_back(atom, wrap(coef));
  }
};

/// Adds `scale * e` to `out`, flattening sums, differences and products by constants.
void flatten(const Expr& e, int64_t scale, Affine& out) {
  if (auto c = as_const_int(e)) return out.add_const(mul_wrap(*c, scale));
  if (const auto* a = e.as<AddNode>()) {
    flatten(a->a, scale, out);
    return flatten(a->b, scale, out);
  }
  if (const auto* s = e.as<SubNode>()) {
    flatten(s->a, scale, out);
    return flatten(s->b, neg_wrap(scale), out);
  }
  if (const auto* m = e.as<MulNode>()) {
    if (auto c = as_const_int(m->b)) return flatten(m->a, mul_wrap(scale, *c), out);
    if (auto c = as_const_int(m->a)) return flatten(m->b, mul_wrap(scale, *c), out);
  }
  out.add(e, scale);
}

Affine flatten(const Expr& e) {
  Affine out(e.dtype());
  flatten(e, 1, out);
  return out;
}

/// The canonical expression: positive terms in order of first appearance, then the negative ones
/// subtracted, then the constant (`i * 8 + j - k * 2 + 3`). With no positive term the constant
/// leads (`5 - i`, `0 - i * 2 - j`); unsigned types then use its unsigned value (`248 - j`).
Expr to_expr(const Affine& a) {
  auto lit = [&](int64_t v) { return IntImmNode::make(a.dtype, v); };
  auto term = [&](const Expr& atom, int64_t coef) {
    return coef == 1 ? atom : MulNode::make(atom, lit(coef));
  };
  Expr acc;
  bool has_negative = false;
  for (const auto& [atom, coef] : a.terms) {
    if (coef < 0) {
      has_negative = true;
      continue;
    }
    acc = acc.defined() ? AddNode::make(acc, term(atom, coef)) : term(atom, coef);
  }
  bool constant_done = a.constant == 0;
  if (!acc.defined() && has_negative) {
    int64_t lead = a.dtype.is_uint() ? wrap_int(a.dtype, a.constant) : a.constant;
    constant_done = lead >= 0;
    acc = lit(constant_done ? lead : 0);
  }
  for (const auto& [atom, coef] : a.terms) {
    if (coef < 0) acc = SubNode::make(acc, term(atom, neg_wrap(coef)));
  }
  if (constant_done) return acc.defined() ? acc : lit(0);
  if (!acc.defined()) return lit(a.constant);
  return a.constant > 0 ? AddNode::make(acc, lit(a.constant))
                        : SubNode::make(acc, lit(neg_wrap(a.constant)));
}

IntBound intersect(IntBound x, IntBound y) {
  return {std::max(x.min, y.min), std::min(x.max, y.max)};
}

/// Bounds of the exact integer value of `a` (no wrap-around), or nullopt when an atom is
/// unbounded or int64 would overflow.
std::optional<IntBound> exact_bound(Analyzer& analyzer, const Affine& a) {
  int64_t lo = a.constant, hi = a.constant;
  for (const auto& [atom, coef] : a.terms) {
    IntBound b = analyzer.const_int_bound(atom);
    int64_t x, y;
    if (!b.bounded() || __builtin_mul_overflow(coef, b.min, &x) ||
        __builtin_mul_overflow(coef, b.max, &y)) {
      return std::nullopt;
    }
    if (x > y) std::swap(x, y);
    if (__builtin_add_overflow(lo, x, &lo) || __builtin_add_overflow(hi, y, &hi)) {
      return std::nullopt;
    }
  }
  return IntBound{lo, hi};
}

/// exact_bound when it fits the dtype: then the expression's wrapped value is its exact value.
std::optional<IntBound> fitting_bound(Analyzer& analyzer, const Affine& a) {
  auto b = exact_bound(analyzer, a);
  IntBound range = int_range(a.dtype);
  if (b && b->min >= range.min && b->max <= range.max) return b;
  return std::nullopt;
}

/// Bounds of the exact integer `a - b` for integral `a`, `b` of one dtype, or nullopt.
std::optional<IntBound> diff_bound(Analyzer& analyzer, const Expr& a, const Expr& b) {
  if (structural_equal(a, b)) return IntBound{0, 0};
  std::optional<IntBound> out;
  IntBound x = analyzer.const_int_bound(a), y = analyzer.const_int_bound(b);
  int64_t lo, hi;
  if (x.bounded() && y.bounded() && !__builtin_sub_overflow(x.min, y.max, &lo) &&
      !__builtin_sub_overflow(x.max, y.min, &hi)) {
    out = IntBound{lo, hi};
  }
  if (!is_affine_type(a.dtype()) || a.dtype() != b.dtype()) return out;
  // Both sides exact, so their exact difference is what the comparison sees; like terms cancel.
  Affine fa = flatten(a), fb = flatten(b);
  if (!fitting_bound(analyzer, fa) || !fitting_bound(analyzer, fb)) return out;
  Affine d = fa;  // exact integer coefficients from here on: no wrapping
  for (const auto& [atom, coef] : fb.terms) {
    auto it = d.terms.begin();
    while (it != d.terms.end() && !structural_equal(it->first, atom)) ++it;
    if (it != d.terms.end()) {
      if (__builtin_sub_overflow(it->second, coef, &it->second)) return out;
    } else if (coef == std::numeric_limits<int64_t>::min()) {  // -coef would overflow
      return out;
    } else {
      d.terms.emplace_back(atom, -coef);
    }
  }
  if (__builtin_sub_overflow(d.constant, fb.constant, &d.constant)) return out;
  if (auto db = exact_bound(analyzer, d)) out = out ? intersect(*out, *db) : *db;
  return out;
}

/// Folds `a k b` to true/false when bounds decide it.
std::optional<bool> decide_compare(Analyzer& analyzer, ExprKind k, const Expr& a, const Expr& b) {
  if (!a.dtype().is_integral() || !b.dtype().is_integral()) return std::nullopt;
  auto d = diff_bound(analyzer, a, b);
  if (!d) return std::nullopt;
  switch (k) {
    case ExprKind::kLT:
      if (d->max < 0) return true;
      if (d->min >= 0) return false;
      break;
    case ExprKind::kLE:
      if (d->max <= 0) return true;
      if (d->min > 0) return false;
      break;
    case ExprKind::kGT:
      if (d->min > 0) return true;
      if (d->max <= 0) return false;
      break;
    case ExprKind::kGE:
      if (d->min >= 0) return true;
      if (d->max < 0) return false;
      break;
    case ExprKind::kEQ:
    case ExprKind::kNE: {
      std::optional<bool> eq;
      if (d->min == 0 && d->max == 0) eq = true;
      if (d->min > 0 || d->max < 0) eq = false;
      if (eq && k == ExprKind::kNE) eq = !*eq;
      return eq;
    }
    default:
      break;
  }
  return std::nullopt;
}

Expr make_bool(bool v) { return IntImmNode::make(DataType::boolean(), v ? 1 : 0); }

class Simplifier : public ExprMutator {
 public:
  explicit Simplifier(Analyzer& analyzer) : analyzer_(analyzer) {}

 protected:
  Expr visit_Add(const AddNode* op, const Expr&) override {
    return canonical(AddNode::make(visit(op->a), visit(op->b)));
  }
  Expr visit_Sub(const SubNode* op, const Expr&) override {
    return canonical(SubNode::make(visit(op->a), visit(op->b)));
  }
  Expr visit_Mul(const MulNode* op, const Expr&) override {
    return canonical(MulNode::make(visit(op->a), visit(op->b)));
  }
  // A divisor that simplifies to 0 (`i // (j - j)`) keeps the division as written: it is the
  // kernel's error, which the evaluators report with the kernel, thread and line where it runs.
  Expr visit_FloorDiv(const FloorDivNode* op, const Expr& e) override {
    Expr a = visit(op->a), b = visit(op->b);
    return as_const_int(b) == 0 ? e : div_or_mod(a, b, false);
  }
  Expr visit_FloorMod(const FloorModNode* op, const Expr& e) override {
    Expr a = visit(op->a), b = visit(op->b);
    return as_const_int(b) == 0 ? e : div_or_mod(a, b, true);
  }
  Expr visit_Min(const MinNode* op, const Expr&) override { return min_max(op, true); }
  Expr visit_Max(const MaxNode* op, const Expr&) override { return min_max(op, false); }

  Expr visit_BitAnd(const BitAndNode* op, const Expr&) override {
    Expr a = visit(op->a), b = visit(op->b);
    // x & (2^k - 1) == x when 0 <= x < 2^k.
    auto m = as_const_int(b);
    if (m && *m >= 0 && ((static_cast<uint64_t>(*m) + 1) & static_cast<uint64_t>(*m)) == 0) {
      IntBound x = analyzer_.const_int_bound(a);
      if (x.min >= 0 && x.max <= *m) return a;
    }
    return BitAndNode::make(a, b);
  }

#define TESSEL_COMPARE_(name, sym)                                                \
  Expr visit_##name(const name##Node* op, const Expr&) override {                 \
    Expr a = visit(op->a), b = visit(op->b);                                      \
    if (auto v = decide_compare(analyzer_, op->kind, a, b)) return make_bool(*v); \
    return name##Node::make(a, b);                                                \
  }
  TESSEL_COMPARE_(EQ, "==")
  TESSEL_COMPARE_(NE, "!=")
  TESSEL_COMPARE_(LT, "<")
  TESSEL_COMPARE_(LE, "<=")
  TESSEL_COMPARE_(GT, ">")
  TESSEL_COMPARE_(GE, ">=")
#undef TESSEL_COMPARE_

  Expr visit_And(const AndNode* op, const Expr&) override {
    Expr a = visit(op->a), b = visit(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    if (ca == 0 || cb == 0) return make_bool(false);
    if (ca) return b;
    if (cb) return a;
    return AndNode::make(a, b);
  }
  Expr visit_Or(const OrNode* op, const Expr&) override {
    Expr a = visit(op->a), b = visit(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    if ((ca && *ca != 0) || (cb && *cb != 0)) return make_bool(true);
    if (ca) return b;
    if (cb) return a;
    return OrNode::make(a, b);
  }
  Expr visit_Not(const NotNode* op, const Expr&) override {
    Expr a = visit(op->a);
    if (auto c = as_const_int(a)) return make_bool(*c == 0);
    if (const auto* n = a.as<NotNode>(); n && n->a.dtype().is_bool()) return n->a;
    return NotNode::make(a);
  }

  Expr visit_Select(const SelectNode* op, const Expr&) override {
    Expr cond = visit(op->cond);
    if (auto c = as_const_int(cond)) return visit(*c != 0 ? op->t : op->f);
    // Each arm is simplified knowing whether the condition held.
    Expr t, f;
    {
      Analyzer::ConstraintScope scope(analyzer_, cond);
      t = visit(op->t);
    }
    {
      Analyzer::ConstraintScope scope(analyzer_, NotNode::make(cond));
      f = visit(op->f);
    }
    if (structural_equal(t, f)) return t;
    return SelectNode::make(cond, t, f);
  }

 private:
  Expr canonical(const Expr& e) const {
    if (!is_affine_type(e.dtype())) return e;
    return to_expr(flatten(e));
  }

  Expr min_max(const BinaryNode* op, bool is_min) {
    Expr a = visit(op->a), b = visit(op->b);
    if (a.dtype().is_integral()) {
      if (auto d = diff_bound(analyzer_, a, b)) {
        if (d->max <= 0) return is_min ? a : b;  // a <= b everywhere
        if (d->min >= 0) return is_min ? b : a;  // a >= b everywhere
      }
    }
    return is_min ? MinNode::make(a, b) : MaxNode::make(a, b);
  }

  /// `x // b` or `x % b` of simplified operands.
  Expr div_or_mod(const Expr& x, const Expr& b, bool mod) {
    auto c = as_const_int(b);
    if (!c || *c <= 0 || !is_affine_type(x.dtype()) || as_const_int(x)) {
      return mod ? FloorModNode::make(x, b) : FloorDivNode::make(x, b);
    }
    return div_or_mod_const(x, *c, mod);
  }

  Expr div_or_mod_const(const Expr& x, int64_t c, bool mod) {
    DataType t = x.dtype();
    auto lit = [&](int64_t v) { return IntImmNode::make(t, v); };
    // (y // c1) // c == y // (c1 * c); (y % c1) % c == y % c when c divides c1 (c, c1 > 0).
    if (const auto* d = x.as<FloorDivNode>(); d && !mod) {
      auto c1 = as_const_int(d->b);
      int64_t prod;
      if (c1 && *c1 > 0 && !__builtin_mul_overflow(*c1, c, &prod) && prod <= int_range(t).max) {
        return div_or_mod_const(d->a, prod, false);
      }
    }
    if (const auto* m = x.as<FloorModNode>(); m && mod) {
      if (auto c1 = as_const_int(m->b); c1 && *c1 > 0 && *c1 % c == 0) {
        return div_or_mod_const(m->a, c, true);
      }
    }
    Affine f = flatten(x);
    // x = g*y + r with g dividing c and 0 <= r < g (r: the terms g does not divide, and the
    // constant's remainder): then x // c = y // (c/g) and x % c = g * (y % (c/g)) + r. g is
    // the gcd of c and the coefficients other than +-1. `((t * 8) % 32 + v) // 8` with v < 8 is
    // `t % 4`; `(t * 8) % 32` is `t % 4 * 8`. Only where x is computed without wrapping.
    if (!f.terms.empty() && fitting_bound(analyzer_, f)) {
      int64_t g = c;
      for (const auto& [atom, coef] : f.terms) {
        if (coef != 1 && coef != -1) g = std::gcd(g, coef);
      }
      Affine y(t), r(t);
      for (const auto& [atom, coef] : f.terms) {
        if (coef % g == 0) {
          y.add(atom, coef / g);
        } else {
          r.add(atom, coef);
        }
      }
      y.add_const(floor_div(f.constant, g));
      r.add_const(floor_mod(f.constant, g));
      auto rb = fitting_bound(analyzer_, r);
      if (g > 1 && !y.terms.empty() && rb && rb->min >= 0 && rb->max < g) {
        Expr inner = div_or_mod_const(to_expr(y), c / g, mod);
        if (!mod) return inner;
        r.add(inner, g);
        return to_expr(r);
      }
    }
    // Decided by bounds: every value of x lies in one block [k*c, k*c + c).
    IntBound xb = analyzer_.const_int_bound(x);
    if (auto fb = fitting_bound(analyzer_, f)) xb = intersect(xb, *fb);
    if (xb.bounded() && floor_div(xb.min, c) == floor_div(xb.max, c)) {
      int64_t k = floor_div(xb.min, c);
      if (!mod) return lit(k);
      f.add_const(neg_wrap(mul_wrap(k, c)));
      return to_expr(f);
    }
    // x == c * q + r exactly, where q collects the terms whose coefficient c divides.
    if (fitting_bound(analyzer_, f)) {
      Affine q(t), r(t);
      for (const auto& [atom, coef] : f.terms) {
        if (coef % c == 0) {
          q.add(atom, coef / c);
        } else {
          r.add(atom, coef);
        }
      }
      // The identity is about exact integers: give up if a constant has no exact representative
      // (an unsigned remainder above the signed range).
      int64_t qc = floor_div(f.constant, c), rc = floor_mod(f.constant, c);
      q.add_const(qc);
      r.add_const(rc);
      bool exact = q.constant == qc && r.constant == rc;
      bool gained = exact && (!q.terms.empty() || (mod && r.constant != f.constant));
      auto rb = fitting_bound(analyzer_, r);
      if (gained && rb) {
        int64_t k = floor_div(rb->min, c);
        if (k == floor_div(rb->max, c)) {  // r // c is the constant k
          if (mod) {
            r.add_const(neg_wrap(mul_wrap(k, c)));
            return to_expr(r);
          }
          q.add_const(k);
          return to_expr(q);
        }
        if (mod) return FloorModNode::make(to_expr(r), lit(c));
        q.add(FloorDivNode::make(to_expr(r), lit(c)), 1);
        return to_expr(q);
      }
    }
    return mod ? FloorModNode::make(x, lit(c)) : FloorDivNode::make(x, lit(c));
  }

  Analyzer& analyzer_;
};

/// True when `s` (already simplified) is known to hold.
bool holds(Analyzer& analyzer, const Expr& s) {
  if (auto c = as_const_int(s)) return *c != 0;
  if (const auto* a = s.as<AndNode>()) return holds(analyzer, a->a) && holds(analyzer, a->b);
  if (const auto* o = s.as<OrNode>()) return holds(analyzer, o->a) || holds(analyzer, o->b);
  if (s.dtype().is_integral() && !s.dtype().is_bool()) {  // an integer used as a truth value
    IntBound b = analyzer.const_int_bound(s);
    return b.min > 0 || b.max < 0;
  }
  return false;
}

}  // namespace

Expr Analyzer::simplify(const Expr& e) {
  internal_check(e.defined(), "simplify of an undefined expression");
  return Simplifier(*this).mutate(e);
}

bool Analyzer::can_prove(const Expr& cond) {
  internal_check(cond.defined(), "can_prove of an undefined condition");
  return holds(*this, simplify(cond));
}

bool Analyzer::can_prove_equal(const Expr& a, const Expr& b) {
  internal_check(a.defined() && b.defined(), "can_prove_equal of an undefined expression");
  // Floats are never "proved" equal: NaN != NaN, and float arithmetic is not a ring.
  if (!a.dtype().is_integral() || !b.dtype().is_integral()) return false;
  Expr x = a, y = b;
  if (x.dtype() != y.dtype() || x.dtype().is_bool()) {  // compare exact values in int64
    x = cast(DataType::i64(), x);
    y = cast(DataType::i64(), y);
  }
  if (structural_equal(simplify(x), simplify(y))) return true;
  return as_const_int(simplify(x - y)) == 0;
}

}  // namespace tessel
