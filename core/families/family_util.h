// What the instruction families' homes (core/families/*.cpp) share: register-fragment lookup
// tables for execution, and the pieces of generated helper text.
#pragma once

#include <array>
#include <bit>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/instruction_family.h"

namespace tessel {

/// One register operand's fragment as a lookup table: matrix element (row, col) -> (lane,
/// register element).
struct FragmentTable {
  int64_t rows = 0, cols = 0;
  std::vector<std::pair<int, int>> cells;  ///< [row * cols + col]
  std::pair<int, int> at(int64_t row, int64_t col) const { return cells[row * cols + col]; }
};

/// The table of register operand `operand` of `info`, built once for the whole intrinsic table.
/// Requires: the operand has a fragment layout.
const FragmentTable& fragment_table(const IntrinsicInfo& info, size_t operand);

/// 32-bit registers an operand of `elements` values of `t` occupies.
int regs32(DataType t, int elements);

/// Inline-assembly operand placeholders "{%first, ..., %first+count-1}".
std::string asm_operands(int first, int count);

/// User error: `info` has no spelling in `lang` (an NVIDIA instruction on HIP or the reverse).
[[noreturn]] void no_spelling(const IntrinsicInfo& info, Language lang);

/// `tessel_<name>(args...);`, recording the helper in `used`: the call of an instruction whose
/// helper() takes its operands in order.
std::string helper_call(const IntrinsicInfo& info, const std::vector<std::string>& args,
                        std::set<std::string>& used);

/// Executes D = A * B + C of a matrix instruction (mma.sync, MFMA) whose operands D, A, B, C are
/// register fragments: inputs are exact, every product is exact in double, the k products and C
/// are summed in double and D is rounded to f32 once (an int32 D: the exact sum, wrapped to 32
/// bits). Hardware sums with at least f32 precision in an unspecified order, so a float D may
/// differ in its last bits.
void execute_matrix(const IntrinsicInfo& info, WarpIntrinsicExec& exec);

/// One shared-memory operand of wgmma.mma_async as its 64-bit matrix descriptor describes it
/// (PTX ISA 9.7.15.5.1.2, "Shared Memory Matrix Layout" and "Matrix Descriptor Format"). Element
/// (mn, k) — mn the row of A (M) or the column of B (N) — lies, in the canonical layouts
/// (T = 16 bytes / element size, W = the swizzle width in bytes), at byte
///   K-major,  no swizzle: (mn % 8) 16 + (mn / 8) SBO + (k % T) size + (k / T) LBO
///   K-major,  W swizzle:  (mn % 8) W  + (mn / 8) SBO + k size   (LBO unused; k size < W)
///   MN-major, no swizzle: (mn % T) size + (mn / T) SBO + (k % 8) 16 + (k / 8) LBO
///   MN-major, W swizzle:  (mn % (W / size)) size + (mn / (W / size)) LBO + (k % 8) W
///                         + (k / 8) SBO
/// from the start address, and the swizzle (CuTe Swizzle<log2(W / 16), 4, 3>) then XORs address
/// bits [4, 4 + log2(W / 16)) with bits [7, 7 + log2(W / 16)) of the whole shared address. Tessel
/// aligns every shared buffer that a wgmma reads to 1024 bytes, so offsets from the buffer's
/// start swizzle as the hardware's addresses do.
struct WgmmaOperandDesc {
  int swizzle = 0;        ///< bytes: 0 (none), 32, 64 or 128
  int64_t lbo = 0;        ///< leading dimension byte offset
  int64_t sbo = 0;        ///< stride dimension byte offset
  bool mn_major = false;  ///< consecutive elements run along M (A) or N (B), not K
};

/// The byte offset, from the start of a 1024-byte-aligned shared buffer, of element (mn, k) of a
/// wgmma operand whose descriptor's start address is `start` bytes into the buffer. `I` is
/// int64_t (the simulator) or Expr (verify/wgmma_proofs.cpp proves it equal to the layout).
template <class I>
I wgmma_element_byte(const WgmmaOperandDesc& d, int64_t elem_bytes, I start, I mn, I k) {
  const int64_t t = 16 / elem_bytes;  // elements per 16 bytes
  const int64_t w = d.swizzle;
  I off = I(0);
  if (!d.mn_major) {
    off = w == 0 ? (mn % I(8)) * I(16) + (mn / I(8)) * I(d.sbo) + (k % I(t)) * I(elem_bytes) +
                       (k / I(t)) * I(d.lbo)
                 : (mn % I(8)) * I(w) + (mn / I(8)) * I(d.sbo) + k * I(elem_bytes);
  } else if (w == 0) {
    off = (mn % I(t)) * I(elem_bytes) + (mn / I(t)) * I(d.sbo) + (k % I(8)) * I(16) +
          (k / I(8)) * I(d.lbo);
  } else {
    const int64_t e = w / elem_bytes;  // elements per swizzle row
    off = (mn % I(e)) * I(elem_bytes) + (mn / I(e)) * I(d.lbo) + (k % I(8)) * I(w) +
          (k / I(8)) * I(d.sbo);
  }
  const I a = start + off;
  const int64_t bits = w == 128 ? 7 : w == 64 ? 3 : w == 32 ? 1 : 0;  // Swizzle<B,4,3> mask
  if (bits == 0) return a;
  return a ^ (((a >> I(7)) & I(bits)) << I(4));
}

/// The descriptor's swizzle-mode field (bits 62-63): 0 none, 1 128B, 2 64B, 3 32B.
int wgmma_swizzle_code(int swizzle_bytes);

}  // namespace tessel
