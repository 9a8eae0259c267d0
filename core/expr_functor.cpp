// Default recursion of the expression visitor and mutator, and helpers built on them.
#include "core/expr_functor.h"

#include "core/buffer.h"

namespace tessel {

// ---- ExprVisitor ------------------------------------------------------------------------------

void ExprVisitor::visit_IntImm(const IntImmNode*, const Expr&) {}
void ExprVisitor::visit_FloatImm(const FloatImmNode*, const Expr&) {}
void ExprVisitor::visit_Var(const VarNode*, const Expr&) {}
void ExprVisitor::visit_Not(const NotNode* op, const Expr&) { visit(op->a); }
void ExprVisitor::visit_Select(const SelectNode* op, const Expr&) {
  visit(op->cond);
  visit(op->t);
  visit(op->f);
}
void ExprVisitor::visit_Cast(const CastNode* op, const Expr&) { visit(op->value); }
void ExprVisitor::visit_BufferLoad(const BufferLoadNode* op, const Expr&) {
  for (const Expr& i : op->indices) visit(i);
}
void ExprVisitor::visit_Call(const CallNode* op, const Expr&) {
  for (const Expr& a : op->args) visit(a);
}
#define TESSEL_VISIT_PAIR_(name, sym)                                  \
  void ExprVisitor::visit_##name(const name##Node* op, const Expr&) { \
    visit(op->a);                                                     \
    visit(op->b);                                                     \
  }
TESSEL_BINARY_NODES(TESSEL_VISIT_PAIR_)
TESSEL_COMPARE_NODES(TESSEL_VISIT_PAIR_)
#undef TESSEL_VISIT_PAIR_

// ---- ExprMutator ------------------------------------------------------------------------------

Expr ExprMutator::visit_IntImm(const IntImmNode*, const Expr& e) { return e; }
Expr ExprMutator::visit_FloatImm(const FloatImmNode*, const Expr& e) { return e; }
Expr ExprMutator::visit_Var(const VarNode*, const Expr& e) { return e; }
Expr ExprMutator::visit_Not(const NotNode* op, const Expr& e) {
  Expr a = visit(op->a);
  return a.same_as(op->a) ? e : NotNode::make(a);
}
Expr ExprMutator::visit_Select(const SelectNode* op, const Expr& e) {
  Expr c = visit(op->cond), t = visit(op->t), f = visit(op->f);
  if (c.same_as(op->cond) && t.same_as(op->t) && f.same_as(op->f)) return e;
  return SelectNode::make(c, t, f);
}
Expr ExprMutator::visit_Cast(const CastNode* op, const Expr& e) {
  Expr v = visit(op->value);
  return v.same_as(op->value) ? e : CastNode::make(op->dtype, v);
}
Expr ExprMutator::visit_BufferLoad(const BufferLoadNode* op, const Expr& e) {
  std::vector<Expr> indices;
  bool changed = false;
  for (const Expr& i : op->indices) {
    indices.push_back(visit(i));
    changed |= !indices.back().same_as(i);
  }
  return changed ? BufferLoadNode::make(op->buffer, std::move(indices)) : e;
}
Expr ExprMutator::visit_Call(const CallNode* op, const Expr& e) {
  std::vector<Expr> args;
  bool changed = false;
  for (const Expr& a : op->args) {
    args.push_back(visit(a));
    changed |= !args.back().same_as(a);
  }
  return changed ? CallNode::make(op->op, std::move(args)) : e;
}
#define TESSEL_MUTATE_PAIR_(name, sym)                                 \
  Expr ExprMutator::visit_##name(const name##Node* op, const Expr& e) { \
    Expr a = visit(op->a), b = visit(op->b);                           \
    if (a.same_as(op->a) && b.same_as(op->b)) return e;                \
    return name##Node::make(a, b);                                     \
  }
TESSEL_BINARY_NODES(TESSEL_MUTATE_PAIR_)
TESSEL_COMPARE_NODES(TESSEL_MUTATE_PAIR_)
#undef TESSEL_MUTATE_PAIR_

// ---- Helpers ----------------------------------------------------------------------------------

namespace {

class VarSubstituter : public ExprMutator {
 public:
  explicit VarSubstituter(const std::function<Expr(const Var&)>& replace) : replace_(replace) {}

 protected:
  Expr visit_Var(const VarNode*, const Expr& e) override {
    Expr r = replace_(static_cast<const Var&>(e));
    return r.defined() ? r : e;
  }

 private:
  const std::function<Expr(const Var&)>& replace_;
};

}  // namespace

void pre_order_visit(const Expr& e, const std::function<void(const Expr&)>& fn) {
  struct Walker : ExprVisitor {
    const std::function<void(const Expr&)>* fn;
    void walk(const Expr& x) {
      (*fn)(x);
      visit(x);
    }
   protected:
    void visit_Not(const NotNode* op, const Expr&) override { walk(op->a); }
    void visit_Select(const SelectNode* op, const Expr&) override {
      walk(op->cond);
      walk(op->t);
      walk(op->f);
    }
    void visit_Cast(const CastNode* op, const Expr&) override { walk(op->value); }
    void visit_BufferLoad(const BufferLoadNode* op, const Expr&) override {
      for (const Expr& i : op->indices) walk(i);
    }
    void visit_Call(const CallNode* op, const Expr&) override {
      for (const Expr& a : op->args) walk(a);
    }
#define TESSEL_WALK_PAIR_(name, sym)                                 \
  void visit_##name(const name##Node* op, const Expr&) override { \
    walk(op->a);                                                  \
    walk(op->b);                                                  \
  }
    TESSEL_BINARY_NODES(TESSEL_WALK_PAIR_)
    TESSEL_COMPARE_NODES(TESSEL_WALK_PAIR_)
#undef TESSEL_WALK_PAIR_
  } walker;
  walker.fn = &fn;
  walker.walk(e);
}

std::vector<Expr> expr_children(const Expr& e) {
  if (const auto* b = dynamic_cast<const BinaryNode*>(e.get())) return {b->a, b->b};
  if (const auto* c = dynamic_cast<const CompareNode*>(e.get())) return {c->a, c->b};
  if (const auto* n = e.as<NotNode>()) return {n->a};
  if (const auto* s = e.as<SelectNode>()) return {s->cond, s->t, s->f};
  if (const auto* c = e.as<CastNode>()) return {c->value};
  if (const auto* l = e.as<BufferLoadNode>()) return l->indices;
  if (const auto* c = e.as<CallNode>()) return c->args;
  return {};
}

Expr substitute(const Expr& e, const std::function<Expr(const Var&)>& replace) {
  return VarSubstituter(replace).mutate(e);
}

bool uses_var(const Expr& e, const Var& v) {
  bool found = false;
  pre_order_visit(e, [&](const Expr& x) { found |= x.same_as(v); });
  return found;
}

}  // namespace tessel
