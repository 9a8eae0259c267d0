// Decoding halves (f16 bit patterns) to floats with the CPU's conversion instruction, where the
// CPU has one, for the paths that decode whole rows: T.gemm's operands and the tile level's rows.
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

}  // namespace tessel
