// Per-thread atomics of the intrinsic table (T.atom_add, T.atom_max, T.atom_min): their table
// entries and spellings, argument errors, printing and parsing, and their simulation — every
// active lane updates dst in turn, and atomic updates are exempt from race detection.
#include <doctest/doctest.h>

#include "core/builder.h"
#include "core/error.h"
#include "core/intrinsics.h"
#include "core/kernel_equal.h"
#include "core/kernel_parser.h"
#include "core/printer.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;

namespace {

const DataType kF32 = DataType::f32();
const DataType kI32 = DataType::i32();

/// T.<id>(dst, value) through the builder's generic intrinsic call.
void atom(KernelBuilder& T, IntrinsicId id, const ElementRef& dst, Expr value,
          SourceLoc loc = SourceLoc::here()) {
  BufferRegion r = dst.region();
  IntrinsicArg d{r.buffer, {}, Expr()};
  for (const Range& range : r.ranges) d.indices.push_back(range.min);
  T.intrinsic(id, {d, IntrinsicArg{Buffer(), {}, std::move(value)}}, std::move(loc));
}

ThreadRunOptions target(const char* name, int workers = 1) {
  ThreadRunOptions o;
  o.target = name;
  o.workers = workers;
  return o;
}

/// 2 blocks of 256 threads; thread t of each block adds t + 1 to C[0] (atomically or by a
/// plain read-modify-write).
Kernel sum_kernel(bool atomic) {
  KernelBuilder T(atomic ? "atomic_sum" : "plain_sum");
  auto C = T.tensor("C", {1}, kF32);
  T.kernel1(2, 256);
  Var tx = T.get_thread_binding();
  Expr one_based = cast(kF32, tx + 1);
  if (atomic)
    atom(T, IntrinsicId::kAtomAdd, C(0), one_based);
  else
    C(0) = C(0) + one_based;
  return T.finish();
}

TensorMap zeros(const Kernel& k) {
  TensorMap t = make_tensors(k, {}, {}, 0);
  for (auto& [name, tensor] : t) {
    for (int64_t i = 0; i < tensor.size(); ++i) tensor.set(i, 0);
  }
  return t;
}

}  // namespace

TEST_SUITE("atomics: the table") {
  TEST_CASE("atom_add, atom_max and atom_min are atomicAdd, atomicMax and atomicMin") {
    CHECK(intrinsic_info(IntrinsicId::kAtomAdd).cuda == "atomicAdd");
    CHECK(intrinsic_info(IntrinsicId::kAtomAdd).hip == "atomicAdd");
    CHECK(intrinsic_info(IntrinsicId::kAtomMax).cuda == "atomicMax");
    CHECK(intrinsic_info(IntrinsicId::kAtomMin).hip == "atomicMin");
    CHECK(intrinsic_info(IntrinsicId::kAtomMin).family == IntrinsicFamily::kAtomic);
    CHECK(find_intrinsic("atom_max") == IntrinsicId::kAtomMax);
    CHECK_FALSE(find_intrinsic("atomic_add"));  // the tile operator, not an instruction
    CHECK(atomic_intrinsic(AtomicKind::kAdd) == IntrinsicId::kAtomAdd);
    CHECK(atomic_intrinsic(AtomicKind::kMin) == IntrinsicId::kAtomMin);
  }

  TEST_CASE("float max and min need a compare-and-swap helper on CUDA but not on HIP") {
    // CUDA's atomicMax/atomicMin have int, unsigned and 64-bit integer overloads only; HIP adds
    // float and double.
    CHECK(atomic_function(IntrinsicId::kAtomMax, kF32, false) == "tessel_atomic_max");
    CHECK(atomic_function(IntrinsicId::kAtomMax, kF32, true) == "atomicMax");
    CHECK(atomic_function(IntrinsicId::kAtomMin, kI32, false) == "atomicMin");
    CHECK(atomic_function(IntrinsicId::kAtomMin, DataType::i64(), false) == "atomicMin");
    CHECK(atomic_function(IntrinsicId::kAtomMin, DataType::i64(), true) == "tessel_atomic_min");
    // atomicAdd: __half (sm_70) and __nv_bfloat16 (sm_80) on CUDA, neither on HIP; no signed
    // 64-bit overload anywhere.
    CHECK(atomic_function(IntrinsicId::kAtomAdd, DataType::f16(), false) == "atomicAdd");
    CHECK(atomic_function(IntrinsicId::kAtomAdd, DataType::bf16(), true) == "tessel_atomic_add");
    CHECK(atomic_function(IntrinsicId::kAtomAdd, DataType::i64(), false) == "tessel_atomic_add");
    CHECK(atomic_function(IntrinsicId::kAtomAdd, DataType::f64(), true) == "atomicAdd");
  }

  TEST_CASE("an atomic call prints in the kernel language and parses back equal") {
    KernelBuilder T("atomics");
    auto A = T.tensor("A", {64}, kF32);
    auto C = T.tensor("C", {64}, kF32);
    auto N = T.tensor("N", {1}, kI32);
    T.kernel1(1, 64);
    Var tx = T.get_thread_binding();
    atom(T, IntrinsicId::kAtomAdd, C(tx), A(tx) * 2);
    atom(T, IntrinsicId::kAtomMax, N(0), tx);
    T.atomic_add(C(tx), A(tx));  // the tile operator keeps its own spelling
    Kernel k = T.finish();
    std::string text = print_kernel(k);
    INFO(text);
    CHECK(text.find("        T.atom_add(C[tx], A[tx] * 2.0)\n") != std::string::npos);
    CHECK(text.find("        T.atom_max(N[0], tx)\n") != std::string::npos);
    CHECK(text.find("        T.atomic_add(C[tx], A[tx])\n") != std::string::npos);
    ParsedKernel parsed = parse_kernel(text, "atomics.py");
    auto diff = kernel_difference(k, parsed.kernel);
    CHECK_MESSAGE(!diff, (diff ? *diff : ""));
    CHECK(print_kernel(parsed.kernel) == text);
  }

}  // TEST_SUITE

