// Translation of index expressions to Z3 bit-vectors of one exact width.
#include "verify/z3_expr.h"

#include "core/error.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"

namespace tessel {

namespace {

bool is_power_of_two(int64_t c) { return c > 0 && (c & (c - 1)) == 0; }
int log2_exact(int64_t c) {
  int k = 0;
  while ((int64_t{1} << k) < c) ++k;
  return k;
}

/// The inclusive value range of an integer dtype of at most 64 bits.
std::pair<int64_t, int64_t> dtype_limits(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (t.bits >= 64) return {INT64_MIN, INT64_MAX};
  if (t.is_uint()) return {0, (int64_t{1} << t.bits) - 1};
  return {-(int64_t{1} << (t.bits - 1)), (int64_t{1} << (t.bits - 1)) - 1};
}

[[noreturn]] void unsupported(const Expr& e) {
  user_error("cannot reason about '" + to_string(e) + "' (" + kind_name(e.kind()) + " of type " +
             e.dtype().name() + ") in a proof: index expressions must be integer arithmetic");
}

}  // namespace

class Z3ExprTranslator::Visitor : public ExprFunctor<z3::expr> {
 public:
  explicit Visitor(Z3ExprTranslator& t) : t_(t) {}

 protected:
  z3::expr visit_IntImm(const IntImmNode* op, const Expr&) override {
    return t_.constant(op->value);
  }
  z3::expr visit_Var(const VarNode*, const Expr& e) override {
    z3::expr v = t_.var_term(e);
    return e.dtype().is_bool() ? v != t_.constant(0) : v;
  }
  z3::expr visit_Add(const AddNode* op, const Expr&) override {
    return t_.bv(op->a) + t_.bv(op->b);
  }
  z3::expr visit_Sub(const SubNode* op, const Expr&) override {
    return t_.bv(op->a) - t_.bv(op->b);
  }
  z3::expr visit_Mul(const MulNode* op, const Expr& e) override {
    // Keep constants on the right: Z3 bit-blasts a constant factor as shifts and adds.
    if (as_const_int(op->a)) return t_.bv(op->b) * t_.bv(op->a);
    z3::expr a = t_.bv(op->a), b = t_.bv(op->b), p = a * b;
    if (!as_const_int(op->b) && t_.products_) {
      t_.products_->push_back({e.get(), &t_, a, b, p, t_.bounds_.bound(op->a),
                               t_.bounds_.bound(op->b), t_.bounds_.bound(e)});
    }
    return p;
  }
  z3::expr visit_FloorDiv(const FloorDivNode* op, const Expr&) override {
    if (auto c = as_const_int(op->b); c && *c > 0) {
      if (is_power_of_two(*c)) return z3::ashr(t_.bv(op->a), log2_exact(*c));
      return t_.const_floordiv(op->a, *c);
    }
    z3::expr a = t_.bv(op->a), b = t_.bv(op->b);
    t_.side_.push_back(b != 0);
    return z3::to_expr(t_.ctx_, Z3_mk_bvsdiv(t_.ctx_, a - z3::smod(a, b), b));
  }
  z3::expr visit_FloorMod(const FloorModNode* op, const Expr&) override {
    if (auto c = as_const_int(op->b); c && *c > 0) {
      if (is_power_of_two(*c)) return t_.bv(op->a) & t_.constant(*c - 1);
      return t_.bv(op->a) - t_.const_floordiv(op->a, *c) * t_.constant(*c);
    }
    z3::expr a = t_.bv(op->a), b = t_.bv(op->b);
    t_.side_.push_back(b != 0);
    return z3::smod(a, b);  // bvsmod: the remainder takes the divisor's sign, as Python's %
  }
  z3::expr visit_Min(const MinNode* op, const Expr&) override {
    z3::expr a = t_.bv(op->a), b = t_.bv(op->b);
    return z3::ite(z3::sle(a, b), a, b);
  }
  z3::expr visit_Max(const MaxNode* op, const Expr&) override {
    z3::expr a = t_.bv(op->a), b = t_.bv(op->b);
    return z3::ite(z3::sle(a, b), b, a);
  }
  z3::expr visit_BitAnd(const BitAndNode* op, const Expr& e) override {
    if (e.dtype().is_bool()) return t_.boolean(op->a) && t_.boolean(op->b);
    return t_.bv(op->a) & t_.bv(op->b);
  }
  z3::expr visit_BitOr(const BitOrNode* op, const Expr& e) override {
    if (e.dtype().is_bool()) return t_.boolean(op->a) || t_.boolean(op->b);
    return t_.bv(op->a) | t_.bv(op->b);
  }
  z3::expr visit_BitXor(const BitXorNode* op, const Expr& e) override {
    if (e.dtype().is_bool()) return t_.boolean(op->a) != t_.boolean(op->b);
    return t_.bv(op->a) ^ t_.bv(op->b);
  }
  z3::expr visit_Shl(const ShlNode* op, const Expr&) override {
    z3::expr b = t_.bv(op->b);
    if (!as_const_int(op->b)) t_.side_.push_back(z3::sge(b, 0));
    return z3::shl(t_.bv(op->a), b);
  }
  z3::expr visit_Shr(const ShrNode* op, const Expr&) override {
    z3::expr b = t_.bv(op->b);
    if (!as_const_int(op->b)) t_.side_.push_back(z3::sge(b, 0));
    return z3::ashr(t_.bv(op->a), b);
  }
  z3::expr visit_EQ(const EQNode* op, const Expr&) override { return t_.bv(op->a) == t_.bv(op->b); }
  z3::expr visit_NE(const NENode* op, const Expr&) override { return t_.bv(op->a) != t_.bv(op->b); }
  z3::expr visit_LT(const LTNode* op, const Expr&) override {
    return z3::slt(t_.bv(op->a), t_.bv(op->b));
  }
  z3::expr visit_LE(const LENode* op, const Expr&) override {
    return z3::sle(t_.bv(op->a), t_.bv(op->b));
  }
  z3::expr visit_GT(const GTNode* op, const Expr&) override {
    return z3::sgt(t_.bv(op->a), t_.bv(op->b));
  }
  z3::expr visit_GE(const GENode* op, const Expr&) override {
    return z3::sge(t_.bv(op->a), t_.bv(op->b));
  }
  z3::expr visit_And(const AndNode* op, const Expr&) override {
    return t_.boolean(op->a) && t_.boolean(op->b);
  }
  z3::expr visit_Or(const OrNode* op, const Expr&) override {
    return t_.boolean(op->a) || t_.boolean(op->b);
  }
  z3::expr visit_Not(const NotNode* op, const Expr&) override { return !t_.boolean(op->a); }
  z3::expr visit_Select(const SelectNode* op, const Expr& e) override {
    if (e.dtype().is_bool())
      return z3::ite(t_.boolean(op->cond), t_.boolean(op->t), t_.boolean(op->f));
    return z3::ite(t_.boolean(op->cond), t_.bv(op->t), t_.bv(op->f));
  }
  z3::expr visit_Cast(const CastNode* op, const Expr& e) override {
    DataType to = e.dtype();
    if (!op->value.dtype().is_integral()) unsupported(e);
    if (to.is_bool()) return t_.boolean(op->value);
    z3::expr v = t_.bv(op->value);
    IntBound vb = t_.bounds_.bound(op->value);
    auto [lo, hi] = dtype_limits(to);
    if (vb.min != IntBound::kNegInf && vb.max != IntBound::kPosInf && vb.min >= lo &&
        vb.max <= hi) {
      return v;  // the value fits: the cast changes nothing
    }
    // Wrap into the target type: keep its low bits, extend by its signedness.
    z3::expr low = v.extract(to.bits - 1, 0);
    unsigned pad = static_cast<unsigned>(t_.width_ - to.bits);
    return to.is_uint() ? z3::zext(low, pad) : z3::sext(low, pad);
  }
  z3::expr visit_default(const Expr& e) override { unsupported(e); }

