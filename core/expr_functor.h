// Dispatch over expression kinds: a value-returning functor, a recursive visitor and a mutator.
#pragma once

#include "core/error.h"
#include "core/expr.h"

namespace tessel {

/// Calls visit_<Kind>(node) for the node's kind. Kinds a subclass does not override fall to
/// visit_default, which reports an internal error.
template <typename R>
class ExprFunctor {
 public:
  virtual ~ExprFunctor() = default;

  R visit(const Expr& e) {
    switch (e->kind) {
#define TESSEL_CASE_(name, ...)   \
  case ExprKind::k##name: \
    return visit_##name(static_cast<const name##Node*>(e.get()), e);
      TESSEL_EXPR_NODES(TESSEL_CASE_)
#undef TESSEL_CASE_
    }
    internal_error("unknown expression kind");
  }

 protected:
#define TESSEL_VISIT_(name, ...) \
  virtual R visit_##name(const name##Node* op, const Expr& e) { return visit_default(e); }
  TESSEL_EXPR_NODES(TESSEL_VISIT_)
#undef TESSEL_VISIT_
  virtual R visit_default(const Expr& e) {
    internal_error(std::string("expression functor does not handle ") + kind_name(e->kind));
  }
};

/// Visits every sub-expression, children first-to-last. Override a kind and call the base to keep
/// recursing.
class ExprVisitor : public ExprFunctor<void> {
 protected:
#define TESSEL_VISIT_(name, ...) void visit_##name(const name##Node* op, const Expr& e) override;
  TESSEL_EXPR_NODES(TESSEL_VISIT_)
#undef TESSEL_VISIT_
};

/// Rebuilds an expression bottom-up; a node is rebuilt only when one of its children changed.
class ExprMutator : public ExprFunctor<Expr> {
 public:
  Expr mutate(const Expr& e) { return visit(e); }

 protected:
#define TESSEL_VISIT_(name, ...) Expr visit_##name(const name##Node* op, const Expr& e) override;
  TESSEL_EXPR_NODES(TESSEL_VISIT_)
#undef TESSEL_VISIT_
};

/// The direct operands of a node, in a fixed order (buffer-load indices, call arguments).
std::vector<Expr> expr_children(const Expr& e);

/// Calls `fn` on `e` and then on every sub-expression of it, parents before children.
void pre_order_visit(const Expr& e, const std::function<void(const Expr&)>& fn);
/// Replaces variables by expressions.
Expr substitute(const Expr& e, const std::function<Expr(const Var&)>& replace);
/// True when `e` mentions variable `v`.
bool uses_var(const Expr& e, const Var& v);

}  // namespace tessel
