// Pass simplify_indices: every expression simplified by the analyzer, knowing the ranges of the
// thread index, the block indices and every loop variable with constant bounds (so register
// indices such as `(lo * 128 + t) * 4 % 4` fold away), and the conditions of the enclosing ifs.
// Conditions the analyzer decides are folded: an `if` whose condition always holds becomes its
// body, a select (T.if_then_else, a cp.async's zero-fill size) its branch — so the edge guards of
// a pipelined main loop over divisible shapes disappear.
#include <optional>

#include "core/analyzer.h"
#include "core/expr_functor.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "core/vector_copy.h"

namespace tessel {

namespace {

Expr bool_const(bool value) { return IntImmNode::make(DataType::boolean(), value ? 1 : 0); }

/// The value of a boolean immediate, if `e` is one.
std::optional<bool> as_bool(const Expr& e) {
  if (!e.dtype().is_bool()) return std::nullopt;
  if (auto v = as_const_int(e)) return *v != 0;
  return std::nullopt;
}

/// Simplifies load indices and the integer parts of an expression, and folds the conditions the
/// analyzer decides (comparisons of integers, their and/or/not, selects on them).
class Folder : public ExprMutator {
 public:
  explicit Folder(Analyzer& a) : a_(a) {}

  Expr fold(const Expr& e) {
    if (e.dtype().is_integral() && !e.dtype().is_bool()) return a_.simplify(mutate(e));
    return mutate(e);
  }

 protected:
  Expr visit_BufferLoad(const BufferLoadNode* op, const Expr&) override {
    std::vector<Expr> idx;
    for (const Expr& i : op->indices) idx.push_back(fold(i));
    return BufferLoadNode::make(op->buffer, std::move(idx));
  }
  Expr visit_Select(const SelectNode* op, const Expr& e) override {
    Expr cond = fold(op->cond);
    if (auto c = as_bool(cond)) return fold(*c ? op->t : op->f);
    return ExprMutator::visit_Select(op, e);
  }
  Expr visit_And(const AndNode* op, const Expr& e) override {
    Expr a = fold(op->a), b = fold(op->b);
    auto ca = as_bool(a), cb = as_bool(b);
    if ((ca && !*ca) || (cb && !*cb)) return bool_const(false);
    if (ca) return b;
    if (cb) return a;
    return decide(a && b, e);
  }
  Expr visit_Or(const OrNode* op, const Expr& e) override {
    Expr a = fold(op->a), b = fold(op->b);
    auto ca = as_bool(a), cb = as_bool(b);
    if ((ca && *ca) || (cb && *cb)) return bool_const(true);
    if (ca) return b;
    if (cb) return a;
    return decide(a || b, e);
  }
  Expr visit_Not(const NotNode* op, const Expr& e) override {
    Expr a = fold(op->a);
    if (auto c = as_bool(a)) return bool_const(!*c);
    return decide(!a, e);
  }
#define TESSEL_COMPARE_(name)                                           \
  Expr visit_##name(const name##Node* op, const Expr& e) override {     \
    Expr m = ExprMutator::visit_##name(op, e);                          \
    if (!op->a.dtype().is_integral() || !op->b.dtype().is_integral()) { \
      return m;                                                         \
    }                                                                   \
    return decide(m, e);                                                \
  }
  TESSEL_COMPARE_(EQ)
  TESSEL_COMPARE_(NE)
  TESSEL_COMPARE_(LT)
  TESSEL_COMPARE_(LE)
  TESSEL_COMPARE_(GT)
  TESSEL_COMPARE_(GE)
#undef TESSEL_COMPARE_

 private:
  /// `cond` as a constant when the analyzer proves it or its negation, else `cond`.
  Expr decide(const Expr& cond, const Expr&) {
    if (a_.can_prove(cond)) return bool_const(true);
    if (a_.can_prove(!cond)) return bool_const(false);
    return cond;
  }

  Analyzer& a_;
};

class Simplifier : public StmtMutator {
 public:
  explicit Simplifier(const Kernel& kernel) {
    analyzer_.bind(kernel->thread_var, 0, kernel->threads);
    for (size_t d = 0; d < kernel->grid.size(); ++d) {
      if (auto g = as_const_int(kernel->grid[d])) analyzer_.bind(kernel->block_vars[d], 0, *g);
    }
  }

 protected:
  Expr mutate_expr(const Expr& e) override { return folder_.fold(e); }
  Stmt visit_For(const ForNode* op, const Stmt& s) override {
    auto min = as_const_int(op->min);
    auto extent = as_const_int(op->extent);
    if (min && extent && *extent > 0) {
      analyzer_.bind(op->var, *min, *extent);
    } else if (!min) {
      bind_symbolic_loop(analyzer_, *op);  // a split loop's part (bx + 1, ...)
    } else {
      analyzer_.bind(op->var, IntBound{});  // no earlier loop's range over the same variable
    }
    return StmtMutator::visit_For(op, s);
  }
  Stmt visit_If(const IfNode* op, const Stmt&) override {
    Expr cond = folder_.fold(op->cond);
    if (auto c = as_bool(cond)) {
      if (*c) return mutate(op->then_case);
      return op->else_case.defined() ? mutate(op->else_case) : SeqNode::make({});
    }
    Stmt then_case, else_case;
    {
      Analyzer::ConstraintScope scope(analyzer_, cond);
      then_case = mutate(op->then_case);
    }
    if (op->else_case.defined()) {
      Analyzer::ConstraintScope scope(analyzer_, !cond);
      else_case = mutate(op->else_case);
    }
    return IfNode::make(cond, then_case, else_case, op->loc);
  }

 private:
  Analyzer analyzer_;
  Folder folder_{analyzer_};
};

}  // namespace

Kernel simplify_indices(const Kernel& kernel) {
  return with_body(kernel, Simplifier(kernel).mutate(kernel->body));
}

}  // namespace tessel
