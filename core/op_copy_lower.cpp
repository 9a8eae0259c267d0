// T.copy at thread level: the copy is the Parallel loop `dst[...] = src[...]` over its tile, with
// edge tests where the tile may hang over a tensor's edge (reads there give zero, writes are
// dropped), so it is partitioned, vectorised and laid out like any Parallel loop. Inside a
// software pipeline, global -> shared copies become cp.async of whole 4/8/16-byte chunks;
// shared -> fragment copies of mma operands become ldmatrix (core/op_copy_ldmatrix.cpp).
#include <algorithm>
#include <map>

#include "core/bank_rules.h"
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
  std::vector<Expr> at(loop.vars.begin(), loop.vars.end());
  // Where gemms run on MFMA the destination is an operand read 4 elements a lane (ds_read_b64
  // of 16 rows) and the source an accumulator written 2 bytes a lane along rows 4 apart: the
  // scratch holds the destination's type (the cast happens once, on the write) in the MFMA
  // operand swizzle, which keeps both sides conflict-free.
  DataType scratch_type = src->dtype;
  if (ctx.target().has(mfma_family()) && dst->dtype.storage_bits() == 16 &&
      loop.extents.size() == 2 &&
      mfma_operand_layout_kind(loop.extents[0], loop.extents[1], dst->dtype) == "swizzle_mfma") {
    scratch_type = dst->dtype;
    at = swizzle_mfma(loop.extents[0], loop.extents[1], dst->dtype).forward(at);
  }
  Buffer scratch =
      ctx.temporary(src->name + "_to_" + dst->name, shape, scratch_type, Scope::kShared);
  Expr stored = BufferLoadNode::make(src, s);
  if (stored.dtype() != scratch_type) stored = cast(scratch_type, stored);
  Stmt write = StoreNode::make(scratch, at, stored, op.loc());
  Expr value = BufferLoadNode::make(scratch, at);
  if (value.dtype() != dst->dtype) value = cast(dst->dtype, value);
  Stmt read = StoreNode::make(dst, d, value, op.loc());
  // The loops run over the fragments' own boxes (equal to the tile once unit dimensions go).
  return SeqNode::make({lower_over_layout(ctx, *fs, loop.vars, loop.extents, write, op.loc()),
                        lower_over_layout(ctx, *fd, loop.vars, loop.extents, read, op.loc())});
}

