// The Analyzer's variable ranges, scoped constraints and interval bounds (const_int_bound).
//
// Bounds describe the value an expression takes under the evaluator's semantics (core/int_eval.h),
// including wrap-around to each node's dtype: an operation whose exact interval does not fit its
// dtype (or saturates int64) may wrap, so its bound widens to the whole dtype. kNegInf/kPosInf in
// an intermediate result therefore always mean "unknown", never a value.
#include "core/analyzer.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/expr_functor.h"
#include "core/int_eval.h"

namespace tessel {

namespace {

constexpr int64_t kNegInf = IntBound::kNegInf;
constexpr int64_t kPosInf = IntBound::kPosInf;

bool is_inf(int64_t x) { return x == kNegInf || x == kPosInf; }

/// a + b, saturating; an infinite operand stays infinite.
int64_t sat_add(int64_t a, int64_t b) {
  if (is_inf(a)) return a;
  if (is_inf(b)) return b;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? kPosInf : kNegInf;
  return r;
}

int64_t sat_neg(int64_t a) {
  if (a == kNegInf) return kPosInf;
  if (a == kPosInf) return kNegInf;
  return -a;
}

/// a * b, saturating towards the sign of the exact product.
int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  int64_t r;
  if (is_inf(a) || is_inf(b) || __builtin_mul_overflow(a, b, &r)) {
    return negative ? kNegInf : kPosInf;
  }
  return r;
}

/// floor(a / d) for d >= 1 (d == kPosInf means "arbitrarily large").
int64_t sat_fdiv(int64_t a, int64_t d) {
  if (d == kPosInf) return a >= 0 ? 0 : -1;
  if (is_inf(a)) return a;
  return floor_div(a, d);
}

IntBound hull(IntBound x, IntBound y) { return {std::min(x.min, y.min), std::max(x.max, y.max)}; }

/// The values an integral dtype can hold; unbounded for floats.
IntBound dtype_range(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (!t.is_int() && !t.is_uint()) return {};
  if (t.bits >= 64) return {kNegInf, kPosInf};
  if (t.is_uint()) return {0, (int64_t{1} << t.bits) - 1};
  return {-(int64_t{1} << (t.bits - 1)), (int64_t{1} << (t.bits - 1)) - 1};
}

bool within(IntBound b, IntBound range) { return b.min >= range.min && b.max <= range.max; }

/// The bound of an operation that may wrap: its exact interval when that fits the dtype (and
/// nothing saturated), else the whole dtype.
IntBound fit(DataType t, IntBound b) {
  IntBound range = dtype_range(t);
  if (is_inf(b.min) || is_inf(b.max) || !within(b, range)) return range;
  return b;
}

IntBound mul_bound(IntBound a, IntBound b) {
  int64_t c[] = {sat_mul(a.min, b.min), sat_mul(a.min, b.max), sat_mul(a.max, b.min),
                 sat_mul(a.max, b.max)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

/// floor(a / b) for b in [d.min, d.max] with 1 <= d.min (floor division is monotone in each
/// operand while the divisor keeps one sign, so the corners bound it).
IntBound div_by_positive(IntBound a, IntBound d) {
  return {a.min >= 0 ? sat_fdiv(a.min, d.max) : sat_fdiv(a.min, d.min),
          a.max >= 0 ? sat_fdiv(a.max, d.min) : sat_fdiv(a.max, d.max)};
}

IntBound floordiv_bound(DataType t, IntBound a, IntBound b) {
  std::optional<IntBound> out;
  auto add = [&](IntBound part) { out = out ? hull(*out, part) : part; };
  if (b.max >= 1) add(div_by_positive(a, {std::max<int64_t>(b.min, 1), b.max}));
  if (b.min <= -1) {  // a // b == (-a) // (-b)
    add(div_by_positive({sat_neg(a.max), sat_neg(a.min)},
                        {sat_neg(std::min<int64_t>(b.max, -1)), sat_neg(b.min)}));
  }
  return out ? fit(t, *out) : dtype_range(t);  // b == 0 only: the evaluator reports it
}

IntBound floormod_bound(DataType t, IntBound a, IntBound b) {
  if (b.min == b.max && b.min >= 1 && a.bounded()) {
    int64_t k = floor_div(a.min, b.min);
    if (k == floor_div(a.max, b.min)) {  // x - k*b is small: compute it modulo 2^64
      uint64_t kb = static_cast<uint64_t>(k) * static_cast<uint64_t>(b.min);
      return {static_cast<int64_t>(static_cast<uint64_t>(a.min) - kb),
              static_cast<int64_t>(static_cast<uint64_t>(a.max) - kb)};
    }
  }
  std::optional<IntBound> out;
  auto add = [&](IntBound part) { out = out ? hull(*out, part) : part; };
  if (b.max >= 1) {  // result in [0, b - 1]; equal to a when 0 <= a < b
    int64_t lo = std::max<int64_t>(b.min, 1);
    if (a.min >= 0 && a.max < lo) {
      add(a);
    } else {
      add({0, a.min >= 0 ? std::min(a.max, b.max - 1) : b.max - 1});
    }
  }
  if (b.min <= -1) {  // result in [b + 1, 0]; equal to a when b < a <= 0
    int64_t hi = std::min<int64_t>(b.max, -1);
    if (a.max <= 0 && a.min > hi) {
      add(a);
    } else {
      add({a.max <= 0 ? std::max(a.min, sat_add(b.min, 1)) : sat_add(b.min, 1), 0});
    }
  }
  return out ? *out : dtype_range(t);
}

/// The smallest 2^k - 1 >= x, for x >= 0.
int64_t all_ones_above(int64_t x) {
  if (x <= 0) return 0;
  return static_cast<int64_t>(~uint64_t{0} >> std::countl_zero(static_cast<uint64_t>(x)));
}

IntBound bitwise_bound(ExprKind k, DataType t, IntBound a, IntBound b) {
  bool a_nonneg = a.min >= 0, b_nonneg = b.min >= 0;
  switch (k) {
    case ExprKind::kBitAnd:  // a & b lies in [0, b] when b >= 0, whatever a is
      if (a_nonneg && b_nonneg) return {0, std::min(a.max, b.max)};
      if (a_nonneg) return {0, a.max};
      if (b_nonneg) return {0, b.max};
      return dtype_range(t);
    case ExprKind::kBitOr:
      if (a_nonneg && b_nonneg) {
        return {std::max(a.min, b.min), all_ones_above(std::max(a.max, b.max))};
      }
      return dtype_range(t);
    case ExprKind::kBitXor:
      if (a_nonneg && b_nonneg) return {0, all_ones_above(std::max(a.max, b.max))};
      return dtype_range(t);
    default: return dtype_range(t);
  }
}

IntBound shift_bound(ExprKind k, DataType t, IntBound a, IntBound b) {
  if (b.min < 0) return dtype_range(t);
  auto pow2 = [](int64_t s) { return s >= 63 ? kPosInf : int64_t{1} << s; };
  IntBound scale{pow2(b.min), pow2(b.max)};
  if (k == ExprKind::kShl) return b.max >= 63 ? dtype_range(t) : fit(t, mul_bound(a, scale));
  return div_by_positive(a, scale);  // a >> s == a // 2^s, and a >> 63 is a // "infinity"
}

}  // namespace

// ---- Impl: variable ranges and the constraint stack --------------------------------------------

struct Analyzer::Impl {
  struct VarInfo {
    Expr var;  // keeps the node alive so its address is never reused while recorded here
    IntBound bound;
  };
  struct Saved {
    const VarNode* key;
    std::optional<VarInfo> old;
  };

  std::unordered_map<const VarNode*, VarInfo> vars;
  std::vector<std::vector<Saved>> scopes;  // what each live ConstraintScope changed

  IntBound var_bound(const VarNode* v) const {
    auto it = vars.find(v);
    return it != vars.end() ? it->second.bound : dtype_range(v->dtype);
  }

  /// Intersects the range of variable `v` with `b`, remembering the old range in the innermost
  /// scope.
  void tighten(const Expr& v, IntBound b) {
    const auto* key = static_cast<const VarNode*>(v.get());
    auto it = vars.find(key);
    std::optional<VarInfo> old;
    if (it != vars.end()) old = it->second;
    IntBound cur = old ? old->bound : dtype_range(v.dtype());
    IntBound next{std::max(cur.min, b.min), std::min(cur.max, b.max)};
    if (next == cur) return;
    // A contradictory assumption makes the scope unreachable; any bound is then vacuously
    // sound, and a single point keeps the interval arithmetic well-defined.
    if (next.min > next.max) next.max = next.min;
    scopes.back().push_back({key, old});
    vars[key] = VarInfo{v, next};
  }

  void pop_scope() {
    internal_check(!scopes.empty(), "ConstraintScope destroyed twice");
    auto& saved = scopes.back();
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->old) {
        vars[it->key] = *it->old;
      } else {
        vars.erase(it->key);
      }
    }
    scopes.pop_back();
  }
};

