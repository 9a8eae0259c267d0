// How one T.gemm runs on a target: the instruction its warps use (mma.sync m16n8k16, MFMA
// 16x16x16, or scalar multiply-adds), how the block's warps split the C tile (TileLang's
// GemmWarpPolicy), and the register fragments that follow from both. Layout inference
// (op_gemm_layout.cpp) and lowering (op_gemm_lower.cpp) read the same plan, so the registers
// the lowering addresses are the ones inference recorded.
#pragma once

#include <cstdint>
#include <string>

#include "core/intrinsics.h"
#include "core/layout.h"
#include "core/op_gemm.h"
#include "core/target.h"

namespace tessel {

/// How the warps compute their part of C.
enum class GemmPath : uint8_t {
  kMma,    ///< sm80/sm90: ldmatrix + mma.sync.m16n8k16 (f16/bf16 in, f32 accumulate)
  kMfma,   ///< gfx90a/gfx942: plain shared loads + v_mfma_f32_16x16x16 (wave64)
  kSimt,   ///< anything else: every thread computes its C elements with scalar multiply-adds
  kWgmma,  ///< sm90: wgmma.mma_async m64nNk16 per warpgroup, both operands in shared memory
};
const char* gemm_path_name(GemmPath path);  ///< "mma", "mfma", "simt", "wgmma"

/// An m_warps x n_warps grid of warps over the C tile. Warp w = wm * n_warps + wn owns rows
/// [wm * warp_m, (wm + 1) * warp_m) and columns [wn * warp_n, (wn + 1) * warp_n).
struct WarpPartition {
  int m_warps = 1;
  int n_warps = 1;
  int64_t warp_m = 0;
  int64_t warp_n = 0;
};

/// The warp grid of an M x N tile for `threads` threads of `warp_size` lanes whose instruction
/// computes inst_m x inst_n: FullRow puts every warp along M, FullCol along N, Square picks the
/// split whose warp tile is closest to square (smallest longer/shorter side ratio; ties go to
/// the split with fewer warps along M), among those where warp_m is a multiple of inst_m and
/// warp_n of inst_n. `who` names the kernel and operator in messages, `instruction` the
/// instruction ("mma_m16n8k16_f16").
/// User error when threads is not a positive multiple of warp_size, or when no split fits (the
/// message names M, N, the threads, the policy and a thread count or policy that would fit).
WarpPartition compute_warp_partition(const std::string& who, int64_t M, int64_t N, int threads,
                                     int warp_size, GemmWarpPolicy policy, int64_t inst_m,
                                     int64_t inst_n, const std::string& instruction);

/// A shared operand of wgmma as its matrix descriptor reads it (core/families/family_util.h):
/// the tile is stored `rows` x `cols` (A (M, K), B (K, N), or transposed), K-major when its
/// columns run along K, else MN-major, in panels of `swizzle` bytes along its columns.
struct WgmmaOperand {
  bool mn_major = false;
  int swizzle = 0;             ///< bytes: 32, 64 or 128
  int64_t lbo = 0, sbo = 0;    ///< the descriptor's byte offsets
  int64_t rows = 0, cols = 0;  ///< the tile's shape as stored
};

/// The shared layout that `o`'s descriptor addresses: element (r, c) of a rows x cols tile of
/// `dtype` at panel c / P (P = swizzle / element size columns, panels rows * swizzle bytes
/// apart), row r of the panel at r * swizzle bytes, column c % P in it, the 16-byte chunk of
/// each row XOR-swizzled with bits 7.. of the byte offset (CuTe Swizzle<log2(swizzle/16),4,3>).
Layout wgmma_operand_layout(const WgmmaOperand& o, DataType dtype);

/// Everything inference and lowering of one gemm agree on.
struct GemmPlan {
  GemmPath path = GemmPath::kSimt;
  int64_t M = 0, N = 0, K = 0;  ///< C is M x N, the reduction is K
  int threads = 0;
  int warp_size = 32;
  /// kMma / kMfma: the matrix instruction and its shape; the warp grid.
  IntrinsicId instruction{};
  int64_t inst_m = 0, inst_n = 0, inst_k = 0;
  WarpPartition partition;
  /// kSimt: why no matrix instruction applies ("float32 inputs", "N = 12 is not a multiple of 8").
  std::string why_simt;
  /// kWgmma: the warpgroups (each takes M / warpgroups rows, tiles_m() wgmmas of 64 rows per k
  /// step, N columns each) and the two shared operands' descriptors. On a target with wgmma
  /// that does not use it, why not ("A is a fragment", "N = 512 is over 256").
  int warpgroups = 0;
  WgmmaOperand wgmma_a, wgmma_b;
  std::string why_not_wgmma;

  /// Instruction tiles per warp (kWgmma: per warpgroup).
  int64_t tiles_m() const { return partition.warp_m / inst_m; }
  int64_t tiles_n() const { return partition.warp_n / inst_n; }
  int64_t k_steps() const { return K / inst_k; }
};

/// The plan of `op` in kernel `kernel` on `target` with `threads` threads per block. User error
/// (naming the kernel, the gemm and the fix) for tiles of symbolic size, an accumulator outside
/// a fragment, a fragment operand (rs/sr/rr) on the scalar path, and impossible warp splits.
GemmPlan plan_gemm(const GemmOp& op, const std::string& kernel, const Target& target, int threads);

/// The accumulator fragment of C: on the matrix paths the instruction's accumulator fragment
/// repeated over the warp tile on registers (instruction tile (ti, tj) of a warp at registers
/// (ti * tiles_n + tj) * regs + [0, regs)) and over the warps on threads (warp wm * n_warps + wn);
/// on the scalar path element e = i * N + j of C (row-major) at thread e % threads, register
/// e / threads.
Fragment gemm_c_fragment(const GemmPlan& plan);
/// The fragment of an A operand held in registers (rs, rr), stored (M, K) or with `transposed`
/// (K, M): the instruction's A fragment repeated over the warp's rows and the whole K on
/// registers (tile (ti, tk) at registers (ti * k_steps + tk) * regs, or (tk * tiles_m + ti) * regs
/// when transposed), replicated over the n_warps warps of a warp row, repeated over the warp rows
/// on threads. Requires: a matrix path and f16/bf16 `dtype`.
Fragment gemm_a_fragment(const GemmPlan& plan, bool transposed, DataType dtype);
/// The B operand in registers (sr, rr), stored (K, N) or with `transposed` (N, K): tile (tk, tj)
/// at registers (tk * tiles_n + tj) * regs, or (tj * k_steps + tk) * regs when transposed;
/// repeated over the warp columns on threads and replicated over the m_warps warp rows.
Fragment gemm_b_fragment(const GemmPlan& plan, bool transposed, DataType dtype);

/// The same fragment with its two dimensions swapped: element (j, i) of the result is element
/// (i, j) of `frag`. Requires: a 2-d fragment.
Fragment transpose_fragment(const Fragment& frag);

}  // namespace tessel