/// The storage offset of `index` under `layout`: its output index flattened row-major.
int64_t storage_offset(const Layout& layout, const std::vector<int64_t>& index) {
  const std::vector<int64_t> out = layout.map(index);
  const std::vector<int64_t>& shape = layout.output_shape();
  int64_t offset = 0;
  for (size_t d = 0; d < out.size(); ++d) offset = offset * shape[d] + out[d];
  return offset;
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
  if (!vec) return std::nullopt;
  // Each lane's run of *vec elements moves as cp.async of `w` elements; w < *vec when the
  // destination's shared layout keeps only narrower chunks contiguous and aligned (padded rows).
  const int64_t elem_bytes = src->dtype.storage_bits() / 8;
  int64_t w = *vec;
  const Layout* stored = ctx.layouts().shared_layout(dst);
  while (w > 1 && w * elem_bytes > 4 && stored && !keeps_chunks_aligned(*stored, w)) w /= 2;
  if (stored && !keeps_chunks_aligned(*stored, w)) return std::nullopt;
  const int64_t bytes = w * elem_bytes;
  if (bytes != 4 && bytes != 8 && bytes != 16) return std::nullopt;
  // Chunks never straddle the edge: the tensor's last extent and the tile's origin along it are
  // multiples of the chunk; the destination's origin along it keeps the chunks aligned.
  Analyzer& a = ctx.analyzer();
  const Expr& origin = op.src().ranges.back().min;
  if (!a.can_prove(floormod(src->shape.back(), make_int(*vec)) == make_int(0)) ||
      !a.can_prove(floormod(origin, make_int(*vec)) == make_int(0)) ||
      !a.can_prove(floormod(op.dst().ranges.back().min, make_int(w)) == make_int(0))) {
    return std::nullopt;
  }
  IntrinsicId id = bytes == 4   ? IntrinsicId::kCpAsync4
                   : bytes == 8 ? IntrinsicId::kCpAsync8
                                : IntrinsicId::kCpAsync16;
  return lower_vector_chunks(
      ctx, *layout, loop.extents,
      [&](const std::vector<Expr>& first, int64_t) {
        std::vector<Stmt> calls;
        for (int64_t part = 0; part < *vec / w; ++part) {
          std::vector<Expr> at = first, s, d;
          if (part > 0) at.back() = at.back() + make_int(part * w);
          // region_index substitutes the loop variables; here they take the part's first element.
          for (Expr e : region_index(op.src(), loop.vars))
            s.push_back(substitute_loop(e, loop.vars, at));
          for (Expr e : region_index(op.dst(), loop.vars))
            d.push_back(substitute_loop(e, loop.vars, at));
          Expr inside = edge_test(src, s, &a);
          Expr size = inside.defined() ? if_then_else(inside, make_int(bytes), make_int(0))
                                       : make_int(bytes);
          calls.push_back(
              IntrinsicCallNode::make(id,
                                      {IntrinsicArg{dst, d, Expr()}, IntrinsicArg{src, s, Expr()},
                                       IntrinsicArg{Buffer(), {}, size}},
                                      op.loc()));
        }
        return calls.size() == 1 ? calls[0] : SeqNode::make(calls);
      },
      op.loc());
}

/// Without cp.async a copy to or from shared memory is a vector load and a vector store per
/// chunk: the chunk may be no wider than the runs the shared layout keeps contiguous and aligned
/// (swizzle_mfma keeps 8-byte granules, not 16-byte chunks). 0: no cap.
int64_t shared_vector_cap(const CopyOp& op, LayoutInferContext& ctx) {
  if (ctx.target().has(cp_async_family())) return 0;  // lower_async splits its own chunks
  int64_t cap = 0;
  for (const Buffer& b : {op.src().buffer, op.dst().buffer}) {
    if (b->scope != Scope::kShared && b->scope != Scope::kSharedDyn) continue;
    const Layout* stored = ctx.shared_layout(b);
    if (!stored || b->dtype.storage_bits() % 8 != 0) continue;
    int64_t w = 128 / b->dtype.storage_bits();
    while (w > 1 && !keeps_chunks_aligned(*stored, w)) w /= 2;
    if (w < 128 / b->dtype.storage_bits()) cap = cap == 0 ? w : std::min(cap, w);
  }
  return cap;
}

/// The bank wavefronts of the first warp's reads of `frag` from a shared tile stored as `stored`,
/// each register run of `run` elements one `run`-element request, under the target's phase
/// rules. The first warp stands for all: the copies partition whole warps alike.
int64_t fragment_read_cost(const Fragment& frag, const Layout& stored, int64_t run, int elem_bytes,
                           const BankModel& model) {
  const int64_t regs = frag.local_extent();
  const int lanes = model.warp_size;
  std::vector<std::vector<int64_t>> addr(static_cast<size_t>(regs),
                                         std::vector<int64_t>(static_cast<size_t>(lanes), 0));
  std::vector<uint64_t> mask(static_cast<size_t>(regs), 0);
  for_each_index(frag.input_shape(), [&](const std::vector<int64_t>& p) {
    for (int64_t rep = 0; rep < frag.replicate(); ++rep) {
      auto [t, l] = frag.map_fragment(p, rep);
      if (t >= lanes || l % run != 0) continue;
      addr[l][t] = storage_offset(stored, p) * elem_bytes;
      mask[l] |= uint64_t{1} << t;
    }
  });
  int64_t cost = 0;
  for (int64_t l = 0; l < regs; l += run) {
    if (mask[l] == 0) continue;
    cost += count_wavefronts(model, addr[l], mask[l], static_cast<int>(run * elem_bytes), false)
                .wavefronts;
  }
  return cost;
}

