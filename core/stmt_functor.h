// Dispatch over statement kinds: a functor, a recursive visitor and a rebuilding mutator.
#pragma once

#include <functional>

#include "core/error.h"
#include "core/stmt.h"
#include "core/tile_op.h"

namespace tessel {

/// Calls visit_<Kind>(node, stmt) for the statement's kind.
template <typename R>
class StmtFunctor {
 public:
  virtual ~StmtFunctor() = default;

  R visit(const Stmt& s) {
    switch (s.kind()) {
#define TESSEL_CASE_(name) \
  case StmtKind::k##name:  \
    return visit_##name(static_cast<const name##Node*>(s.get()), s);
      TESSEL_STMT_NODES(TESSEL_CASE_)
#undef TESSEL_CASE_
    }
    internal_error("unknown statement kind");
  }

 protected:
#define TESSEL_VISIT_(name) virtual R visit_##name(const name##Node* op, const Stmt& s) = 0;
  TESSEL_STMT_NODES(TESSEL_VISIT_)
#undef TESSEL_VISIT_
};

/// Visits every statement; `visit_expr` is called on every expression the statements hold
/// (tile operators' expressions included). Override a kind and call the base to keep recursing.
class StmtVisitor : public StmtFunctor<void> {
 protected:
  virtual void visit_expr(const Expr&) {}
#define TESSEL_VISIT_(name) void visit_##name(const name##Node* op, const Stmt& s) override;
  TESSEL_STMT_NODES(TESSEL_VISIT_)
#undef TESSEL_VISIT_
};

/// Rebuilds statements bottom-up; a node is rebuilt only when a child changed. `mutate_expr`
/// rewrites every expression (identity by default).
class StmtMutator : public StmtFunctor<Stmt> {
 public:
  Stmt mutate(const Stmt& s) { return visit(s); }

 protected:
  virtual Expr mutate_expr(const Expr& e) { return e; }
#define TESSEL_VISIT_(name) Stmt visit_##name(const name##Node* op, const Stmt& s) override;
  TESSEL_STMT_NODES(TESSEL_VISIT_)
#undef TESSEL_VISIT_
};

/// Calls `fn` on every statement of `s`, parents before children.
void for_each_stmt(const Stmt& s, const std::function<void(const Stmt&)>& fn);
/// Calls `fn` on every expression held by `s` and its children (not on sub-expressions).
void for_each_expr(const Stmt& s, const std::function<void(const Expr&)>& fn);
/// `s` with every variable `vars[k]` replaced by `values[k]` in all its expressions.
Stmt substitute(const Stmt& s, const std::vector<Var>& vars, const std::vector<Expr>& values);

}  // namespace tessel