TEST_SUITE("atomics: argument errors") {
  TEST_CASE("an atomic on a local buffer is a user error naming the instruction and operand") {
    KernelBuilder T("bad");
    T.kernel1(1, 32);
    auto r = T.alloc_local("r", {4}, kF32);
    CHECK_THROWS_WITH_AS(atom(T, IntrinsicId::kAtomAdd, r(0), make_const(kF32, 1)),
                         doctest::Contains("T.atom_add at test_thread_atomic.cpp:"), UserError);
    CHECK_THROWS_WITH_AS(atom(T, IntrinsicId::kAtomAdd, r(0), make_const(kF32, 1)),
                         doctest::Contains("operand dst must be an element of a global or shared "
                                           "buffer, but 'r' is a local buffer"),
                         UserError);
  }

  TEST_CASE("an atomic on an element type no atomic supports is a user error listing those") {
    KernelBuilder T("bad");
    auto Q = T.tensor("Q", {4}, DataType::i8());
    T.kernel1(1, 32);
    CHECK_THROWS_WITH_AS(
        atom(T, IntrinsicId::kAtomMin, Q(0), make_int(1)),
        doctest::Contains("operand dst needs float32, float64, float16, bfloat16, int32, uint32 "
                          "or int64, but 'Q' holds int8"),
        UserError);
  }

  TEST_CASE("an atomic with a buffer as its value is a user error") {
    KernelBuilder T("bad");
    auto C = T.tensor("C", {4}, kF32);
    T.kernel1(1, 32);
    BufferRegion r = C(0).region();
    CHECK_THROWS_WITH_AS(
        T.intrinsic(IntrinsicId::kAtomAdd, {IntrinsicArg{r.buffer, {make_int(0)}, Expr()},
                                            IntrinsicArg{r.buffer, {make_int(1)}, Expr()}}),
        doctest::Contains("operand value must be a number, got C[1]"), UserError);
  }

}  // TEST_SUITE

