// Default recursion of the statement visitor and mutator.
#include "core/stmt_functor.h"

#include "core/expr_functor.h"

namespace tessel {

// ---- StmtVisitor ------------------------------------------------------------------------------

void StmtVisitor::visit_Seq(const SeqNode* op, const Stmt&) {
  for (const Stmt& s : op->stmts) visit(s);
}
void StmtVisitor::visit_For(const ForNode* op, const Stmt&) {
  visit_expr(op->min);
  visit_expr(op->extent);
  visit(op->body);
}
void StmtVisitor::visit_If(const IfNode* op, const Stmt&) {
  visit_expr(op->cond);
  visit(op->then_case);
  if (op->else_case.defined()) visit(op->else_case);
}
void StmtVisitor::visit_Store(const StoreNode* op, const Stmt&) {
  for (const Expr& i : op->indices) visit_expr(i);
  visit_expr(op->value);
}
void StmtVisitor::visit_Alloc(const AllocNode* op, const Stmt&) {
  for (const Expr& e : op->buffer->shape) visit_expr(e);
  if (op->init.defined()) visit_expr(op->init);
}
void StmtVisitor::visit_Let(const LetNode* op, const Stmt&) {
  visit_expr(op->value);
  visit(op->body);
}
void StmtVisitor::visit_Barrier(const BarrierNode*, const Stmt&) {}
void StmtVisitor::visit_TileOpCall(const TileOpCallNode* op, const Stmt&) {
  (void)op->op->map_exprs([this](const Expr& e) {
    visit_expr(e);
    return e;
  });
}
void StmtVisitor::visit_UseSwizzle(const UseSwizzleNode*, const Stmt&) {}
void StmtVisitor::visit_Print(const PrintNode* op, const Stmt&) { visit_expr(op->value); }
void StmtVisitor::visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt&) {
  for (const IntrinsicArg& a : op->args) {
    for (const Expr& i : a.indices) visit_expr(i);
    if (a.value.defined()) visit_expr(a.value);
  }
}

// ---- StmtMutator ------------------------------------------------------------------------------

Stmt StmtMutator::visit_Seq(const SeqNode* op, const Stmt& s) {
  std::vector<Stmt> stmts;
  bool changed = false;
  for (const Stmt& c : op->stmts) {
    stmts.push_back(visit(c));
    changed |= !stmts.back().same_as(c);
  }
  return changed ? SeqNode::make(std::move(stmts)) : s;
}
Stmt StmtMutator::visit_For(const ForNode* op, const Stmt& s) {
  Expr min = mutate_expr(op->min), extent = mutate_expr(op->extent);
  Stmt body = visit(op->body);
  if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return s;
  return ForNode::make(op->var, min, extent, op->for_kind, body, op->loc, op->pipeline);
}
Stmt StmtMutator::visit_If(const IfNode* op, const Stmt& s) {
  Expr cond = mutate_expr(op->cond);
  Stmt t = visit(op->then_case);
  Stmt e = op->else_case.defined() ? visit(op->else_case) : op->else_case;
  if (cond.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return s;
  return IfNode::make(cond, t, e, op->loc);
}
Stmt StmtMutator::visit_Store(const StoreNode* op, const Stmt& s) {
  std::vector<Expr> idx;
  bool changed = false;
  for (const Expr& i : op->indices) {
    idx.push_back(mutate_expr(i));
    changed |= !idx.back().same_as(i);
  }
  Expr v = mutate_expr(op->value);
  if (!changed && v.same_as(op->value)) return s;
  return StoreNode::make(op->buffer, std::move(idx), v, op->loc);
}
Stmt StmtMutator::visit_Alloc(const AllocNode* op, const Stmt& s) {
  if (!op->init.defined()) return s;
  Expr init = mutate_expr(op->init);
  return init.same_as(op->init) ? s : AllocNode::make(op->buffer, init, op->is_var, op->loc);
}
Stmt StmtMutator::visit_Let(const LetNode* op, const Stmt& s) {
  Expr v = mutate_expr(op->value);
  Stmt body = visit(op->body);
  if (v.same_as(op->value) && body.same_as(op->body)) return s;
  return LetNode::make(op->var, v, body, op->loc);
}
Stmt StmtMutator::visit_Barrier(const BarrierNode*, const Stmt& s) { return s; }
Stmt StmtMutator::visit_TileOpCall(const TileOpCallNode* op, const Stmt&) {
  return TileOpCallNode::make(op->op->map_exprs([this](const Expr& e) { return mutate_expr(e); }));
}
Stmt StmtMutator::visit_UseSwizzle(const UseSwizzleNode*, const Stmt& s) { return s; }
Stmt StmtMutator::visit_Print(const PrintNode* op, const Stmt& s) {
  Expr v = mutate_expr(op->value);
  return v.same_as(op->value) ? s : PrintNode::make(v, op->msg, op->loc);
}
Stmt StmtMutator::visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt& s) {
  std::vector<IntrinsicArg> args = op->args;
  bool changed = false;
  for (IntrinsicArg& a : args) {
    for (Expr& i : a.indices) {
      Expr m = mutate_expr(i);
      changed |= !m.same_as(i);
      i = m;
    }
    if (a.value.defined()) {
      Expr m = mutate_expr(a.value);
      changed |= !m.same_as(a.value);
      a.value = m;
    }
  }
  return changed ? IntrinsicCallNode::make(op->intrinsic, std::move(args), op->loc) : s;
}