namespace {

/// Interval evaluation of an expression over the analyzer's variable ranges.
class BoundEvaluator : public ExprFunctor<IntBound> {
 public:
  explicit BoundEvaluator(const Analyzer::Impl& impl) : impl_(impl) {}

  IntBound bound(const Expr& e) {
    if (!e.dtype().is_integral()) return {};
    return visit(e);
  }

 protected:
  IntBound visit_IntImm(const IntImmNode* op, const Expr&) override {
    return {op->value, op->value};
  }
  IntBound visit_Var(const VarNode* op, const Expr&) override { return impl_.var_bound(op); }
  IntBound visit_Add(const AddNode* op, const Expr&) override {
    IntBound a = bound(op->a), b = bound(op->b);
    return fit(op->dtype, {sat_add(a.min, b.min), sat_add(a.max, b.max)});
  }
  IntBound visit_Sub(const SubNode* op, const Expr&) override {
    IntBound a = bound(op->a), b = bound(op->b);
    return fit(op->dtype, {sat_add(a.min, sat_neg(b.max)), sat_add(a.max, sat_neg(b.min))});
  }
  IntBound visit_Mul(const MulNode* op, const Expr&) override {
    return fit(op->dtype, mul_bound(bound(op->a), bound(op->b)));
  }
  IntBound visit_FloorDiv(const FloorDivNode* op, const Expr&) override {
    return floordiv_bound(op->dtype, bound(op->a), bound(op->b));
  }
  IntBound visit_FloorMod(const FloorModNode* op, const Expr&) override {
    return floormod_bound(op->dtype, bound(op->a), bound(op->b));
  }
  IntBound visit_Min(const MinNode* op, const Expr&) override {
    IntBound a = bound(op->a), b = bound(op->b);
    return {std::min(a.min, b.min), std::min(a.max, b.max)};
  }
  IntBound visit_Max(const MaxNode* op, const Expr&) override {
    IntBound a = bound(op->a), b = bound(op->b);
    return {std::max(a.min, b.min), std::max(a.max, b.max)};
  }
#define TESSEL_BITWISE_(name, fn)                                                 \
  IntBound visit_##name(const name##Node* op, const Expr&) override {            \
    return fn(op->kind, op->dtype, bound(op->a), bound(op->b));                  \
  }
  TESSEL_BITWISE_(BitAnd, bitwise_bound)
  TESSEL_BITWISE_(BitOr, bitwise_bound)
  TESSEL_BITWISE_(BitXor, bitwise_bound)
  TESSEL_BITWISE_(Shl, shift_bound)
  TESSEL_BITWISE_(Shr, shift_bound)
#undef TESSEL_BITWISE_

