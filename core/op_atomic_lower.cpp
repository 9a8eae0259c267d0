// T.atomic_add/max/min at thread level: the tile form is the Parallel loop
// `atom_<op>(dst[...], src[...])` over the tile (edge elements skipped; a replicated source
// fragment adds each element once, from replica 0); the scalar form is one atomic by thread 0,
// or inside a T.Parallel iteration one atomic by the thread that runs the iteration.
#include "core/intrinsics.h"
#include "core/op_atomic.h"
#include "core/parallel_loop.h"
#include "core/region_loop.h"

namespace tessel {

namespace {

Stmt atomic_call(AtomicKind kind, const Buffer& dst, std::vector<Expr> idx, Expr value,
                 const SourceLoc& loc) {
  if (value.dtype() != dst->dtype) value = cast(dst->dtype, value);
  return IntrinsicCallNode::make(
      atomic_intrinsic(kind),
      {IntrinsicArg{dst, std::move(idx), Expr()}, IntrinsicArg{Buffer(), {}, value}}, loc);
}

}  // namespace

ParallelLoop AtomicOp::tile_loop(Analyzer* analyzer) const {
  RegionLoop loop = region_loop(*src_, *this);
  bind_loop(loop, analyzer);
  std::vector<Expr> s = region_index(*src_, loop.vars), d = region_index(dst_, loop.vars);
  Stmt body =
      guard(edge_test(dst_.buffer, d, analyzer),
            atomic_call(kind_, dst_.buffer, d, BufferLoadNode::make(src_->buffer, s), loc()),
            Stmt(), loc());
  return ParallelLoop(this, describe(), loop.vars, loop.extents, body, loc());
}

void AtomicOp::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  if (src_) tile_loop(nullptr).infer_layout(ctx, level);
}

Stmt AtomicOp::lower(LowerContext& ctx) const {
  if (src_) return tile_loop(&ctx.analyzer()).lower(ctx);
  return IfNode::make(ctx.thread() == make_int(0), lower_element(ctx), Stmt(), loc());
}

Stmt AtomicOp::lower_element(LowerContext& ctx) const {
  if (src_) internal_error(describe() + ": the tile form is not an element operator");
  std::vector<Expr> d;
  for (const Range& r : dst_.ranges) d.push_back(r.min);
  return guard(edge_test(dst_.buffer, d, &ctx.analyzer()),
               atomic_call(kind_, dst_.buffer, d, value_, loc()), Stmt(), loc());
}

}  // namespace tessel