// ---- Helpers ----------------------------------------------------------------------------------

namespace {

class LambdaStmtVisitor : public StmtVisitor {
 public:
  LambdaStmtVisitor(const std::function<void(const Stmt&)>* on_stmt,
                    const std::function<void(const Expr&)>* on_expr)
      : on_stmt_(on_stmt), on_expr_(on_expr) {}
  void run(const Stmt& s) { walk(s); }

 protected:
  void visit_expr(const Expr& e) override {
    if (on_expr_) (*on_expr_)(e);
  }
  void visit_Seq(const SeqNode* op, const Stmt&) override {
    for (const Stmt& s : op->stmts) walk(s);
  }
  void visit_For(const ForNode* op, const Stmt&) override {
    visit_expr(op->min);
    visit_expr(op->extent);
    walk(op->body);
  }
  void visit_If(const IfNode* op, const Stmt&) override {
    visit_expr(op->cond);
    walk(op->then_case);
    if (op->else_case.defined()) walk(op->else_case);
  }
  void visit_Let(const LetNode* op, const Stmt&) override {
    visit_expr(op->value);
    walk(op->body);
  }

 private:
  void walk(const Stmt& s) {
    if (on_stmt_) (*on_stmt_)(s);
    visit(s);
  }
  const std::function<void(const Stmt&)>* on_stmt_;
  const std::function<void(const Expr&)>* on_expr_;
};

/// Replaces variables by expressions in every expression of a statement.
class VarSubstituter : public StmtMutator {
 public:
  VarSubstituter(const std::vector<Var>& vars, const std::vector<Expr>& values)
      : vars_(vars), values_(values) {}

 protected:
  Expr mutate_expr(const Expr& e) override {
    return substitute(e, [&](const Var& v) -> Expr {
      for (size_t k = 0; k < vars_.size(); ++k) {
        if (v.same_as(vars_[k])) return values_[k];
      }
      return Expr();
    });
  }

 private:
  const std::vector<Var>& vars_;
  const std::vector<Expr>& values_;
};

}  // namespace

Stmt substitute(const Stmt& s, const std::vector<Var>& vars, const std::vector<Expr>& values) {
  return VarSubstituter(vars, values).mutate(s);
}

void for_each_stmt(const Stmt& s, const std::function<void(const Stmt&)>& fn) {
  LambdaStmtVisitor(&fn, nullptr).run(s);
}

void for_each_expr(const Stmt& s, const std::function<void(const Expr&)>& fn) {
  LambdaStmtVisitor(nullptr, &fn).run(s);
}

}  // namespace tessel