TEST_SUITE("atomics: simulation") {
  TEST_CASE("512 threads of 2 blocks adding to one float get the exact sum and no race") {
    // Each block adds 1 + 2 + ... + 256 = 256 * 257 / 2 = 32896; two blocks 65792. Every partial
    // sum is an integer below 2^24, exact in f32 in any order. Run on 2 workers so the blocks
    // really update C[0] concurrently.
    Kernel k = sum_kernel(true);
    TensorMap t = zeros(k);
    ThreadRunResult r = run_thread_level(k, t, target("sm80", 2));
    CHECK(t.at("C").at(0) == 65792.0);
    CHECK(r.report.findings.empty());
    // 8 warps x 2 blocks = 16 requests; each touches the same 4 bytes: 1 sector each.
    CHECK(r.report.total.global_requests == 16);
    CHECK(r.report.total.sectors == 16);
  }

  TEST_CASE("the same sum by a plain load and store is reported as a race") {
    Kernel k = sum_kernel(false);
    TensorMap t = zeros(k);
    ThreadRunResult r = run_thread_level(k, t, target("sm80"));
    CHECK_FALSE(r.report.of_kind(sim::FindingKind::kRace).empty());
    CHECK(r.report.has_errors());
  }

  TEST_CASE("atom_max and atom_min keep the largest and smallest lane value") {
    // Lane l offers (13 l) % 32 - 7 as f32: 13 is odd, so l -> 13 l mod 32 is a permutation of
    // 0..31 and the values are -7..24: max 24. The i32 min over 5 - 3 l is lane 31's 5 - 93 =
    // -88. C starts at -100 (below every value) and N at 0 (above the minimum).
    KernelBuilder T("extremes");
    auto C = T.tensor("C", {1}, kF32);
    auto N = T.tensor("N", {1}, kI32);
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    atom(T, IntrinsicId::kAtomMax, C(0), cast(kF32, tx * 13 % 32 - 7));
    atom(T, IntrinsicId::kAtomMin, N(0), 5 - tx * 3);
    Kernel k = T.finish();
    TensorMap t = zeros(k);
    t.at("C").set(0, -100);
    ThreadRunResult r = run_thread_level(k, t, target("sm80"));
    CHECK(t.at("C").at(0) == 24.0);
    CHECK(t.at("N").at(0) == -88.0);
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("atomics on a shared counter count every lane without a race") {
    // Thread 0 zeroes s[0]; after a barrier 64 threads (2 warps) each add 1; after another,
    // thread 0 copies it out: 64.
    KernelBuilder T("shared_count");
    auto C = T.tensor("C", {1}, kF32);
    T.kernel1(1, 64);
    Var tx = T.get_thread_binding();
    auto s = T.alloc_shared("s", {1}, kF32);
    T.if_then(tx == 0, [&] { s(0) = make_const(kF32, 0); });
    T.sync_threads();
    atom(T, IntrinsicId::kAtomAdd, s(0), make_const(kF32, 1));
    T.sync_threads();
    T.if_then(tx == 0, [&] { C(0) = s(0); });
    Kernel k = T.finish();
    TensorMap t = zeros(k);
    ThreadRunResult r = run_thread_level(k, t, target("sm80"));
    CHECK(t.at("C").at(0) == 64.0);
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("atomics run on a wave64 target too") {
    // 64 lanes of one wave add 1 each to an int32: 64.
    KernelBuilder T("wave64");
    auto N = T.tensor("N", {1}, kI32);
    T.kernel1(1, 64);
    atom(T, IntrinsicId::kAtomAdd, N(0), make_int(1));
    Kernel k = T.finish();
    TensorMap t = zeros(k);
    ThreadRunResult r = run_thread_level(k, t, target("gfx942"));
    CHECK(t.at("N").at(0) == 64.0);
    CHECK(r.warp_size == 64);
  }

  TEST_CASE("an f16 atomic add rounds after every lane") {
    // 32 lanes add 1 to an f16 starting at 2048: 2048 + 1 = 2049 is not an f16 (spacing 2 in
    // [2048, 4096)) and rounds to even, 2048, every time — the hardware's atomicAdd(__half)
    // does the same — so the sum stays 2048.
    KernelBuilder T("f16_add");
    auto H = T.tensor("H", {1}, DataType::f16());
    T.kernel1(1, 32);
    atom(T, IntrinsicId::kAtomAdd, H(0), make_const(DataType::f16(), 1));
    Kernel k = T.finish();
    TensorMap t = zeros(k);
    t.at("H").set(0, 2048);
    run_thread_level(k, t, target("sm80"));
    CHECK(t.at("H").at(0) == 2048.0);
  }

}  // TEST_SUITE
