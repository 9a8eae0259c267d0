// T.gemm operand loads for one k step, from shared memory into per-warp register temporaries.
// mma path (PTX ISA ldmatrix and mma.m16n8k16 fragments): A tile (16 x 16) by ldmatrix.x4,
// B by ldmatrix.x4 per pair of n8 tiles (x2 for a lone one); `.trans` when the stored tile's
// contiguous dimension is M (A stored (K, M)) or N (B stored (K, N)). MFMA path (16x16xK):
// lane l holds row/column l % 16 and k = K/4 (l / 16) + [0, K/4), loaded with plain loads (a
// vectorised loop where they are contiguous: 8 bytes for f16 and the CDNA3 int8 16x16x32, 4 for
// the CDNA2 int8 16x16x16). int8 mma path (mma.m16n8k32): plain 4-byte loads of each register's
// four k.
#include "core/op_gemm.h"
#include "core/op_gemm_lower.h"

namespace tessel {

namespace {

IntrinsicId ldmatrix_id(int matrices, bool trans) {
  if (matrices == 4) return trans ? IntrinsicId::kLdmatrixX4Trans : IntrinsicId::kLdmatrixX4;
  return trans ? IntrinsicId::kLdmatrixX2Trans : IntrinsicId::kLdmatrixX2;
}

/// ldmatrix loads of one k step. Lane l addresses row l % 8 of 8x8 matrix l / 8. The matrices
/// are numbered in the order of the mma registers: for A (m x k) 0 = (m lo, k lo),
/// 1 = (m hi, k lo), 2 = (m lo, k hi), 3 = (m hi, k hi); for B (k x n) pairs of n8 tiles,
/// 0 = (k lo, n), 1 = (k hi, n), 2, 3 the same for n + 8.
/// ldmatrix reads each 8-row matrix row as 16 consecutive bytes at the address of its first
/// element: the operand's layout must keep every run of 16 bytes along the stored rows (starting
/// at a multiple of 16 bytes) consecutive and 16-byte aligned in storage. A user error naming the
/// buffer, the run and the fix otherwise (an annotated column-major, permuted or oddly padded
/// layout would have ldmatrix load other elements).
void check_ldmatrix_rows(GemmLowering& g, const Buffer& src) {
  const Layout* layout = g.ctx.layouts().shared_layout(src);
  if (!layout) return;
  const int64_t run = 128 / src->dtype.storage_bits();
  const std::vector<int64_t>& in = layout->input_shape();
  const std::vector<int64_t>& out = layout->output_shape();
  if (in.size() != 2 || run < 1) return;
  auto flat = [&](int64_t r, int64_t c) {
    std::vector<int64_t> o = layout->map({r, c});
    int64_t f = o[0];
    for (size_t d = 1; d < o.size(); ++d) f = f * out[d] + o[d];
    return f;
  };
  for (int64_t r = 0; r < in[0]; ++r) {
    for (int64_t c = 0; c + run <= in[1]; c += run) {
      int64_t first = flat(r, c);
      bool ok = first % run == 0;
      int64_t v = 1;
      for (; ok && v < run; ++v) ok = flat(r, c + v) == first + v;
      if (ok) continue;
      user_error(g.op.describe() + ": ldmatrix reads " + src->name + "[" + std::to_string(r) +
                 ", " + std::to_string(c) + ":" + std::to_string(c + run) +
                 "] as 16 consecutive bytes, but its layout " + layout->to_string() +
                 (first % run != 0 ? " starts that run at element offset " + std::to_string(first) +
                                         ", not a multiple of " + std::to_string(run)
                                   : " does not store it contiguously (element " +
                                         std::to_string(c + v - 1) + " is elsewhere)") +
                 "; fix: drop the T.annotate_layout of '" + src->name +
                 "' (the gemm picks a swizzled layout), or keep each row contiguous with a row "
                 "stride that is a multiple of " +
                 std::to_string(run) + " elements");
    }
  }
}

StepOperand ldmatrix_operand(GemmLowering& g, bool is_a, const Expr& ko) {
  const GemmPlan& p = g.plan;
  const GemmOp& op = g.op;
  const Buffer& src = is_a ? op.A() : op.B();
  check_ldmatrix_rows(g, src);
  Expr lane = g.lane, k0 = ko * 16;
  Expr lo8 = floormod(lane, 8);
  Expr mat = floordiv(lane, 8);  // the matrix this lane addresses
  if (is_a) {
    Buffer regs = g.ctx.temporary(src->name + "_frag", {make_int(p.tiles_m() * 8)}, src->dtype,
                                  Scope::kLocal);
    bool stored_km = op.options().transpose_A;
    Stmt load = g.loop("i", p.tiles_m(), ForKind::kUnrolled, [&](const Expr& i) {
      Expr m0 = g.wm * make_int(p.partition.warp_m) + i * 16;
      Expr m = m0 + floormod(mat, 2) * 8, k = k0 + floordiv(mat, 2) * 8;
      // Stored (M, K): lanes give rows m + l % 8 at column k. Stored (K, M): rows k + l % 8 at
      // column m, transposed by ldmatrix.
      std::vector<Expr> at =
          stored_km ? std::vector<Expr>{k + lo8, m} : std::vector<Expr>{m + lo8, k};
      return g.call(ldmatrix_id(4, stored_km), {register_arg(regs, i * 8), element_arg(src, at)});
    });
    return {load, [regs](const Expr& i) { return register_arg(regs, i * 8); }};
  }
  Buffer regs =
      g.ctx.temporary(src->name + "_frag", {make_int(p.tiles_n() * 4)}, src->dtype, Scope::kLocal);
  bool stored_kn = !op.options().transpose_B;
  bool pairs = p.tiles_n() % 2 == 0;
  int64_t per_load = pairs ? 2 : 1;  // n8 tiles per ldmatrix
  Stmt load = g.loop("j", p.tiles_n() / per_load, ForKind::kUnrolled, [&](const Expr& jl) {
    Expr n0 = g.wn * make_int(p.partition.warp_n) + jl * make_int(8 * per_load);
    // x2 reads only the addresses of lanes 0-15; lanes 16-31 repeat them.
    Expr n = n0 + (pairs ? floordiv(mat, 2) * 8 : Expr(0)), k = k0 + floormod(mat, 2) * 8;
    std::vector<Expr> at =
        stored_kn ? std::vector<Expr>{k + lo8, n} : std::vector<Expr>{n + lo8, k};
    return g.call(ldmatrix_id(pairs ? 4 : 2, stored_kn),
                  {register_arg(regs, jl * make_int(4 * per_load)), element_arg(src, at)});
  });
  return {load, [regs](const Expr& j) { return register_arg(regs, j * 4); }};
}

/// MFMA operands of one k step (16x16xK, wave64): lane l holds row/column l % 16 and
/// k = K ko + per (l / 16) + [0, per), per = K / 4 elements a lane and tile (4 for the 16-bit
/// 16x16x16 and int8 16x16x16i8, 8 for int8 16x16x32_i8): one 8- (or 4-) byte load where k is
/// the contiguous dimension.
StepOperand mfma_operand(GemmLowering& g, bool is_a, const Expr& ko) {
  const GemmPlan& p = g.plan;
  const GemmOp& op = g.op;
  const Buffer& src = is_a ? op.A() : op.B();
  int64_t tiles = is_a ? p.tiles_m() : p.tiles_n();
  const int64_t per = p.inst_k / 4;
  Expr origin = is_a ? g.wm * make_int(p.partition.warp_m) : g.wn * make_int(p.partition.warp_n);
  // The k index is contiguous when A is stored (M, K) or B is stored (N, K).
  bool k_inner = is_a ? !op.options().transpose_A : op.options().transpose_B;
  Buffer regs =
      g.ctx.temporary(src->name + "_frag", {make_int(tiles * per)}, src->dtype, Scope::kLocal);
  Stmt load = g.loop(is_a ? "i" : "j", tiles, ForKind::kUnrolled, [&](const Expr& t) {
    Expr mn = origin + t * 16 + floormod(g.lane, 16);
    Var v = g.ctx.fresh_var("v");
    Expr k = ko * make_int(p.inst_k) + floordiv(g.lane, 16) * make_int(per) + v;
    // Stored (M, K) or (N, K): [m or n, k]; stored (K, M) or (K, N): [k, m or n].
    std::vector<Expr> at = k_inner ? std::vector<Expr>{mn, k} : std::vector<Expr>{k, mn};
    Stmt store =
        StoreNode::make(regs, {t * make_int(per) + v}, BufferLoadNode::make(src, at), op.loc());
    return ForNode::make(v, 0, make_int(per), k_inner ? ForKind::kVectorized : ForKind::kUnrolled,
                         store, op.loc());
  });
  return {load, [regs, per](const Expr& t) { return register_arg(regs, t * make_int(per)); }};
}

/// mma.m16n8k32 int8 operands of one k step (PTX ISA fragments, g = lane / 4, t = lane % 4):
/// 32-bit register r of a lane holds four consecutive k, 32 ko + 4t + 16 h + [0, 4), of one row
/// (A: row g + 8 (r % 2), h = r / 2, four registers per 16x32 tile; B: column n = g, h = r, two
/// per 32x8 tile), read as one 4-byte load where k is the contiguous dimension. ldmatrix moves
/// 16-bit elements only here (the ldmatrix family).
StepOperand int8_operand(GemmLowering& g, bool is_a, const Expr& ko) {
  const GemmPlan& p = g.plan;
  const GemmOp& op = g.op;
  const Buffer& src = is_a ? op.A() : op.B();
  const int64_t tiles = is_a ? p.tiles_m() : p.tiles_n();
  const int64_t per_tile = intrinsic_info(p.instruction).operands[is_a ? 1 : 2].elements;
  const int64_t tile_rows = is_a ? p.inst_m : p.inst_n;
  Expr origin = is_a ? g.wm * make_int(p.partition.warp_m) : g.wn * make_int(p.partition.warp_n);
  // The k index is contiguous when A is stored (M, K) or B is stored (N, K).
  bool k_inner = is_a ? !op.options().transpose_A : op.options().transpose_B;
  Buffer regs =
      g.ctx.temporary(src->name + "_frag", {make_int(tiles * per_tile)}, src->dtype, Scope::kLocal);
  Expr group = floordiv(g.lane, 4), in_group = floormod(g.lane, 4);
  Stmt load = g.loop(is_a ? "i" : "j", tiles, ForKind::kUnrolled, [&](const Expr& t) {
    std::vector<Stmt> words;
    for (int64_t r = 0; r < per_tile / 4; ++r) {
      Expr mn = origin + t * make_int(tile_rows) + group + make_int(is_a ? (r % 2) * 8 : 0);
      Var v = g.ctx.fresh_var("v");
      Expr k = ko * make_int(p.inst_k) + in_group * 4 + make_int((is_a ? r / 2 : r) * 16) + v;
      std::vector<Expr> at = k_inner ? std::vector<Expr>{mn, k} : std::vector<Expr>{k, mn};
      Stmt store = StoreNode::make(regs, {t * make_int(per_tile) + make_int(r * 4) + v},
                                   BufferLoadNode::make(src, at), op.loc());
      words.push_back(ForNode::make(v, 0, 4, k_inner ? ForKind::kVectorized : ForKind::kUnrolled,
                                    store, op.loc()));
    }
    return SeqNode::make(std::move(words));
  });
  return {load,
          [regs, per_tile](const Expr& t) { return register_arg(regs, t * make_int(per_tile)); }};
}

}  // namespace

StepOperand load_shared_operand(GemmLowering& g, bool is_a, const Expr& ko) {
  if (g.plan.path != GemmPath::kMma) return mfma_operand(g, is_a, ko);
  return g.op.A()->dtype == DataType::i8() ? int8_operand(g, is_a, ko)
                                           : ldmatrix_operand(g, is_a, ko);
}

}  // namespace tessel