  IntBound visit_Select(const SelectNode* op, const Expr&) override {
    IntBound c = bound(op->cond);
    if (c.min == c.max) return bound(c.min != 0 ? op->t : op->f);
    return hull(bound(op->t), bound(op->f));
  }
  IntBound visit_Cast(const CastNode* op, const Expr&) override {
    IntBound range = dtype_range(op->dtype);
    if (!op->value.dtype().is_integral()) return range;
    IntBound v = bound(op->value);
    return within(v, range) ? v : range;  // in range, an integer cast keeps the value
  }

  // Comparisons and logic are 0 or 1; decided by the operands' intervals where they can be.
  IntBound visit_LT(const LTNode* op, const Expr&) override { return less(op->a, op->b, false); }
  IntBound visit_LE(const LENode* op, const Expr&) override { return less(op->a, op->b, true); }
  IntBound visit_GT(const GTNode* op, const Expr&) override { return less(op->b, op->a, false); }
  IntBound visit_GE(const GENode* op, const Expr&) override { return less(op->b, op->a, true); }
  IntBound visit_EQ(const EQNode* op, const Expr&) override { return equal(op->a, op->b, true); }
  IntBound visit_NE(const NENode* op, const Expr&) override { return equal(op->a, op->b, false); }
  IntBound visit_And(const AndNode* op, const Expr&) override {
    IntBound a = bound(op->a), b = bound(op->b);
    return {std::min(a.min, b.min) != 0 ? 1 : 0, std::min(a.max, b.max) != 0 ? 1 : 0};
  }
  IntBound visit_Or(const OrNode* op, const Expr&) override {
    IntBound a = bound(op->a), b = bound(op->b);
    return {std::max(a.min, b.min) != 0 ? 1 : 0, std::max(a.max, b.max) != 0 ? 1 : 0};
  }
  IntBound visit_Not(const NotNode* op, const Expr&) override {
    IntBound a = bound(op->a);
    return {a.max != 0 ? 0 : 1, a.min != 0 ? 0 : 1};
  }

