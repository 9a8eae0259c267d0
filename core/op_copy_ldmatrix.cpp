// Shared -> fragment copies of 16-bit gemm operands as ldmatrix.x4 (sm80/sm90). Rather than
// knowing which operator chose the fragment, the copy checks the fragment itself: every thread's
// registers, in blocks of 8, must hold exactly what one ldmatrix.x4 delivers to that lane —
//   non-transposed (an mma A operand): register 2m + h of lane l holds
//     (r0 + 8 (m % 2) + l / 4, c0 + 8 (m / 2) + 2 (l % 4) + h)
//   transposed (an mma B operand, two n8 tiles): register 2m + h of lane l holds
//     (r0 + 8 (m % 2) + 2 (l % 4) + h, c0 + 8 (m / 2) + l / 4)
// with (r0, c0) the same for the 32 lanes of a warp (PTX ISA, "ldmatrix" and the mma.m16n8k16
// fragments; core/builtin_layouts.h). In both, matrix m covers rows r0 + 8 (m % 2) and columns
// c0 + 8 (m / 2) of the stored tile, so lane l supplies the address of row l % 8 of matrix l / 8:
// (r0 + 8 ((l / 8) % 2) + l % 8, c0 + 8 (l / 16)). The check runs over every thread and
// register block; a fragment that does not match keeps the generic copy.
#include "core/op_copy_ldmatrix.h"

#include "core/expr_functor.h"
#include "core/instruction_family.h"
#include "core/intrinsics.h"
#include "core/op_copy.h"

namespace tessel {

namespace {

/// True when register block `b` of every thread follows the pattern, with one (r0, c0) per warp.
bool matches(const Layout& inverse, int64_t threads, int64_t blocks, bool trans) {
  for (int64_t w = 0; w < threads / 32; ++w) {
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t r0 = 0, c0 = 0;
      for (int64_t l = 0; l < 32; ++l) {
        for (int64_t m = 0; m < 4; ++m) {
          for (int64_t h = 0; h < 2; ++h) {
            std::vector<int64_t> x = inverse.map({w * 32 + l, b * 8 + 2 * m + h});
            int64_t dr = trans ? 8 * (m % 2) + 2 * (l % 4) + h : 8 * (m % 2) + l / 4;
            int64_t dc = trans ? 8 * (m / 2) + l / 4 : 8 * (m / 2) + 2 * (l % 4) + h;
            if (l == 0 && m == 0 && h == 0) r0 = x[0] - dr, c0 = x[1] - dc;
            if (x[0] != r0 + dr || x[1] != c0 + dc) return false;
          }
        }
      }
    }
  }
  return true;
}

}  // namespace

std::optional<bool> ldmatrix_pattern(const Fragment& frag, int64_t threads) {
  if (threads % 32 != 0 || frag.input_rank() != 2 || frag.local_extent() % 8 != 0 ||
      frag.thread_extent() != threads || threads * frag.local_extent() > (int64_t{1} << 18)) {
    return std::nullopt;
  }
  Layout inverse;
  try {
    inverse = frag.inverse();
  } catch (const UserError&) {
    return std::nullopt;
  }
  for (bool trans : {false, true}) {
    if (matches(inverse, threads, frag.local_extent() / 8, trans)) return trans;
  }
  return std::nullopt;
}

std::optional<Stmt> lower_ldmatrix_copy(const CopyOp& op, LowerContext& ctx) {
  const Buffer& src = op.src().buffer;
  const Buffer& dst = op.dst().buffer;
  if (!ctx.target().has(ldmatrix_family()) || dst->scope != Scope::kFragment ||
      (src->scope != Scope::kShared && src->scope != Scope::kSharedDyn) ||
      src->dtype != dst->dtype || src->dtype.storage_bits() != 16 || dst->ndim() != 2 ||
      !op.dst().is_full() || src->ndim() != 2 || ctx.threads() % 32 != 0) {
    return std::nullopt;
  }
  const Fragment* frag = ctx.layouts().fragment(dst);
  std::optional<bool> pattern = frag ? ldmatrix_pattern(*frag, ctx.threads()) : std::nullopt;
  if (!pattern) return std::nullopt;
  const Layout inverse = frag->inverse();
  const int64_t blocks = frag->local_extent() / 8;
  {
    const bool trans = *pattern;
    const Var& t = ctx.thread();
    Expr lane = floormod(t, make_int(32));
    Var b = ctx.fresh_var("b");
    std::vector<Expr> first = inverse.forward({t, b * 8});
    Expr r0 =
        trans ? first[0] - floormod(lane, make_int(4)) * 2 : first[0] - floordiv(lane, make_int(4));
    Expr c0 =
        trans ? first[1] - floordiv(lane, make_int(4)) : first[1] - floormod(lane, make_int(4)) * 2;
    Expr row =
        r0 + floormod(floordiv(lane, make_int(8)), make_int(2)) * 8 + floormod(lane, make_int(8));
    Expr col = c0 + floordiv(lane, make_int(16)) * 8;
    row = ctx.analyzer().simplify(row + op.src().ranges[0].min);
    col = ctx.analyzer().simplify(col + op.src().ranges[1].min);
    IntrinsicId id = trans ? IntrinsicId::kLdmatrixX4Trans : IntrinsicId::kLdmatrixX4;
    Stmt call = IntrinsicCallNode::make(
        id,
        {IntrinsicArg{ctx.registers(dst), {b * 8}, Expr()}, IntrinsicArg{src, {row, col}, Expr()}},
        op.loc());
    return ForNode::make(b, make_int(0), make_int(blocks), ForKind::kUnrolled, call, op.loc());
  }
}

}  // namespace tessel
