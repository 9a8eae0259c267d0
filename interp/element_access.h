// One element of a host tensor read or written in its storage format without the dtype switch of
// HostTensor::at / set for the common types (f32, f16, i32, u8, i8), with exactly their results.
#pragma once

#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/half_decode.h"
#include "interp/host_tensor.h"

namespace tessel::element_access {

enum class ElemKind : uint8_t { kF32, kF16, kI32, kU8, kI8, kOther };

inline ElemKind elem_kind(DataType t) {
  if (t == DataType::f32()) return ElemKind::kF32;
  if (t == DataType::f16()) return ElemKind::kF16;
  if (t == DataType::i32()) return ElemKind::kI32;
  if (t == DataType::u8()) return ElemKind::kU8;
  if (t == DataType::i8()) return ElemKind::kI8;
  return ElemKind::kOther;
}

/// Every f16 bit pattern's float value (core/half_decode.h's table, its address kept here so
/// that a lookup per element stays inline).
inline const float* f16_floats() {
  static const float* const table = half_values();
  return table;
}

/// out[k] = f16_floats()[bits[k]] for k < n, converted by the CPU (core/half_decode.h) where it
/// can, the tail it leaves through the table. The two give the same double for every pattern:
/// where they differ as floats (a signalling NaN, which the CPU quiets), widening to double
/// quiets the table's too. `floats` is scratch.
inline void f16_values_row(const uint16_t* bits, int64_t n, double* out,
                           std::vector<float>& floats) {
  if (static_cast<int64_t>(floats.size()) < n) floats.resize(static_cast<size_t>(n));
  const int64_t done = halves_to_floats_in_hardware(bits, floats.data(), n);
  for (int64_t k = 0; k < done; ++k) out[k] = floats[k];
  const float* values = f16_floats();
  for (int64_t k = done; k < n; ++k) out[k] = values[bits[k]];
}

/// HostTensor::at.
inline double load_elem(ElemKind k, const HostTensor& t, int64_t flat) {
  switch (k) {
    case ElemKind::kF32: {
      float v;
      std::memcpy(&v, t.data() + flat * 4, 4);
      return v;
    }
    case ElemKind::kF16: {
      uint16_t bits;
      std::memcpy(&bits, t.data() + flat * 2, 2);
      return f16_floats()[bits];
    }
    case ElemKind::kI32: {
      int32_t v;
      std::memcpy(&v, t.data() + flat * 4, 4);
      return v;
    }
    case ElemKind::kU8:
      return t.data()[flat];
    case ElemKind::kI8:
      return static_cast<int8_t>(t.data()[flat]);
    case ElemKind::kOther:
      break;
  }
  return t.at(flat);
}

/// `x` rounded to float with round-to-odd (core/dtype.cpp's guard against double rounding: a
/// later round-to-nearest-even to f16 then rounds `x` correctly). Moving a finite nonzero float
/// one step towards zero is its bit pattern minus one.
inline float float_round_to_odd(double x) {
  float narrowed = static_cast<float>(x);
  if (std::isnan(x) || static_cast<double>(narrowed) == x) return narrowed;
  uint32_t bits = std::bit_cast<uint32_t>(narrowed);
  if (std::fabs(static_cast<double>(narrowed)) > std::fabs(x)) --bits;
  return std::bit_cast<float>(bits | 1u);
}

/// round_f16 where its inline path does not apply: subnormals, overflow, inf and NaN
/// (element_access.cpp).
double round_f16_rare(double x);

/// round_to(f16, x): round to odd in float, then to nearest even at f16's precision. For normal
/// halves (|x| in [2^-14, 65504]) that is x rounded to nearest even at 11 significant bits
/// directly (round to odd at 24 >= 11 + 2 bits first does not change a round to nearest), done
/// on the double's bits: drop 42 significand bits, ties to even; the bounds are halves, so |x|
/// and its float round to odd lie on the same side of each. Subnormal halves round the float to
/// a multiple of 2^-24; values past 65504, inf and NaN go through Eigen::half as round_to does.
/// The bits of a double x with |x| in [2^-14, 65504] rounded to nearest even at 11 significant
/// bits, and whether |x| lies there: one unsigned range test of the bits, no data-dependent
/// branch (a dequantised weight is zero one time in sixteen).
struct F16Normal {
  uint64_t rounded;
  uint64_t normal;  ///< 1 or 0 (an integer, so that loops over rows of them vectorise)
};
inline F16Normal f16_normal(uint64_t u) {
  constexpr uint64_t kLo = std::bit_cast<uint64_t>(0x1p-14), kHi = std::bit_cast<uint64_t>(65504.0);
  const uint64_t a = u & ~(uint64_t{1} << 63);
  return {(u + (uint64_t{1} << 41) - 1 + ((u >> 42) & 1u)) & ~((uint64_t{1} << 42) - 1),
          static_cast<uint64_t>(a - kLo <= kHi - kLo)};
}

inline double round_f16(double x) {
  const uint64_t u = std::bit_cast<uint64_t>(x);
  const F16Normal n = f16_normal(u);
  if (!n.normal & (x != 0)) [[unlikely]]
    return round_f16_rare(x);
  return std::bit_cast<double>(n.normal ? n.rounded : u);  // zero keeps its bits
}

/// The f16 bits of a double's bits u that are a normal half once rounded (n = f16_normal(u)),
/// or of a zero (n.normal = 0: the sign alone), without a branch.
inline uint16_t f16_normal_bits(uint64_t u, const F16Normal& n) {
  const uint64_t sign = (u >> 48) & 0x8000;
  const uint64_t exponent = ((n.rounded >> 52) & 0x7FF) - 1023 + 15;
  const uint64_t normal_bits = sign | (exponent << 10) | ((n.rounded >> 42) & 0x3FF);
  const uint64_t keep = n.normal - 1;  // all ones when not normal
  return static_cast<uint16_t>((normal_bits & ~keep) | (sign & keep));
}

/// The f16 bit pattern of round_f16(x) (what HostTensor::set stores): normal halves (a normal
/// x rounds to one) and zeros from the rounded double's bits, the rest through Eigen::half
/// (exact: the value is a half).
inline uint16_t f16_bits(double x) {
  const uint64_t u = std::bit_cast<uint64_t>(x);
  const F16Normal n = f16_normal(u);
  if (!n.normal & (x != 0)) [[unlikely]]
    return Eigen::numext::bit_cast<uint16_t>(Eigen::half(static_cast<float>(round_f16_rare(x))));
  return f16_normal_bits(u, n);
}

/// 1 when the double with bits u (f16_normal(u) = r) is neither a normal half once rounded nor a
/// zero: the values the row forms below leave to round_f16 / f16_bits.
inline uint64_t f16_rare(uint64_t u, const F16Normal& r) {
  return (r.normal ^ 1) & static_cast<uint64_t>((u << 1) != 0);
}

/// round_f16 over a row in place. One pass rounds the normal halves and keeps every other value
/// as it is (no data-dependent branch, so it vectorises); only when the row held a subnormal, an
/// overflow, an inf or a NaN does a second pass give those round_f16, which leaves the values
/// the first pass rounded as they are (a normal half rounds to itself).
inline void round_f16_row(double* v, int64_t n) {
  uint64_t rare = 0;
  for (int64_t k = 0; k < n; ++k) {
    uint64_t u;
    std::memcpy(&u, v + k, 8);
    const F16Normal r = f16_normal(u);
    rare |= f16_rare(u, r);
    const uint64_t keep = r.normal - 1;  // all ones when not normal
    u = (r.rounded & ~keep) | (u & keep);
    std::memcpy(v + k, &u, 8);
  }
  if (rare) [[unlikely]] {
    for (int64_t k = 0; k < n; ++k) v[k] = round_f16(v[k]);
  }
}

/// The f16 bit patterns of a row of halves (f16_bits of each) into bits[0, n):
/// one pass without a data-dependent branch for normal halves and zeros, and f16_bits itself
/// for every element of a row that holds anything else.
inline void f16_bits_row(const double* v, int64_t n, uint16_t* bits) {
  uint64_t rare = 0;
  for (int64_t k = 0; k < n; ++k) {
    uint64_t u;
    std::memcpy(&u, v + k, 8);
    const F16Normal r = f16_normal(u);
    rare |= f16_rare(u, r);
    bits[k] = f16_normal_bits(u, r);
  }
  if (rare) [[unlikely]] {
    for (int64_t k = 0; k < n; ++k) bits[k] = f16_bits(v[k]);
  }
}

/// HostTensor::set.
inline void store_elem(ElemKind k, HostTensor& t, int64_t flat, double value) {
  if (k == ElemKind::kF32) {
    float v = static_cast<float>(value);
    std::memcpy(t.data() + flat * 4, &v, 4);
    return;
  }
  if (k == ElemKind::kF16) {
    const uint16_t bits = f16_bits(value);
    std::memcpy(t.data() + flat * 2, &bits, 2);
    return;
  }
  t.set(flat, value);
}

}  // namespace tessel::element_access
