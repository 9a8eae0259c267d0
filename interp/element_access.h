// One element of a host tensor read or written in its storage format without the dtype switch of
// HostTensor::at / set for the common types (f32, f16, i32, u8, i8), with exactly their results.
#pragma once

#include <Eigen/Core>
#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>
#endif
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

/// round_f16 where its inline path does not apply: past 65504, inf and NaN (element_access.cpp).
double round_f16_rare(double x);

/// round_to(f16, x): round to odd in float, then to nearest even at f16's precision, computed
/// from the double's bits without a data-dependent branch except for |x| > 65504, inf and NaN
/// (which go through Eigen::half as round_to does):
/// - normal halves (|x| in [2^-14, 65504]): round to odd at 24 >= 11 + 2 bits first does not
///   change a round to nearest, so x rounds to nearest even at 11 significant bits directly:
///   drop 42 significand bits, ties to even. The bounds are halves, so |x| and its float round
///   to odd lie on the same side of each.
/// - below 2^-14 (subnormal halves and zeros): to the nearest even multiple of 2^-24, the
///   spacing of subnormal halves, by adding 2^28 (in whose binade the ulp is 2^-24) and
///   subtracting it again; x's sign is kept, also on a zero. 2^-14 - 2^-25 and up round to 2^-14.
/// The parts of a double x with bits u for rounding: `rounded` the bits of its round to f16 as a
/// double and `half` its f16 bits where x is not rare, `rare` 1 (an integer, so that loops over
/// rows of them vectorise) where |x| > 65504 or x is NaN.
struct F16Rounding {
  uint64_t rounded;
  uint16_t half;
  uint64_t rare;
};
inline F16Rounding f16_rounding(uint64_t u) {
  constexpr uint64_t kSign = uint64_t{1} << 63;
  constexpr uint64_t kLo = std::bit_cast<uint64_t>(0x1p-14), kHi = std::bit_cast<uint64_t>(65504.0);
  constexpr double kShift = 0x1p28;  // 2^28 + |x| has ulp 2^-24 for |x| < 2^-14
  const uint64_t a = u & ~kSign, sign = u & kSign;
  // Normal: round to nearest even at bit 42 of the significand.
  const uint64_t normal_rounded =
      (u + (uint64_t{1} << 41) - 1 + ((u >> 42) & 1u)) & ~((uint64_t{1} << 42) - 1);
  const uint64_t exponent = ((normal_rounded >> 52) & 0x7FF) - 1023 + 15;
  const uint64_t normal_half = (exponent << 10) | ((normal_rounded >> 42) & 0x3FF);
  // Small: |x| in units of 2^-24, rounded (0 to 1024), and that many units as a double.
  const double shifted = std::bit_cast<double>(a) + kShift;
  const uint64_t units = std::bit_cast<uint64_t>(shifted) - std::bit_cast<uint64_t>(kShift);
  const uint64_t small_rounded = std::bit_cast<uint64_t>(shifted - kShift) | sign;
  const uint64_t small = uint64_t{0} - static_cast<uint64_t>(a < kLo);  // all ones or zero
  const uint64_t sign_half = sign >> 48;
  return {(small_rounded & small) | (normal_rounded & ~small),
          static_cast<uint16_t>(sign_half | (units & small) | (normal_half & ~small)),
          static_cast<uint64_t>(a > kHi)};
}

inline double round_f16(double x) {
  const F16Rounding r = f16_rounding(std::bit_cast<uint64_t>(x));
  if (r.rare) [[unlikely]]
    return round_f16_rare(x);
  return std::bit_cast<double>(r.rounded);
}

/// The f16 bit pattern of round_f16(x) (what HostTensor::set stores); the rare values through
/// Eigen::half (exact: the value is a half).
inline uint16_t f16_bits(double x) {
  const F16Rounding r = f16_rounding(std::bit_cast<uint64_t>(x));
  if (r.rare) [[unlikely]]
    return Eigen::numext::bit_cast<uint16_t>(Eigen::half(static_cast<float>(round_f16_rare(x))));
  return r.half;
}

/// How many elements the row forms below round in one branch-free pass before they look for a
/// rare value: a rare one sends only its own stretch through round_f16 / f16_bits.
constexpr int64_t kF16Stretch = 64;

/// Doubles the CPU rounds to halves at a time (exact_floats_to_halves).
constexpr int64_t kF16Lanes = 16;

/// Where the build has AVX-512 (TESSEL_SIMD): kF16Lanes doubles at v that are each exactly a
/// float rounded to halves by the CPU (to nearest, ties to even: Eigen::half's rounding of the
/// float, which is round_to's of a float), into rounded[0, 16) as doubles or bits[0, 16) as f16
/// bits (whichever is not null); false, writing nothing, when one is not a float or is a NaN.
inline bool exact_floats_to_halves(const double* v, double* rounded, uint16_t* bits) {
#if defined(__AVX512F__) && defined(__AVX512DQ__)
  const __m512d x0 = _mm512_loadu_pd(v), x1 = _mm512_loadu_pd(v + 8);
  const __m256 f0 = _mm512_cvtpd_ps(x0), f1 = _mm512_cvtpd_ps(x1);
  if ((_mm512_cmp_pd_mask(_mm512_cvtps_pd(f0), x0, _CMP_EQ_OQ) &
       _mm512_cmp_pd_mask(_mm512_cvtps_pd(f1), x1, _CMP_EQ_OQ)) != 0xFF)
    return false;
  const __m512 f = _mm512_insertf32x8(_mm512_castps256_ps512(f0), f1, 1);
  const __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (bits) _mm256_storeu_si256(reinterpret_cast<__m256i*>(bits), h);
  if (rounded) {
    const __m512 back = _mm512_cvtph_ps(h);
    _mm512_storeu_pd(rounded, _mm512_cvtps_pd(_mm512_castps512_ps256(back)));
    _mm512_storeu_pd(rounded + 8, _mm512_cvtps_pd(_mm512_extractf32x8_ps(back, 1)));
  }
  return true;
#else
  (void)v;
  (void)rounded;
  (void)bits;
  return false;
#endif
}

