// Exact integer evaluation of index expressions.
#include "core/int_eval.h"

#include <set>

#include "core/error.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"

namespace tessel {

int64_t floor_div(int64_t a, int64_t b) {
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));  // INT64_MIN / -1 wraps
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

namespace {

class IntEvaluator : public ExprFunctor<int64_t> {
 public:
  explicit IntEvaluator(const IntEnv& env) : env_(env) {}

 protected:
  int64_t visit_IntImm(const IntImmNode* op, const Expr&) override { return op->value; }
  int64_t visit_Var(const VarNode* op, const Expr&) override {
    auto it = env_.find(op);
    if (it == env_.end()) {
      user_error("variable '" + op->name + "' has no value here; bind it before evaluating");
    }
    return it->second;
  }
  int64_t visit_Not(const NotNode* op, const Expr&) override { return !visit(op->a); }
  int64_t visit_Select(const SelectNode* op, const Expr&) override {
    return visit(op->cond) ? visit(op->t) : visit(op->f);
  }
  int64_t visit_Cast(const CastNode* op, const Expr& e) override {
    if (!op->value.dtype().is_integral() || !op->dtype.is_integral()) return visit_default(e);
    return wrap_int(op->dtype, visit(op->value));
  }

#define TESSEL_ARITH_(name, expr_)                                   \
  int64_t visit_##name(const name##Node* op, const Expr&) override { \
    int64_t a = visit(op->a), b = visit(op->b);                      \
    return wrap_int(op->dtype, expr_);                               \
  }
  TESSEL_ARITH_(Add, static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)))
  TESSEL_ARITH_(Sub, static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)))
  TESSEL_ARITH_(Mul, static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)))
  TESSEL_ARITH_(Min, std::min(a, b))
  TESSEL_ARITH_(Max, std::max(a, b))
  TESSEL_ARITH_(BitAnd, a& b)
  TESSEL_ARITH_(BitOr, a | b)
  TESSEL_ARITH_(BitXor, a ^ b)
  TESSEL_ARITH_(Shl, shift_amount(b) >= 64
                         ? 0
                         : static_cast<int64_t>(static_cast<uint64_t>(a) << shift_amount(b)))
  TESSEL_ARITH_(Shr, a >> std::min<int64_t>(shift_amount(b), 63))
#undef TESSEL_ARITH_
  int64_t visit_FloorDiv(const FloorDivNode* op, const Expr& e) override {
    int64_t a = visit(op->a), b = visit(op->b);
    if (b == 0) division_by_zero(e, op->b);
    return wrap_int(op->dtype, floor_div(a, b));
  }
  int64_t visit_FloorMod(const FloorModNode* op, const Expr& e) override {
    int64_t a = visit(op->a), b = visit(op->b);
    if (b == 0) division_by_zero(e, op->b);
    return wrap_int(op->dtype, floor_mod(a, b));
  }

#define TESSEL_CMP_(name, op_)                                       \
  int64_t visit_##name(const name##Node* op, const Expr&) override { \
    return visit(op->a) op_ visit(op->b);                            \
  }
  TESSEL_CMP_(EQ, ==)
  TESSEL_CMP_(NE, !=)
  TESSEL_CMP_(LT, <)
  TESSEL_CMP_(LE, <=)
  TESSEL_CMP_(GT, >)
  TESSEL_CMP_(GE, >=)
#undef TESSEL_CMP_
  int64_t visit_And(const AndNode* op, const Expr&) override {
    return visit(op->a) && visit(op->b);
  }
  int64_t visit_Or(const OrNode* op, const Expr&) override { return visit(op->a) || visit(op->b); }

  int64_t visit_default(const Expr& e) override {
    user_error(std::string("cannot evaluate a ") + kind_name(e.kind()) + " of type " +
               e.dtype().name() + " as an integer index expression");
  }

 private:
  /// "division by zero in the index expression `i // j`: the divisor `j` is 0 at i = 3, j = 0".
  [[noreturn]] void division_by_zero(const Expr& e, const Expr& divisor) const {
    auto text = [](const Expr& x) {
      std::string s = to_string(x);
      return s.size() > 200 ? s.substr(0, 200) + "..." : s;
    };
    std::string values;
    std::set<const VarNode*> seen;
    pre_order_visit(e, [&](const Expr& x) {
      const auto* v = x.as<VarNode>();
      auto it = v ? env_.find(v) : env_.end();
      if (it == env_.end() || !seen.insert(v).second) return;
      values += (values.empty() ? " at " : ", ") + v->name + " = " + std::to_string(it->second);
    });
    user_error("division by zero in the index expression `" + text(e) + "`: the divisor `" +
               text(divisor) + "` is 0" + values);
  }
  static int64_t shift_amount(int64_t b) {
    if (b < 0) user_error("negative shift amount in an index expression");
    return b;
  }
  const IntEnv& env_;
};

}  // namespace

int64_t eval_int(const Expr& e, const IntEnv& env) { return IntEvaluator(env).visit(e); }

}  // namespace tessel
