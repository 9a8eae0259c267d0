// One element of a host tensor read or written in its storage format without the dtype switch of
// HostTensor::at / set for the common types (f32, f16, i32, u8, i8), with exactly their results.
#pragma once

#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

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

/// Every f16 bit pattern's float value (256 KiB, built once): decoding an f16 is a lookup.
inline const float* f16_floats() {
  static const std::vector<float> table = [] {
    std::vector<float> v(1 << 16);
    for (uint32_t b = 0; b < v.size(); ++b)
      v[b] = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(static_cast<uint16_t>(b)));
    return v;
  }();
  return table.data();
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
  bool normal;
};
inline F16Normal f16_normal(uint64_t u) {
  constexpr uint64_t kLo = std::bit_cast<uint64_t>(0x1p-14), kHi = std::bit_cast<uint64_t>(65504.0);
  const uint64_t a = u & ~(uint64_t{1} << 63);
  return {(u + (uint64_t{1} << 41) - 1 + ((u >> 42) & 1u)) & ~((uint64_t{1} << 42) - 1),
          a - kLo <= kHi - kLo};
}

inline double round_f16(double x) {
  const uint64_t u = std::bit_cast<uint64_t>(x);
  const F16Normal n = f16_normal(u);
  if (!n.normal & (x != 0)) [[unlikely]]
    return round_f16_rare(x);
  return std::bit_cast<double>(n.normal ? n.rounded : u);  // zero keeps its bits
}

/// The f16 bit pattern of round_f16(x) (what HostTensor::set stores): normal halves (a normal
/// x rounds to one) and zeros from the rounded double's bits, the rest through Eigen::half
/// (exact: the value is a half).
inline uint16_t f16_bits(double x) {
  const uint64_t u = std::bit_cast<uint64_t>(x);
  const F16Normal n = f16_normal(u);
  if (!n.normal & (x != 0)) [[unlikely]]
    return Eigen::numext::bit_cast<uint16_t>(Eigen::half(static_cast<float>(round_f16_rare(x))));
  const uint16_t sign = static_cast<uint16_t>((u >> 48) & 0x8000);
  const uint64_t exponent = ((n.rounded >> 52) & 0x7FF) - 1023 + 15;
  const uint16_t bits =
      static_cast<uint16_t>(sign | (exponent << 10) | ((n.rounded >> 42) & 0x3FF));
  return n.normal ? bits : sign;
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
