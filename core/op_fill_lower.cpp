// T.fill / T.clear at thread level: the Parallel loop `dst[...] = value` over the tile.
#include "core/op_fill.h"
#include "core/parallel_loop.h"
#include "core/region_loop.h"

namespace tessel {

namespace {

ParallelLoop fill_loop(const FillOp& op, Analyzer* analyzer) {
  RegionLoop loop = region_loop(op.dst(), op);
  bind_loop(loop, analyzer);
  std::vector<Expr> d = region_index(op.dst(), loop.vars);
  const Buffer& dst = op.dst().buffer;
  Expr value = op.value().dtype() == dst->dtype ? op.value() : cast(dst->dtype, op.value());
  Stmt body = guard(edge_test(dst, d, analyzer), StoreNode::make(dst, d, value, op.loc()), Stmt(),
                    op.loc());
  return ParallelLoop(&op, op.describe(), loop.vars, loop.extents, body, op.loc());
}

/// A per-thread (T.alloc_local) buffer belongs to each thread whole: every thread fills all of
/// it, in a plain loop nest (no partition over the threads).
Stmt local_fill(const FillOp& op, LowerContext& ctx) {
  RegionLoop loop = region_loop(op.dst(), op);
  bind_loop(loop, &ctx.analyzer());
  std::vector<Expr> d = region_index(op.dst(), loop.vars);
  const Buffer& dst = op.dst().buffer;
  Expr value = op.value().dtype() == dst->dtype ? op.value() : cast(dst->dtype, op.value());
  Stmt body = guard(edge_test(dst, d, &ctx.analyzer()), StoreNode::make(dst, d, value, op.loc()),
                    Stmt(), op.loc());
  for (size_t k = loop.vars.size(); k-- > 0;) {
    body = ForNode::make(loop.vars[k], make_int(0), make_int(loop.extents[k]), ForKind::kUnrolled,
                         body, op.loc());
  }
  return body;
}

bool is_local(const FillOp& op) { return op.dst().buffer->scope == Scope::kLocal; }

}  // namespace

void FillOp::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  if (is_local(*this)) return;  // no partition to choose
  fill_loop(*this, nullptr).infer_layout(ctx, level);
}

Stmt FillOp::lower(LowerContext& ctx) const {
  if (is_local(*this)) return local_fill(*this, ctx);
  return fill_loop(*this, &ctx.analyzer()).lower(ctx);
}

}  // namespace tessel
