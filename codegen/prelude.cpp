// The helpers generated code calls: one device function per instruction of the intrinsic table
// that the kernel uses, its inline PTX (NVIDIA) or amdgcn builtin (AMD) built from the table's
// spelling and operand counts, plus shuffles, barriers, floor division and atomics.
#include <sstream>

#include "codegen/dialect.h"
#include "core/error.h"
#include "core/instruction_family.h"

namespace tessel::codegen {

namespace {

std::string helper(Language lang, const IntrinsicInfo& info) {
  internal_check(info.home != nullptr, "an intrinsic without its family's home");
  return info.home->helper(lang, info);
}

const char* kCudaHeader = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

// Python floor division and modulo (used where an operand may be negative).
__device__ __forceinline__ long long tessel_floordiv(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ long long tessel_floormod(long long a, long long b) {
  long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Integer min, max and abs, each operand evaluated once and on every lane: a compare-and-select
// (`b < a ? b : a`) would evaluate one operand twice, the second time on only the lanes the
// compare picks, so a shuffle in it would run on part of the warp and read garbage.
template <typename T> __device__ __forceinline__ T tessel_min(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T tessel_max(T a, T b) { return a < b ? b : a; }
template <typename T> __device__ __forceinline__ T tessel_abs(T a) { return a < 0 ? -a : a; }

// T.exp2 on f32: the MUFU.EX2 approximation exp2f itself is built on, without exp2f's rescaling
// for results below 2^-126 (those flush to 0, as in TileLang's fast-math build).
__device__ __forceinline__ float tessel_exp2f(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
)";

const char* kCudaAtomics = R"(
// Atomics the CUDA runtime lacks, as compare-and-swap loops on the element's bits.
template <typename T, typename Bits, typename F>
__device__ T tessel_atomic_cas(T* p, T v, F op) {
  Bits* word = reinterpret_cast<Bits*>(p);
  Bits old = *word, assumed;
  do {
    assumed = old;
    T cur = *reinterpret_cast<T*>(&assumed);
    T next = op(cur, v);
    old = atomicCAS(word, assumed, *reinterpret_cast<Bits*>(&next));
  } while (old != assumed);
  return *reinterpret_cast<T*>(&old);
}
template <typename T> __device__ T tessel_atomic_add(T* p, T v);
template <> __device__ long long tessel_atomic_add(long long* p, long long v) {
  return static_cast<long long>(atomicAdd(reinterpret_cast<unsigned long long*>(p),
                                          static_cast<unsigned long long>(v)));
}
template <typename T> __device__ T tessel_atomic_max(T* p, T v) {
  auto op = [](T a, T b) { return a < b ? b : a; };
  if constexpr (sizeof(T) == 2) return tessel_atomic_cas<T, unsigned short>(p, v, op);
  else if constexpr (sizeof(T) == 4) return tessel_atomic_cas<T, unsigned>(p, v, op);
  else return tessel_atomic_cas<T, unsigned long long>(p, v, op);
}
template <typename T> __device__ T tessel_atomic_min(T* p, T v) {
  auto op = [](T a, T b) { return b < a ? b : a; };
  if constexpr (sizeof(T) == 2) return tessel_atomic_cas<T, unsigned short>(p, v, op);
  else if constexpr (sizeof(T) == 4) return tessel_atomic_cas<T, unsigned>(p, v, op);
  else return tessel_atomic_cas<T, unsigned long long>(p, v, op);
}
)";

const char* kHipHeader = R"(// Device-only HIP: no runtime headers, amdgcn builtins only.
#define TESSEL_DEVICE __attribute__((device)) __attribute__((always_inline)) inline

TESSEL_DEVICE void tessel_syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
TESSEL_DEVICE long long tessel_floordiv(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
TESSEL_DEVICE long long tessel_floormod(long long a, long long b) {
  long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// Integer min, max and abs, each operand evaluated once and on every lane (see the CUDA prelude).
template <typename T> TESSEL_DEVICE T tessel_min(T a, T b) { return b < a ? b : a; }
template <typename T> TESSEL_DEVICE T tessel_max(T a, T b) { return a < b ? b : a; }
template <typename T> TESSEL_DEVICE T tessel_abs(T a) { return a < 0 ? -a : a; }
TESSEL_DEVICE int tessel_lane() {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
// Lane shuffles through ds_bpermute (4-byte words; wider values in two halves).
template <typename T> TESSEL_DEVICE T tessel_shfl_from(T v, int src) {
  static_assert(sizeof(T) <= 8, "shuffle of a value wider than 8 bytes");
  int words[2] = {0, 0};
  __builtin_memcpy(words, &v, sizeof(T));
  for (int i = 0; i < (sizeof(T) + 3) / 4; ++i) words[i] = __builtin_amdgcn_ds_bpermute(src << 2, words[i]);
  T out;
  __builtin_memcpy(&out, words, sizeof(T));
  return out;
}
template <typename T> TESSEL_DEVICE T tessel_shfl_xor(T v, int m) { return tessel_shfl_from(v, tessel_lane() ^ m); }
template <typename T> TESSEL_DEVICE T tessel_shfl_down(T v, int d) {
  int src = tessel_lane() + d;
  return tessel_shfl_from(v, src < 64 ? src : tessel_lane());
}
template <typename T> TESSEL_DEVICE T tessel_shfl_up(T v, int d) {
  int src = tessel_lane() - d;
  return tessel_shfl_from(v, src >= 0 ? src : tessel_lane());
}
// Atomics as compare-and-swap loops on the element's bits (a 16-bit element through the aligned
// 32-bit word that contains it).
template <int Bytes> struct tessel_word;
template <> struct tessel_word<4> { typedef unsigned type; };
template <> struct tessel_word<8> { typedef unsigned long long type; };
template <typename T, typename F> TESSEL_DEVICE T tessel_atomic_rmw(T* p, T v, F op) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "atomic element size");
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    typedef typename tessel_word<sizeof(T)>::type W;
    W* word = reinterpret_cast<W*>(p);
    W old = __atomic_load_n(word, __ATOMIC_RELAXED);
    while (true) {
      T cur;
      __builtin_memcpy(&cur, &old, sizeof(T));
      T next = op(cur, v);
      W want;
      __builtin_memcpy(&want, &next, sizeof(T));
      if (__atomic_compare_exchange_n(word, &old, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return cur;
    }
  } else {
    unsigned long addr = reinterpret_cast<unsigned long>(p);
    unsigned* word = reinterpret_cast<unsigned*>(addr & ~3ul);
    int shift = (addr & 2) * 8;
    unsigned old = __atomic_load_n(word, __ATOMIC_RELAXED);
    while (true) {
      unsigned short bits = static_cast<unsigned short>(old >> shift);
      T cur;
      __builtin_memcpy(&cur, &bits, 2);
      T next = op(cur, v);
      unsigned short nb;
      __builtin_memcpy(&nb, &next, 2);
      unsigned want = (old & ~(0xffffu << shift)) | (static_cast<unsigned>(nb) << shift);
      if (__atomic_compare_exchange_n(word, &old, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return cur;
    }
  }
}
template <typename T> TESSEL_DEVICE T atomicAdd(T* p, T v) { return tessel_atomic_rmw(p, v, [](T a, T b) { return static_cast<T>(a + b); }); }
template <typename T> TESSEL_DEVICE T atomicMax(T* p, T v) { return tessel_atomic_rmw(p, v, [](T a, T b) { return a < b ? b : a; }); }
template <typename T> TESSEL_DEVICE T atomicMin(T* p, T v) { return tessel_atomic_rmw(p, v, [](T a, T b) { return b < a ? b : a; }); }
template <typename T> TESSEL_DEVICE T tessel_atomic_add(T* p, T v) { return atomicAdd(p, v); }
template <typename T> TESSEL_DEVICE T tessel_atomic_max(T* p, T v) { return atomicMax(p, v); }
template <typename T> TESSEL_DEVICE T tessel_atomic_min(T* p, T v) { return atomicMin(p, v); }
)";

}  // namespace

std::string intrinsic_call(const IntrinsicInfo& info, CallText text, std::set<std::string>& used) {
  internal_check(info.home != nullptr, "an intrinsic without its family's home");
  const Language lang = text.lang;
  text.c_type = [lang](DataType t) { return c_type(lang, t); };
  return info.home->call(info, text, used);
}

std::string prelude(Language lang, const std::set<std::string>& used) {
  std::string out = lang == Language::kCuda ? kCudaHeader : kHipHeader;
  if (used.count("vector_types")) {
    out += lang == Language::kCuda
               ? "typedef uint2 tessel_u32x2;  // 8- and 16-byte vector copies\ntypedef uint4 "
                 "tessel_u32x4;\n"
               : "typedef unsigned tessel_u32x2 __attribute__((ext_vector_type(2)));  // vector "
                 "copies\n"
                 "typedef unsigned tessel_u32x4 __attribute__((ext_vector_type(4)));\n";
  }
  if (lang == Language::kCuda && used.count("atomics")) out += kCudaAtomics;
  if (lang == Language::kCuda && used.count("tensor_maps")) {
    out += "#include <cuda.h>  // CUtensorMap: TMA tensor maps, built by the host\n";
  }
  for (const IntrinsicInfo& info : intrinsic_table()) {
    if (!used.count(info.name)) continue;
    out += "\n" + helper(lang, info);
  }
  return out;
}

}  // namespace tessel::codegen
