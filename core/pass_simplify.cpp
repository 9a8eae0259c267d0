// Pass simplify_indices: every expression simplified by the analyzer, knowing the ranges of the
// thread index, the block indices and every loop variable with constant bounds (so register
// indices such as `(lo * 128 + t) * 4 % 4` fold away).
#include "core/expr_functor.h"
#include "core/passes.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

class Simplifier : public StmtMutator {
 public:
  explicit Simplifier(const Kernel& kernel) {
    analyzer_.bind(kernel->thread_var, 0, kernel->threads);
    for (size_t d = 0; d < kernel->grid.size(); ++d) {
      if (auto g = as_const_int(kernel->grid[d])) analyzer_.bind(kernel->block_vars[d], 0, *g);
    }
  }

 protected:
  Expr mutate_expr(const Expr& e) override {
    if (e.dtype().is_integral() && !e.dtype().is_bool()) return analyzer_.simplify(e);
    return indices_.mutate(e);
  }
  Stmt visit_For(const ForNode* op, const Stmt& s) override {
    auto min = as_const_int(op->min);
    auto extent = as_const_int(op->extent);
    if (min && extent && *extent > 0) analyzer_.bind(op->var, *min, *extent);
    return StmtMutator::visit_For(op, s);
  }

 private:
  /// Simplifies the indices of the loads inside a non-index expression.
  class Indices : public ExprMutator {
   public:
    explicit Indices(Analyzer& a) : a_(a) {}

   protected:
    Expr visit_BufferLoad(const BufferLoadNode* op, const Expr&) override {
      std::vector<Expr> idx;
      for (const Expr& i : op->indices) idx.push_back(a_.simplify(mutate(i)));
      return BufferLoadNode::make(op->buffer, std::move(idx));
    }

   private:
    Analyzer& a_;
  };

  Analyzer analyzer_;
  Indices indices_{analyzer_};
};

}  // namespace

Kernel simplify_indices(const Kernel& kernel) {
  return with_body(kernel, Simplifier(kernel).mutate(kernel->body));
}

}  // namespace tessel
