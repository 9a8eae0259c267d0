// Built-in layouts and fragments, each derived from its public specification: row/column-major,
// padded, TileLang's 32B/64B/128B shared-memory swizzles and the rule that picks one for a gemm
// operand, CuTe's Swizzle<B,M,S>, the mma.m16n8k16 and ldmatrix fragments (PTX ISA), the AMD MFMA
// fragments (CDNA3, wave64), and the paper's Fig. 6 construction. Plus the registry that the
// layout-spec parser and `tessel layout --list` read.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/layout.h"

namespace tessel {

// ---- Shared-memory layouts -------------------------------------------------------------------

/// `Layout([rows, cols], lambda i, j: i * (cols + pad) + j)`: rows padded by `pad` elements.
/// Requires rows, cols >= 1, pad >= 0.
Layout padded(int64_t rows, int64_t cols, int64_t pad);
/// TileLang's gemm padding rule: pad each row by 128 bits' worth of elements when the row is a
/// multiple of 256 bits, else no padding.
Layout gemm_padded(int64_t rows, int64_t cols, DataType dtype);

/// TileLang's shared-memory swizzles for a (rows x cols) tile of `dtype`, with vec = 128 / bits
/// elements per 16-byte chunk and nb = 2, 4, 8 chunks per swizzle row (32B, 64B, 128B). Element
/// (i, j): s = i % 8, ts = i // 8, c = (j // vec) % nb, tc = (j // vec) // nb; output
/// (tc, ts, j % vec + ((c ^ (s >> k)) + nb * s) * vec) with k = 2, 1, 0. Wide tiles are split into
/// column panels of nb * vec elements (the tc output). Equal to CuTe Swizzle<1|2|3, 4, 3> on the
/// byte addresses of each 8-row panel.
/// Requires: rows % 8 == 0, cols % (nb * vec) == 0, dtype of 8, 16, 32 or 64 bits (user error).
Layout swizzle_32b(int64_t rows, int64_t cols, DataType dtype);
Layout swizzle_64b(int64_t rows, int64_t cols, DataType dtype);
Layout swizzle_128b(int64_t rows, int64_t cols, DataType dtype);

/// CuTe's `Swizzle<B, M, S>` on a 1-D range [0, size):
///   x ^ ((x & (((1 << B) - 1) << (M + S))) >> S).
/// Requires: B >= 0, M >= 0, S >= B (so the map is an involution), size a multiple of
/// 2^(B+M+S) (user error otherwise).
Layout cute_swizzle(int B, int M, int S, int64_t size);

/// The swizzle TileLang picks for one gemm operand staged in shared memory on sm80 (mma.sync):
/// 128B when the contiguous row holds a multiple of 8 16-byte chunks (cols % (8 * vec) == 0),
/// else 64B when cols % (4 * vec) == 0, else `gemm_padded`; an 8-bit operand with K outer (not
/// `k_inner`) and 64-bit operands use `gemm_padded`. rows % 8 != 0 also falls back to padding.
/// `rows` is the strided dimension, `cols` the contiguous one.
Layout gemm_operand_layout(int64_t rows, int64_t cols, DataType dtype, bool k_inner = true);
/// Which rule `gemm_operand_layout` applied: "swizzle_128b", "swizzle_64b" or "padded".
std::string gemm_operand_layout_kind(int64_t rows, int64_t cols, DataType dtype,
                                     bool k_inner = true);

/// The AMD LDS swizzle for an MFMA operand whose reduction dimension is contiguous (CDNA2/3,
/// wave64, 32 banks x 4 B). The 16x16x16 MFMA loads lane l's 4 k-elements of row l % 16 with
/// one ds_read_b64, and ds_read_b64 serves 16 lanes per phase: 16 consecutive rows at the same
/// 8-byte granule. They are conflict-free exactly when their addresses fall in 16 different
/// 8-byte slots of a 128-byte bank line, so the XOR works on 8-byte granules, not on 16-byte
/// chunks (a layout that keeps 16-byte chunks puts all 16 addresses in the 8 slots of one parity:
/// at least 2-way). With vec = 64 / bits elements per granule, G = cols / vec granules per row,
/// per_phase = max(1, 16 / G) rows per 128-byte line and max_phase = min(16, G):
///   (i, j) -> (i, ((j / vec) ^ ((i / per_phase) % max_phase)) * vec + j % vec).
/// (Triton's AMD shared encoding for MFMA operands has the same vec / perPhase / maxPhase form.)
/// With 8-byte granules and 32-byte rows (G = 4, four rows a line) the rows of line L also trade
/// places, r -> 4 (r / 4) + ((r % 4) ^ L % 4), so that rows r and r + 4 (one 2-byte phase of an
/// MFMA accumulator store or of an M/N-contiguous operand read) use different banks.
/// Global -> LDS stores then move 8-byte granules (ds_write_b64, 16 lanes a phase, 16
/// consecutive granules of one line), also conflict-free. docs/layouts.md derives both.
/// `granule_bytes` 4 serves lanes that read 1, 2 or 4 bytes (a packed int4/int2 operand): the
/// same rule on 4-byte words (32 per line), vec = 32 / bits.
/// Requires: granule_bytes 4 or 8, bits divide it, cols % vec == 0, G a power of two or a
/// multiple of 16 (user error).
Layout swizzle_mfma(int64_t rows, int64_t cols, DataType dtype, int64_t granule_bytes = 8);

/// The shared layout of a gemm operand read by the MFMA path (AMD targets): swizzle_mfma for a
/// 16-bit element whichever dimension is contiguous (a tile two gemms read in different
/// orientations keeps one layout). Stored with M or N contiguous, the MFMA path reads 2-byte
/// elements, 16 lanes along row k and 16 along row k + 4, which the same XOR keeps in different
/// banks when a row holds 8 or more granules (64 bytes). An 8-bit operand with k contiguous
/// (`k_inner`, read by the int8 MFMA 4 or 8 bytes a lane) also gets swizzle_mfma with 8-byte
/// granules. Else the sm80 rule (gemm_operand_layout).
Layout mfma_operand_layout(int64_t rows, int64_t cols, DataType dtype, bool k_inner = true);
/// Which rule `mfma_operand_layout` applied: "swizzle_mfma" or gemm_operand_layout_kind's.
std::string mfma_operand_layout_kind(int64_t rows, int64_t cols, DataType dtype,
                                     bool k_inner = true);

// ---- NVIDIA warp fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16") --------------------

/// A operand, 16x16 (m x k), f16 or bf16: g = lane >> 2, t = lane % 4; element e = 0..7 of a
/// lane is row g + 8 * ((e >> 1) & 1), col 2t + (e & 1) + 8 * (e >> 2). Local index = e.
Fragment mma_m16n8k16_a(DataType dtype);
/// B operand, 16x8 (k x n), f16 or bf16: element e = 0..3 is k = 2t + (e & 1) + 8 * (e >> 1),
/// n = g.
Fragment mma_m16n8k16_b(DataType dtype);
/// C/D accumulator, 16x8, f32 (or f16): element e = 0..3 is row g + 8 * (e >> 1), col 2t + (e & 1).
/// Also the int32 accumulator of mma.m16n8k32 (the same table).
Fragment mma_m16n8k16_c(DataType dtype);
/// mma.m16n8k32 A operand, 16x32 (m x k), int8 (PTX ISA "Matrix Fragments for mma.m16n8k32",
/// .s8): element e = 0..15 of a lane is row g + 8 * ((e >> 2) & 1), col 4t + (e & 3) +
/// 16 * (e >> 3). Each 32-bit register holds four consecutive k.
Fragment mma_m16n8k32_a(DataType dtype);
/// mma.m16n8k32 B operand, 32x8 (k x n), int8: element e = 0..7 is k = 4t + (e & 3) +
/// 16 * (e >> 2), n = g.
Fragment mma_m16n8k32_b(DataType dtype);

/// `ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16` destination fragments: N 8x8 matrices of
/// 16-bit elements (8 rows of 16 bytes) stacked along rows, shape [8N, 128 / bits]. Lane l
/// receives row l / 4 of matrix m in register m, the 32 bits at byte 4 * (l % 4) of the row;
/// local index = m * (32 / bits) + element within the register. With `trans` (16-bit only), lane
/// l receives column l / 4, rows 2 * (l % 4) and 2 * (l % 4) + 1.
/// Requires: dtype of 8, 16 or 32 bits; trans only for 16 bits (user error otherwise).
Fragment ldmatrix_x1(DataType dtype, bool trans = false);
Fragment ldmatrix_x2(DataType dtype, bool trans = false);
Fragment ldmatrix_x4(DataType dtype, bool trans = false);

// ---- AMD matrix-core fragments (AMD Matrix Instruction Calculator, CDNA3, wave64) ------------

/// v_mfma_f32_16x16x16_f16/bf16. A 16x16 (m x k): lane m + 16 * (k / 4), element k % 4.
Fragment mfma_16x16x16_a(DataType dtype);
/// B 16x16 (k x n): lane n + 16 * (k / 4), element k % 4.
Fragment mfma_16x16x16_b(DataType dtype);
/// D 16x16 f32: register r of lane l holds D[4 * (l / 16) + r][l % 16]. Also the int32
/// accumulator of v_mfma_i32_16x16x16i8 / 16x16x32_i8 (the same table; core/families/mfma_i8.cpp).
Fragment mfma_16x16x16_d(DataType dtype);
/// v_mfma_f32_32x32x8_f16/bf16. A 32x8 (m x k): lane m + 32 * (k / 4), element k % 4.
Fragment mfma_32x32x8_a(DataType dtype);
/// B 8x32 (k x n): lane n + 32 * (k / 4), element k % 4.
Fragment mfma_32x32x8_b(DataType dtype);
/// D 32x32 f32: register r of lane l holds D[8 * (r / 4) + 4 * (l / 32) + r % 4][l % 32].
Fragment mfma_32x32x8_d(DataType dtype);

// ---- The paper's Fig. 6 construction ---------------------------------------------------------

/// Fig. 6 base layout: one warp holding an m16k16 f16 operand as ldmatrix.x4 / mma A leaves it
/// (equal to mma_m16n8k16_a(f16)).
Fragment fig6_base_layout();
/// base.repeat([2, 1]): one warp holding m32k16 (16 registers per thread).
Fragment fig6_warp_layout();
/// warp.repeat_on_thread([2, 1]).replicate(2).repeat([2, 1]): four warps (128 threads) holding
/// m128k16; warps 0-1 and 2-3 hold the same rows (replicate 2), 32 registers per thread.
Fragment fig6_block_layout();

// ---- Registry --------------------------------------------------------------------------------

/// One named layout: `name`, its argument list as users write it, and what it is.
struct NamedLayoutInfo {
  std::string name;
  std::string signature;    ///< e.g. "swizzle_128b(rows, cols, dtype)"
  std::string description;  ///< one line
};

/// Every named layout, in a stable order (for `tessel layout --list` and error messages).
std::vector<NamedLayoutInfo> named_layouts();

/// One argument of a named layout: an integer, a dtype, or a boolean (Python True/False), with
/// an optional keyword (`trans=True`).
struct NamedLayoutArg {
  std::string keyword;  ///< empty for positional arguments
  std::variant<int64_t, DataType, bool> value;
};

/// Builds the named layout. Throws UserError for an unknown name (listing the known ones), a wrong
/// argument count or type (quoting the signature), or arguments the layout rejects.
std::variant<Layout, Fragment> make_named_layout(const std::string& name,
                                                 const std::vector<NamedLayoutArg>& args);

}  // namespace tessel