 private:
  Z3ExprTranslator& t_;
};

Z3ExprTranslator::Z3ExprTranslator(z3::context& ctx, IndexBounds& bounds, int width,
                                   std::string suffix)
    : ctx_(ctx), bounds_(bounds), width_(width), suffix_(std::move(suffix)) {
  internal_check(width >= 2 && width <= 127, "bit-vector width out of range");
}

z3::expr Z3ExprTranslator::constant(int64_t value) {
  return ctx_.bv_val(value, static_cast<unsigned>(width_));
}

z3::expr Z3ExprTranslator::translate(const Expr& e) {
  if (auto it = memo_.find(e.get()); it != memo_.end()) return it->second;
  Visitor visitor(*this);
  z3::expr r = visitor.visit(e);
  memo_.emplace(e.get(), r);
  kept_.push_back(e);
  return r;
}

z3::expr Z3ExprTranslator::bv(const Expr& e) {
  z3::expr r = translate(e);
  if (r.is_bool()) return z3::ite(r, constant(1), constant(0));
  return r;
}

z3::expr Z3ExprTranslator::boolean(const Expr& e) {
  z3::expr r = translate(e);
  if (r.is_bool()) return r;
  return r != constant(0);
}

void Z3ExprTranslator::bind(const Var& v, const z3::expr& value) {
  vars_.insert_or_assign(v.operator->(), value);
  memo_.clear();
}

z3::expr Z3ExprTranslator::var(const Var& v) { return var_term(v); }

z3::expr Z3ExprTranslator::var_term(const Expr& v) {
  const auto* node = static_cast<const VarNode*>(v.get());
  if (auto it = vars_.find(node); it != vars_.end()) return it->second;
  z3::expr x = ctx_.bv_const((node->name + suffix_ + "!" + std::to_string(fresh_++)).c_str(),
                             static_cast<unsigned>(width_));
  IntBound b = bounds_.bound(v);
  side_.push_back(z3::sge(x, constant(b.min)) && z3::sle(x, constant(b.max)));
  vars_.emplace(node, x);
  created_.push_back(x);
  return x;
}

z3::expr Z3ExprTranslator::const_floordiv(const Expr& a, int64_t c) {
  auto& per_a = quotients_[a.get()];
  if (auto it = per_a.find(c); it != per_a.end()) return it->second;
  z3::expr av = bv(a);
  z3::expr q = ctx_.bv_const(("q" + suffix_ + "!" + std::to_string(fresh_++)).c_str(),
                             static_cast<unsigned>(width_));
  // a = q*c + r with 0 <= r < c; q confined to [a.lo // c, a.hi // c] so q*c cannot wrap.
  IntBound ab = bounds_.bound(a);
  z3::expr r = av - q * constant(c);
  side_.push_back(z3::sge(q, constant(floor_div(ab.min, c))) &&
                  z3::sle(q, constant(floor_div(ab.max, c))) && z3::sge(r, constant(0)) &&
                  z3::slt(r, constant(c)));
  per_a.emplace(c, q);
  kept_.push_back(a);
  created_.push_back(q);
  return q;
}

z3::expr Z3ExprTranslator::side_condition() const {
  z3::expr all = ctx_.bool_val(true);
  for (const auto& s : side_) all = all && s;
  return all;
}

z3::expr_vector Z3ExprTranslator::fresh_constants() const {
  z3::expr_vector v(ctx_);
  for (const auto& c : created_) v.push_back(c);
  return v;
}

int64_t z3_signed_value(const z3::expr& numeral) {
  std::string bits;
  internal_check(numeral.as_binary(bits), "model value is not a numeral");
  // Z3 prints the binary string without leading zeros; the sign bit is bit width-1.
  unsigned width = numeral.get_sort().bv_size();
  __int128 value = 0;
  for (char ch : bits) value = value * 2 + (ch == '1');
  if (bits.size() == width && bits[0] == '1') value -= static_cast<__int128>(1) << width;
  return static_cast<int64_t>(value);
}

}  // namespace tessel