/// The run of consecutive registers (4, 2 or 1) that holds consecutive elements of the last
/// dimension in every thread of `frag`: the width the copy reads them with.
int64_t fragment_run(const Fragment& frag) {
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> at;  // (thread, local) -> index
  for_each_index(frag.input_shape(),
                 [&](const std::vector<int64_t>& p) { at.emplace(frag.map_fragment(p, 0), p); });
  for (int64_t run = 4; run > 1; run /= 2) {
    bool ok = frag.local_extent() % run == 0;
    for (const auto& [tl, p] : at) {
      if (!ok) break;
      if (tl.second % run != 0) continue;
      for (int64_t i = 1; i < run && ok; ++i) {
        auto it = at.find({tl.first, tl.second + i});
        std::vector<int64_t> want = p;
        want.back() += i;
        ok = it != at.end() && it->second == want;
      }
    }
    if (ok) return run;
  }
  return 1;
}

/// On a target whose gemms run on MFMA, a shared tile copied into a fragment (an MFMA operand,
/// or packed weights about to be dequantised into one) gets the layout that makes the copy's
/// reads cheapest: row-major, or swizzle_mfma with 8- or 4-byte granules (ties keep row-major).
std::optional<Layout> mfma_read_layout(const Buffer& src, const Fragment& frag,
                                       const Target& target) {
  auto rows = as_const_int(src->shape[0]), cols = as_const_int(src->shape[1]);
  const int bits = src->dtype.storage_bits();
  if (!rows || !cols || bits % 8 != 0 || bits > 32 || frag.input_shape().size() != 2 ||
      frag.input_shape()[0] != *rows || frag.input_shape()[1] != *cols ||
      frag.input_size() > (int64_t{1} << 16)) {
    return std::nullopt;
  }
  const int elem = bits / 8;
  const int64_t run = fragment_run(frag);
  Layout plain = Layout::row_major({*rows, *cols});
  int64_t best_cost = fragment_read_cost(frag, plain, run, elem, target.banks);
  std::optional<Layout> best;
  for (int64_t granule : {8, 4}) {
    const int64_t vec = granule / elem, g = *cols / vec;
    if (run * elem > granule || *cols % vec != 0 || !(g > 0 && ((g & (g - 1)) == 0 || g % 16 == 0)))
      continue;
    Layout candidate = swizzle_mfma(*rows, *cols, src->dtype, granule);
    int64_t cost = fragment_read_cost(frag, candidate, run, elem, target.banks);
    if (cost < best_cost) best_cost = cost, best = candidate;
  }
  return best;
}

}  // namespace

void CopyOp::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  ParallelLoop loop = copy_loop(*this, nullptr);
  if (level == InferLevel::kFree) loop.set_max_vector(shared_vector_cap(*this, ctx));
  loop.infer_layout(ctx, level);
  // A shared tile that ldmatrix will read into an mma operand fragment gets the gemm swizzle,
  // so the ldmatrix phases are conflict-free (as the gemm's own operands are).
  const Buffer& src = src_.buffer;
  const Fragment* frag = ctx.fragment(dst_.buffer);
  if (level == InferLevel::kCommon && frag && ctx.target().has(mfma_family()) &&
      (src->scope == Scope::kShared || src->scope == Scope::kSharedDyn) &&
      !ctx.shared_layout(src) && src_.is_full() && src->ndim() == 2) {
    if (auto layout = mfma_read_layout(src, *frag, ctx.target())) {
      ctx.set_shared_layout(src, *layout, describe() + " (common: read into a fragment)");
    }
    return;
  }
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
