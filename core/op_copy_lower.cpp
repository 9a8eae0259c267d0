// T.copy at thread level: the copy is the Parallel loop `dst[...] = src[...]` over its tile, with
// edge tests where the tile may hang over a tensor's edge (reads there give zero, writes are
// dropped), so it is partitioned, vectorised and laid out like any Parallel loop.
#include "core/op_copy.h"
#include "core/parallel_loop.h"
#include "core/region_loop.h"

namespace tessel {

namespace {

ParallelLoop copy_loop(const CopyOp& op, Analyzer* analyzer) {
  RegionLoop loop = region_loop(op.src(), op);
  bind_loop(loop, analyzer);
  std::vector<Expr> s = region_index(op.src(), loop.vars), d = region_index(op.dst(), loop.vars);
  const Buffer& dst = op.dst().buffer;
  Expr value = BufferLoadNode::make(op.src().buffer, s);
  if (value.dtype() != dst->dtype) value = cast(dst->dtype, value);
  Stmt body = guard(edge_test(op.src().buffer, s, analyzer),
                    StoreNode::make(dst, d, value, op.loc()),
                    StoreNode::make(dst, d, make_const(dst->dtype, 0), op.loc()), op.loc());
  body = guard(edge_test(dst, d, analyzer), body, Stmt(), op.loc());
  return ParallelLoop(&op, op.describe(), loop.vars, loop.extents, body, op.loc());
}

}  // namespace

void CopyOp::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  copy_loop(*this, nullptr).infer_layout(ctx, level);
}

Stmt CopyOp::lower(LowerContext& ctx) const {
  return copy_loop(*this, &ctx.analyzer()).lower(ctx);
}

}  // namespace tessel
