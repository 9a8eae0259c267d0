// How far the CUDA printer asks nvcc to unroll a warp-specialised consumer loop (loop_unroll.h).
#include "codegen/loop_unroll.h"

#include <numeric>

#include "core/expr_functor.h"
#include "core/intrinsics.h"
#include "core/stmt_functor.h"

namespace tessel::codegen {

namespace {

/// True when `e` is `k` or `k` plus or minus a constant.
bool is_k_plus_const(const Expr& e, const Var& k) {
  if (const auto* v = e.as<VarNode>()) return v == k.get();
  if (const auto* a = e.as<AddNode>()) {
    return (is_k_plus_const(a->a, k) && as_const_int(a->b)) ||
           (is_k_plus_const(a->b, k) && as_const_int(a->a));
  }
  if (const auto* s = e.as<SubNode>()) return is_k_plus_const(s->a, k) && as_const_int(s->b);
  return false;
}

}  // namespace

int64_t index_period(const Stmt& body, const Var& k) {
  int64_t period = 1;
  auto add = [&](int64_t p) {
    if (p > 0) period = std::lcm(period, p);
  };
  for_each_expr(body, [&](const Expr& root) {
    pre_order_visit(root, [&](const Expr& e) {
      const auto* m = e.as<FloorModNode>();
      if (!m) return;
      const std::optional<int64_t> c = as_const_int(m->b);
      if (!c) return;
      if (is_k_plus_const(m->a, k)) {
        add(*c);
      } else if (const auto* d = m->a.as<FloorDivNode>()) {
        const std::optional<int64_t> a = as_const_int(d->b);
        if (a && is_k_plus_const(d->a, k)) add(*a * *c);
      }
    });
  });
  return period;
}

int64_t executed_statements(const Stmt& body) {
  if (!body.defined()) return 0;
  if (const auto* seq = body.as<SeqNode>()) {
    int64_t n = 0;
    for (const Stmt& s : seq->stmts) n += executed_statements(s);
    return n;
  }
  if (const auto* f = body.as<ForNode>()) {
    const std::optional<int64_t> e = as_const_int(f->extent);
    return (e ? *e : 16) * executed_statements(f->body);
  }
  if (const auto* i = body.as<IfNode>()) {
    return 1 + executed_statements(i->then_case) + executed_statements(i->else_case);
  }
  if (const auto* l = body.as<LetNode>()) return 1 + executed_statements(l->body);
  return 1;
}

int64_t consumer_unroll(const ForNode& f) {
  if (f.for_kind != ForKind::kSerial) return 0;
  bool wgmma = false;
  for_each_stmt(f.body, [&](const Stmt& s) {
    const auto* c = s.as<IntrinsicCallNode>();
    wgmma = wgmma || (c && intrinsic_info(c->intrinsic).family == IntrinsicFamily::kWgmma);
  });
  if (!wgmma) return 0;
  const int64_t period = index_period(f.body, f.var);
  const int64_t cost = std::max<int64_t>(executed_statements(f.body), 1);
  const std::optional<int64_t> extent = as_const_int(f.extent);
  for (int64_t d = period; d >= 2; --d) {
    if (extent && d > *extent) continue;  // more copies than iterations: nothing to gain
    if (period % d == 0 && d * cost <= kUnrollBudget) return d;
  }
  return 0;
}

}  // namespace tessel::codegen