/// round_f16 of v[0, n) into rounded[0, n) (which may be v) or f16_bits into bits[0, n),
/// whichever is not null: kF16Lanes at a time by the CPU where they are exact floats, otherwise in
/// stretches of kF16Stretch in one pass without a data-dependent branch (it vectorises), each
/// stretch again through round_f16 / f16_bits when it held a value past 65504 or a NaN.
inline void f16_round_row(const double* v, int64_t n, double* rounded, uint16_t* bits) {
  int64_t lo = 0;
  while (lo < n) {
    if (lo + kF16Lanes <= n && exact_floats_to_halves(v + lo, rounded ? rounded + lo : nullptr,
                                                      bits ? bits + lo : nullptr)) {
      lo += kF16Lanes;
      continue;
    }
    const int64_t hi = std::min(n, lo + kF16Stretch);
    uint64_t rare = 0;
    for (int64_t k = lo; k < hi; ++k) {
      uint64_t u;
      std::memcpy(&u, v + k, 8);
      const F16Rounding r = f16_rounding(u);
      rare |= r.rare;
      if (bits) bits[k] = r.half;
      if (rounded) {
        const uint64_t keep = uint64_t{0} - r.rare;  // all ones where rare: kept for below
        u = (u & keep) | (r.rounded & ~keep);
        std::memcpy(rounded + k, &u, 8);
      }
    }
    if (rare) [[unlikely]] {
      for (int64_t k = lo; k < hi; ++k) {
        if (bits) bits[k] = f16_bits(v[k]);
        if (rounded) rounded[k] = round_f16(rounded[k]);  // a rounded value rounds to itself
      }
    }
    lo = hi;
  }
}

/// round_f16 over a row in place.
inline void round_f16_row(double* v, int64_t n) { f16_round_row(v, n, v, nullptr); }

/// The f16 bit patterns of a row (f16_bits of each) into bits[0, n).
inline void f16_bits_row(const double* v, int64_t n, uint16_t* bits) {
  f16_round_row(v, n, nullptr, bits);
}

/// The values an i8, u8 or i32 element holds, [lo, hi]; false for the other kinds.
inline bool int_range(ElemKind k, int64_t& lo, int64_t& hi) {
  switch (k) {
    case ElemKind::kI8:
      lo = -128, hi = 127;
      return true;
    case ElemKind::kU8:
      lo = 0, hi = 255;
      return true;
    case ElemKind::kI32:
      lo = INT32_MIN, hi = INT32_MAX;
      return true;
    default:
      return false;
  }
}

/// values[0, n), integers within int_range(k), at elements first .. first + n - 1 of an i8, u8
/// or i32 tensor's bytes (an i8 as its two's complement byte), the kind tested once.
template <typename T>
inline void store_int_values(ElemKind k, uint8_t* data, int64_t first, const T* values, int64_t n) {
  if (k == ElemKind::kI32) {
    for (int64_t i = 0; i < n; ++i) {
      const int32_t x = static_cast<int32_t>(static_cast<int64_t>(values[i]));
      std::memcpy(data + (first + i) * 4, &x, 4);
    }
  } else {
    for (int64_t i = 0; i < n; ++i)
      data[first + i] = static_cast<uint8_t>(static_cast<int64_t>(values[i]));
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
  // An integer that the integer dtype holds is stored as it is (what encode's wrapping gives
  // it); anything else (a fraction, out of range, NaN) takes encode's path.
  int64_t lo, hi;
  if (int_range(k, lo, hi) && value >= static_cast<double>(lo) &&
      value <= static_cast<double>(hi) && value == std::trunc(value)) {
    store_int_values(k, t.data(), flat, &value, 1);
    return;
  }
  t.set(flat, value);
}

/// values[i] at elements first .. first + n - 1 of an i8, u8 or i32 tensor (kind k) when every
/// value is an integer the dtype holds, as store_elem stores each: true. False, having stored
/// nothing, when one is not (a fraction, out of range, NaN) or the kind is another. The check is
/// one pass the compiler vectorises, then one conversion pass.
inline bool store_int_row(ElemKind k, uint8_t* data, int64_t first, const double* values,
                          int64_t n) {
  int64_t lo, hi;
  if (!int_range(k, lo, hi)) return false;
  const double dlo = static_cast<double>(lo), dhi = static_cast<double>(hi);
  uint64_t inexact = 0;
  for (int64_t i = 0; i < n; ++i) {
    // v clamped into the range (NaN to lo) converts without overflow; it is v itself exactly
    // when v is an integer in the range.
    const double v = values[i], low = v >= dlo ? v : dlo, c = low <= dhi ? low : dhi;
    inexact |= static_cast<uint64_t>(static_cast<double>(static_cast<int64_t>(c)) != v);
  }
  if (inexact) return false;
  store_int_values(k, data, first, values, n);
  return true;
}

/// The same for integer values: true when every one lies in the dtype's range.
inline bool store_int_row(ElemKind k, uint8_t* data, int64_t first, const int64_t* values,
                          int64_t n) {
  int64_t lo, hi;
  if (!int_range(k, lo, hi)) return false;
  uint64_t outside = 0;
  for (int64_t i = 0; i < n; ++i)
    outside |= static_cast<uint64_t>((values[i] < lo) | (values[i] > hi));
  if (outside) return false;
  store_int_values(k, data, first, values, n);
  return true;
}

}  // namespace tessel::element_access
