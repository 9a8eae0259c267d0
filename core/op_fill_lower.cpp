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

}  // namespace

void FillOp::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  fill_loop(*this, nullptr).infer_layout(ctx, level);
}

Stmt FillOp::lower(LowerContext& ctx) const { return fill_loop(*this, &ctx.analyzer()).lower(ctx); }

}  // namespace tessel
