// T.copy at thread level: the copy is the Parallel loop `dst[...] = src[...]` over its tile, with
// edge tests where the tile may hang over a tensor's edge (reads there give zero, writes are
// dropped), so it is partitioned, vectorised and laid out like any Parallel loop. Inside a
// software pipeline, global -> shared copies become cp.async of whole 4/8/16-byte chunks;
// shared -> fragment copies of mma operands become ldmatrix (core/op_copy_ldmatrix.cpp).
#include "core/builtin_layouts.h"
#include "core/expr_functor.h"
#include "core/instruction_family.h"
#include "core/intrinsics.h"
#include "core/op_copy.h"
#include "core/op_copy_ldmatrix.h"
#include "core/parallel_loop.h"
#include "core/region_loop.h"

namespace tessel {

namespace {

Expr substitute_loop(const Expr& e, const std::vector<Var>& vars, const std::vector<Expr>& values) {
  return substitute(e, [&](const Var& v) -> Expr {
    for (size_t k = 0; k < vars.size(); ++k) {
      if (v.same_as(vars[k])) return values[k];
    }
    return Expr();
  });
}

ParallelLoop copy_loop(const CopyOp& op, Analyzer* analyzer) {
  RegionLoop loop = region_loop(op.src(), op);
  bind_loop(loop, analyzer);
  std::vector<Expr> s = region_index(op.src(), loop.vars), d = region_index(op.dst(), loop.vars);
  const Buffer& dst = op.dst().buffer;
  Expr value = BufferLoadNode::make(op.src().buffer, s);
  if (value.dtype() != dst->dtype) value = cast(dst->dtype, value);
  Stmt body =
      guard(edge_test(op.src().buffer, s, analyzer), StoreNode::make(dst, d, value, op.loc()),
            StoreNode::make(dst, d, make_const(dst->dtype, 0), op.loc()), op.loc());
  body = guard(edge_test(dst, d, analyzer), body, Stmt(), op.loc());
  ParallelLoop l(&op, op.describe(), loop.vars, loop.extents, body, op.loc());
  l.set_converts_layouts(op.src().buffer->scope == Scope::kFragment &&
                         dst->scope == Scope::kFragment);
  return l;
}

/// A copy between two fragments whose layouts differ (an mma accumulator into an MFMA operand:
/// other lanes hold the element): each thread writes its source elements to a shared scratch
/// tile, and after the barrier the pass inserts, reads its destination elements from it.
std::optional<Stmt> lower_conversion(const CopyOp& op, LowerContext& ctx) {
  const Buffer& src = op.src().buffer;
  const Buffer& dst = op.dst().buffer;
  if (src->scope != Scope::kFragment || dst->scope != Scope::kFragment) return std::nullopt;
  const Fragment* fs = ctx.layouts().fragment(src);
  const Fragment* fd = ctx.layouts().fragment(dst);
  if (!fs || !fd || *fs == *fd ||
      (fs->input_shape() == fd->input_shape() && fs->input_size() <= (int64_t{1} << 20) &&
       equal_by_evaluation(*fs, *fd))) {
    return std::nullopt;
  }
  RegionLoop loop = region_loop(op.src(), op);
  std::vector<Expr> s = region_index(op.src(), loop.vars), d = region_index(op.dst(), loop.vars);
  std::vector<Expr> shape;
  for (int64_t e : loop.extents) shape.push_back(make_int(e));
  Buffer scratch = ctx.temporary(src->name + "_to_" + dst->name, shape, src->dtype, Scope::kShared);
  std::vector<Expr> at(loop.vars.begin(), loop.vars.end());
  Stmt write = StoreNode::make(scratch, at, BufferLoadNode::make(src, s), op.loc());
  Expr value = BufferLoadNode::make(scratch, at);
  if (value.dtype() != dst->dtype) value = cast(dst->dtype, value);
  Stmt read = StoreNode::make(dst, d, value, op.loc());
  // The loops run over the fragments' own boxes (equal to the tile once unit dimensions go).
  return SeqNode::make({lower_over_layout(ctx, *fs, loop.vars, loop.extents, write, op.loc()),
                        lower_over_layout(ctx, *fd, loop.vars, loop.extents, read, op.loc())});
}

/// A copy from global to shared memory as cp.async of whole chunks (4, 8 or 16 bytes), when the
/// target has it and every chunk is either inside the tensor or entirely past its edge (then it
/// reads nothing and zero-fills). nullopt when the copy must stay synchronous.
std::optional<Stmt> lower_async(const CopyOp& op, LowerContext& ctx) {
  const Buffer& src = op.src().buffer;
  const Buffer& dst = op.dst().buffer;
  if (!ctx.target().has(cp_async_family()) || src->scope != Scope::kGlobal ||
      (dst->scope != Scope::kShared && dst->scope != Scope::kSharedDyn) ||
      src->dtype != dst->dtype || src->dtype.storage_bits() % 8 != 0) {
    return std::nullopt;
  }
  RegionLoop loop = region_loop(op.src(), op);
  bind_loop(loop, &ctx.analyzer());
  const Fragment* layout = ctx.layouts().loop(&op);
  auto vec = free_partition_width(*layout, loop.extents, ctx.threads());
  const int64_t bytes = vec ? *vec * src->dtype.storage_bits() / 8 : 0;
  if (bytes != 4 && bytes != 8 && bytes != 16) return std::nullopt;
  // Chunks never straddle the edge: the tensor's last extent and the tile's origin along it are
  // multiples of the chunk.
  Analyzer& a = ctx.analyzer();
  const Expr& origin = op.src().ranges.back().min;
  if (!a.can_prove(floormod(src->shape.back(), make_int(*vec)) == make_int(0)) ||
      !a.can_prove(floormod(origin, make_int(*vec)) == make_int(0))) {
    return std::nullopt;
  }
  IntrinsicId id = bytes == 4   ? IntrinsicId::kCpAsync4
                   : bytes == 8 ? IntrinsicId::kCpAsync8
                                : IntrinsicId::kCpAsync16;
  return lower_vector_chunks(
      ctx, *layout, loop.extents,
      [&](const std::vector<Expr>& first, int64_t) {
        std::vector<Expr> s, d;
        // region_index substitutes the loop variables; here they take the chunk's first element.
        for (Expr e : region_index(op.src(), loop.vars))
          s.push_back(substitute_loop(e, loop.vars, first));
        for (Expr e : region_index(op.dst(), loop.vars))
          d.push_back(substitute_loop(e, loop.vars, first));
        Expr inside = edge_test(src, s, &a);
        Expr size =
            inside.defined() ? if_then_else(inside, make_int(bytes), make_int(0)) : make_int(bytes);
        return IntrinsicCallNode::make(id,
                                       {IntrinsicArg{dst, d, Expr()}, IntrinsicArg{src, s, Expr()},
                                        IntrinsicArg{Buffer(), {}, size}},
                                       op.loc());
      },
      op.loc());
}

}  // namespace

void CopyOp::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  copy_loop(*this, nullptr).infer_layout(ctx, level);
  // A shared tile that ldmatrix will read into an mma operand fragment gets the gemm swizzle,
  // so the ldmatrix phases are conflict-free (as the gemm's own operands are).
  const Buffer& src = src_.buffer;
  const Fragment* frag = ctx.fragment(dst_.buffer);
  if (level != InferLevel::kCommon || !frag || !ctx.target().has(ldmatrix_family()) ||
      (src->scope != Scope::kShared && src->scope != Scope::kSharedDyn) || ctx.shared_layout(src) ||
      !src_.is_full() || src->ndim() != 2 || src->dtype.storage_bits() != 16) {
    return;
  }
  if (auto trans = ldmatrix_pattern(*frag, ctx.threads())) {
    auto rows = as_const_int(src->shape[0]), cols = as_const_int(src->shape[1]);
    if (rows && cols) {
      ctx.set_shared_layout(src, gemm_operand_layout(*rows, *cols, src->dtype, !*trans),
                            describe() + " (common: ldmatrix source)");
    }
  }
}

Stmt CopyOp::lower(LowerContext& ctx) const {
  if (auto s = lower_ldmatrix_copy(*this, ctx)) return *s;
  if (auto s = lower_conversion(*this, ctx)) return *s;
  if (ctx.async_copies()) {
    if (auto s = lower_async(*this, ctx)) return *s;
  }
  return copy_loop(*this, &ctx.analyzer()).lower(ctx);
}

}  // namespace tessel
