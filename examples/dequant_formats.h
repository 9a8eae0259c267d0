// The low-bit weight formats of the dequantising GEMM/GEMV family (examples/dequant_family.cpp):
// how one packed field of a uint8 byte becomes a number, written twice and independently — as IR
// expressions with shifts and masks (what the kernels compute) and as host code on bytes (what
// the Eigen references compute).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/expr.h"

namespace tessel {

/// A packed weight format. Fields are packed low bits first: field p of a byte is
/// (byte >> (p * bits)) & ((1 << bits) - 1).
enum class LowBit : uint8_t {
  kUInt4,  ///< unsigned 4-bit integer, 0..15
  kInt4,   ///< two's-complement 4-bit integer, -8..7
  kNF4,    ///< 4-bit NormalFloat: an index into the 16-entry QLoRA table (kNF4Table)
  kFP4,    ///< OCP FP4 E2M1: sign, 2 exponent bits (bias 1), 1 mantissa bit; 0 .. 6
  kInt2,   ///< two's-complement 2-bit integer, -2..1 (weights of the int8-activation GEMM)
};

/// Bits per field: 4, or 2 for kInt2.
int lowbit_bits(LowBit f);
/// Fields per storage byte: 8 / lowbit_bits(f).
inline int64_t lowbit_per_byte(LowBit f) { return 8 / lowbit_bits(f); }
/// True for the formats whose weights are multiplied by a per-group scale (kNF4, kFP4).
bool lowbit_scaled(LowBit f);
/// The format's short name as in the example names: "uint4", "int4", "nf4", "fp4", "int2".
std::string lowbit_name(LowBit f);

/// The NF4 code book of QLoRA (Dettmers et al., "QLoRA: Efficient Finetuning of Quantized LLMs",
/// 2023, Appendix E "NormalFloat 4-bit data type"): code i decodes to kNF4Table[i].
extern const std::array<double, 16> kNF4Table;

/// The IR that decodes field `pos` of the uint8 expression `byte` as an int32 (integer formats)
/// or a float32 (kFP4); kNF4 gives the int32 code, to be looked up in a table.
/// Requires: `byte` is uint8, `pos` an integer expression.
Expr decode_field(LowBit f, const Expr& byte, const Expr& pos);

/// Host decoding of field `pos` of `byte` (the reference's own code: plain C++ on bytes).
double host_decode(LowBit f, uint8_t byte, int pos);

}  // namespace tessel
