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
/// are summed in double and D is rounded to f32 once. Hardware sums with at least f32 precision
/// in an unspecified order, so it may differ in the last bits of D.
void execute_matrix(const IntrinsicInfo& info, WarpIntrinsicExec& exec);

}  // namespace tessel