  // Loads, calls and anything else integral: whatever the dtype holds.
  IntBound visit_default(const Expr& e) override { return dtype_range(e.dtype()); }

 private:
  static constexpr IntBound kBool{0, 1};

  /// Bound of `a < b`, or of `a <= b` when or_equal.
  IntBound less(const Expr& a, const Expr& b, bool or_equal) {
    if (!a.dtype().is_integral() || !b.dtype().is_integral()) return kBool;
    IntBound x = bound(a), y = bound(b);
    if (x.max < y.min || (or_equal && x.max <= y.min)) return {1, 1};
    if (x.min > y.max || (!or_equal && x.min >= y.max)) return {0, 0};
    return kBool;
  }
  IntBound equal(const Expr& a, const Expr& b, bool eq) {
    if (!a.dtype().is_integral() || !b.dtype().is_integral()) return kBool;
    IntBound x = bound(a), y = bound(b);
    if (x.max < y.min || y.max < x.min) return eq ? IntBound{0, 0} : IntBound{1, 1};
    if (x.is_const() && x == y) return eq ? IntBound{1, 1} : IntBound{0, 0};
    return kBool;
  }

  const Analyzer::Impl& impl_;
};

/// The comparison with its operands swapped (`a < b` is `b > a`).
ExprKind mirrored(ExprKind k) {
  switch (k) {
    case ExprKind::kLT: return ExprKind::kGT;
    case ExprKind::kLE: return ExprKind::kGE;
    case ExprKind::kGT: return ExprKind::kLT;
    case ExprKind::kGE: return ExprKind::kLE;
    default: return k;
  }
}

/// The comparison meaning `not (a k b)`.
std::optional<ExprKind> negated(ExprKind k) {
  switch (k) {
    case ExprKind::kLT: return ExprKind::kGE;
    case ExprKind::kLE: return ExprKind::kGT;
    case ExprKind::kGT: return ExprKind::kLE;
    case ExprKind::kGE: return ExprKind::kLT;
    case ExprKind::kNE: return ExprKind::kEQ;
    default: return std::nullopt;
  }
}

}  // namespace

