// Converting between halves (f16 bit patterns) and floats with the CPU's conversion instructions,
// where the CPU has them, for the paths that convert whole rows: T.gemm's operands, the tile
// level's rows and T.copy from a float accumulator into an f16 tensor.
#pragma once

#include <cstdint>

namespace tessel {

/// Every f16 bit pattern's float value (256 KiB, built once, by Eigen::half): decoding a half is
/// a lookup.
const float* half_values();

/// Converts a prefix of the n halves at `bits` into out[0, returned) with the CPU's F16C
/// conversion (a multiple of 8; none on a CPU without F16C). The values are exact, as
/// Eigen::half's are, for every half but a NaN, which stays a NaN (its payload may change).
int64_t halves_to_floats_in_hardware(const uint16_t* bits, float* out, int64_t n);

/// Rounds a prefix of the n floats at `in` to halves (to nearest, ties to even) into
/// bits[0, returned) with the CPU's F16C conversion, eight at a time up to the first eight that
/// hold a NaN (whose payload the CPU keeps where Eigen::half makes it 0x7E00); none on a CPU
/// without F16C. Every half is Eigen::half's of the same float.
int64_t floats_to_halves_in_hardware(const float* in, uint16_t* bits, int64_t n);

}  // namespace tessel
