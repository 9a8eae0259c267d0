// The CPU's f16 <-> f32 conversions, asked for by its own target attribute (the build's flags need
// not include F16C) and chosen at run time.
#include "core/half_decode.h"

#include <Eigen/Core>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace tessel {

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
/// The first multiple of 8 of the n halves at `bits` as floats, eight at a time.
__attribute__((target("avx,f16c"))) int64_t halves_to_floats_f16c(const uint16_t* bits, float* out,
                                                                  int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bits + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  return i;
}

/// The floats at `in` as halves, eight at a time, up to the first eight with a NaN.
__attribute__((target("avx,f16c"))) int64_t floats_to_halves_f16c(const float* in, uint16_t* bits,
                                                                  int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)) != 0) break;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bits + i),
                     _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  return i;
}
#endif

}  // namespace

const float* half_values() {
  static const std::vector<float> table = [] {
    std::vector<float> t(1 << 16);
    for (uint32_t b = 0; b < t.size(); ++b)
      t[b] = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(static_cast<uint16_t>(b)));
    return t;
  }();
  return table.data();
}

int64_t halves_to_floats_in_hardware(const uint16_t* bits, float* out, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool f16c = __builtin_cpu_supports("f16c");
  if (f16c) return halves_to_floats_f16c(bits, out, n);
#endif
  (void)bits;
  (void)out;
  (void)n;
  return 0;
}

int64_t floats_to_halves_in_hardware(const float* in, uint16_t* bits, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool f16c = __builtin_cpu_supports("f16c");
  if (f16c) return floats_to_halves_f16c(in, bits, n);
#endif
  (void)in;
  (void)bits;
  (void)n;
  return 0;
}

}  // namespace tessel