// ---- Analyzer ---------------------------------------------------------------------------------

Analyzer::Analyzer() : impl_(std::make_unique<Impl>()) {}
Analyzer::~Analyzer() = default;

void Analyzer::bind(const Var& v, int64_t min, int64_t extent) {
  internal_check(extent > 0, "Analyzer::bind needs a positive extent");
  int64_t max;
  internal_check(!__builtin_add_overflow(min, extent - 1, &max), "Analyzer::bind: range overflows");
  bind(v, IntBound{min, max});
}

void Analyzer::bind(const Var& v, IntBound bound) {
  internal_check(v.defined(), "Analyzer::bind of an undefined variable");
  IntBound range = dtype_range(v.dtype());
  IntBound b{std::max(bound.min, range.min), std::min(bound.max, range.max)};
  internal_check(b.min <= b.max, "Analyzer::bind: empty range for the variable's dtype");
  impl_->vars[static_cast<const VarNode*>(v.get())] = Impl::VarInfo{v, b};
}

IntBound Analyzer::const_int_bound(const Expr& e) {
  internal_check(e.defined(), "const_int_bound of an undefined expression");
  return BoundEvaluator(*impl_).bound(e);
}

namespace {

/// Narrows variable ranges by the facts in `cond` that have the form `v OP e` or `e OP v`
/// (OP one of < <= > >= ==), `v` / `not v` for a bool variable, `not (a OP b)`, and `and` of
/// those. Other facts are ignored, which is sound: the analyzer only knows less.
void assume(Analyzer& analyzer, Analyzer::Impl& impl, const Expr& cond) {
  if (const auto* a = cond.as<AndNode>()) {
    assume(analyzer, impl, a->a);
    assume(analyzer, impl, a->b);
    return;
  }
  if (cond.as<VarNode>() && cond.dtype().is_bool()) {
    impl.tighten(cond, {1, 1});
    return;
  }
  ExprKind kind = cond.kind();
  Expr lhs, rhs;
  if (const auto* n = cond.as<NotNode>()) {
    if (n->a.as<VarNode>() && n->a.dtype().is_bool()) {
      impl.tighten(n->a, {0, 0});
      return;
    }
    const auto* c = dynamic_cast<const CompareNode*>(n->a.get());
    auto neg = negated(n->a.kind());
    if (!c || !neg) return;
    kind = *neg;
    lhs = c->a;
    rhs = c->b;
  } else if (const auto* c = dynamic_cast<const CompareNode*>(cond.get())) {
    lhs = c->a;
    rhs = c->b;
  } else {
    return;
  }
  if (!lhs.dtype().is_integral() || !rhs.dtype().is_integral()) return;
  auto apply = [&](const Expr& var, ExprKind k, const Expr& other) {
    if (!var.as<VarNode>()) return;
    IntBound o = analyzer.const_int_bound(other);
    IntBound b;  // unbounded
    switch (k) {
      case ExprKind::kLT: b.max = o.max == kPosInf ? kPosInf : sat_add(o.max, -1); break;
      case ExprKind::kLE: b.max = o.max; break;
      case ExprKind::kGT: b.min = o.min == kNegInf ? kNegInf : sat_add(o.min, 1); break;
      case ExprKind::kGE: b.min = o.min; break;
      case ExprKind::kEQ: b = o; break;
      default: return;
    }
    impl.tighten(var, b);
  };
  apply(lhs, kind, rhs);
  apply(rhs, mirrored(kind), lhs);
}

}  // namespace

Analyzer::ConstraintScope::ConstraintScope(Analyzer& analyzer, const Expr& cond)
    : analyzer_(analyzer) {
  internal_check(cond.defined(), "ConstraintScope of an undefined condition");
  analyzer_.impl_->scopes.emplace_back();
  assume(analyzer_, *analyzer_.impl_, cond);
}

Analyzer::ConstraintScope::~ConstraintScope() { analyzer_.impl_->pop_scope(); }

}  // namespace tessel
