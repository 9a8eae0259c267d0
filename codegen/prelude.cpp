// The helpers generated code calls: one device function per instruction of the intrinsic table
// that the kernel uses, its inline PTX (NVIDIA) or amdgcn builtin (AMD) built from the table's
// spelling and operand counts, plus shuffles, barriers, floor division and atomics.
#include <sstream>

#include "codegen/dialect.h"
#include "core/error.h"
#include "core/instruction_family.h"

namespace tessel::codegen {

namespace {

/// 32-bit registers an operand of `elements` values of `t` occupies.
int regs32(DataType t, int elements) { return elements * t.storage_bits() / 32; }

/// "%a, %b, ..." placeholders from `first`, `count` of them, in braces.
std::string placeholders(int first, int count) {
  std::string s = "{";
  for (int i = 0; i < count; ++i) s += (i ? ", %" : "%") + std::to_string(first + i);
  return s + "}";
}

std::string cuda_helper(const IntrinsicInfo& info) {
  if (info.home) return info.home->helper(Language::kCuda, info);
  std::ostringstream o;
  const std::string fn = "tessel_" + info.name;
  switch (info.family) {
    case IntrinsicFamily::kMma: {
      const auto& ops = info.operands;  // D, A, B, C
      int d = regs32(ops[0].dtypes[0], ops[0].elements), a = regs32(ops[1].dtypes[0], ops[1].elements);
      int b = regs32(ops[2].dtypes[0], ops[2].elements), c = regs32(ops[3].dtypes[0], ops[3].elements);
      o << "__device__ __forceinline__ void " << fn
        << "(float* d, const void* a, const void* b, const float* c) {\n"
        << "  const unsigned* A = static_cast<const unsigned*>(a);\n"
        << "  const unsigned* B = static_cast<const unsigned*>(b);\n"
        << "  asm volatile(\"" << info.cuda << " " << placeholders(0, d) << ", "
        << placeholders(d, a) << ", " << placeholders(d + a, b) << ", "
        << placeholders(d + a + b, c) << ";\\n\"\n               : ";
      for (int i = 0; i < d; ++i) o << (i ? ", " : "") << "\"=f\"(d[" << i << "])";
      o << "\n               : ";
      for (int i = 0; i < a; ++i) o << (i ? ", " : "") << "\"r\"(A[" << i << "])";
      for (int i = 0; i < b; ++i) o << ", \"r\"(B[" << i << "])";
      for (int i = 0; i < c; ++i) o << ", \"f\"(c[" << i << "])";
      o << ");\n}\n";
      break;
    }
    case IntrinsicFamily::kCpAsync:
      o << "__device__ __forceinline__ void " << fn
        << "(void* dst, const void* src, int src_size) {\n"
        << "  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));\n"
        << "  asm volatile(\"" << info.cuda << " [%0], [%1], " << info.bytes
        << ", %2;\\n\" :: \"r\"(addr), \"l\"(src), \"r\"(src_size) : \"memory\");\n}\n";
      break;
    case IntrinsicFamily::kCommitGroup:
      o << "__device__ __forceinline__ void " << fn << "() { asm volatile(\"" << info.cuda
        << ";\\n\" ::: \"memory\"); }\n";
      break;
    case IntrinsicFamily::kWaitGroup:
      o << "template <int N>\n__device__ __forceinline__ void " << fn << "() { asm volatile(\""
        << info.cuda << " %0;\\n\" :: \"n\"(N) : \"memory\"); }\n";
      break;
    default:
      break;
  }
  return o.str();
}

std::string hip_helper(const IntrinsicInfo& info) {
  if (info.home) return info.home->helper(Language::kHip, info);
  std::ostringstream o;
  const std::string fn = "tessel_" + info.name;
  if (info.family != IntrinsicFamily::kMma) {
    user_error("codegen: " + info.name + " is an NVIDIA instruction; it has no HIP spelling");
  }
  const auto& ops = info.operands;
  const int ab = ops[1].elements, cd = ops[0].elements;
  const bool bf16 = ops[1].dtypes[0].code == TypeCode::kBFloat;
  const std::string in = bf16 ? "short" : "_Float16";
  o << "TESSEL_DEVICE void " << fn << "(float* d, const void* a, const void* b, const float* c) {\n"
    << "  typedef " << in << " In __attribute__((ext_vector_type(" << ab << ")));\n"
    << "  typedef float Acc __attribute__((ext_vector_type(" << cd << ")));\n"
    << "  const " << in << "* A = static_cast<const " << in << "*>(a);\n"
    << "  const " << in << "* B = static_cast<const " << in << "*>(b);\n"
    << "  In av, bv;\n  Acc cv;\n"
    << "  for (int i = 0; i < " << ab << "; ++i) av[i] = A[i], bv[i] = B[i];\n"
    << "  for (int i = 0; i < " << cd << "; ++i) cv[i] = c[i];\n"
    << "  Acc r = " << info.hip << "(av, bv, cv, 0, 0, 0);\n"
    << "  for (int i = 0; i < " << cd << "; ++i) d[i] = r[i];\n}\n";
  return o.str();
}

const char* kCudaHeader = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Python floor division and modulo (used where an operand may be negative).
__device__ __forceinline__ long long tessel_floordiv(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ long long tessel_floormod(long long a, long long b) {
  long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
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

std::string intrinsic_call(Language lang, const IntrinsicInfo& info, DataType dst_type,
                           const std::vector<std::string>& args, std::set<std::string>& used) {
  if (info.home) {
    CallText text{lang, args, dst_type, [lang](DataType t) { return c_type(lang, t); }};
    return info.home->call(info, text, used);
  }
  auto join = [&](size_t from) {
    std::string s;
    for (size_t i = from; i < args.size(); ++i) s += (i > from ? ", " : "") + args[i];
    return s;
  };
  if (info.family == IntrinsicFamily::kAtomic) {
    std::string fn = atomic_function(info.id, dst_type, lang == Language::kHip);
    if (fn.rfind("tessel_", 0) == 0) used.insert("atomics");
    return fn + "(" + args[0] + ", static_cast<" + c_type(lang, dst_type) + ">(" + args[1] + "));";
  }
  if (lang == Language::kCuda && info.cuda.empty()) {
    user_error("codegen: " + info.name + " is an AMD instruction; it has no CUDA spelling");
  }
  used.insert(info.name);
  if (info.family == IntrinsicFamily::kWaitGroup) {
    return "tessel_" + info.name + "<" + args[0] + ">();";
  }
  return "tessel_" + info.name + "(" + join(0) + ");";
}

std::string prelude(Language lang, const std::set<std::string>& used) {
  std::string out = lang == Language::kCuda ? kCudaHeader : kHipHeader;
  if (used.count("vector_types")) {
    out += lang == Language::kCuda
               ? "typedef uint2 tessel_u32x2;  // 8- and 16-byte vector copies\ntypedef uint4 tessel_u32x4;\n"
               : "typedef unsigned tessel_u32x2 __attribute__((ext_vector_type(2)));  // vector copies\n"
                 "typedef unsigned tessel_u32x4 __attribute__((ext_vector_type(4)));\n";
  }
  if (lang == Language::kCuda && used.count("atomics")) out += kCudaAtomics;
  for (const IntrinsicInfo& info : intrinsic_table()) {
    if (!used.count(info.name)) continue;
    out += "\n" + (lang == Language::kCuda ? cuda_helper(info) : hip_helper(info));
  }
  return out;
}

}  // namespace tessel::codegen
