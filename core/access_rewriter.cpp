// AccessRewriter: loads, stores and intrinsic operands through one rewrite function.
#include "core/access_rewriter.h"

namespace tessel {

Stmt AccessRewriter::visit_Store(const StoreNode* op, const Stmt& s) {
  Stmt m = StmtMutator::visit_Store(op, s);
  const auto* st = m.as<StoreNode>();
  auto access = rewrite(st->buffer, st->indices);
  return access ? StoreNode::make(access->first, access->second, st->value, st->loc) : m;
}

Stmt AccessRewriter::visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt&) {
  std::vector<IntrinsicArg> args = op->args;
  for (IntrinsicArg& a : args) {
    for (Expr& i : a.indices) i = mutate_expr(i);
    if (a.value.defined()) a.value = mutate_expr(a.value);
    if (!a.buffer.defined()) continue;
    if (auto access = rewrite(a.buffer, a.indices)) {
      a.buffer = access->first;
      a.indices = access->second;
    }
  }
  return IntrinsicCallNode::make(op->intrinsic, std::move(args), op->loc);
}

Expr AccessRewriter::Loads::visit_BufferLoad(const BufferLoadNode* op, const Expr& e) {
  Expr m = ExprMutator::visit_BufferLoad(op, e);
  const auto* ld = m.as<BufferLoadNode>();
  auto access = r_.rewrite(ld->buffer, ld->indices);
  return access ? BufferLoadNode::make(access->first, access->second) : m;
}

}  // namespace tessel
