// T.vectorized loops at thread level: each memory site of the body becomes one vector request of
// V elements per lane when its elements are consecutive along the last dimension, and the models
// count it as the hardware does. Expected numbers are derived by hand from the NVIDIA bank rules
// (32 banks x 4 B; 4-byte accesses: one phase of 32 lanes, 8-byte: two of 16, 16-byte: four of
// 8) and from 32-byte global sectors; shared buffers start at byte 0 (bank 0) and global tensors
// at 256-byte aligned addresses.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>

#include "core/builder.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;

namespace {

const DataType kF16 = DataType::f16();
const DataType kF32 = DataType::f32();

ThreadRunOptions sm80() {
  ThreadRunOptions o;
  o.target = "sm80";
  o.workers = 1;
  return o;
}

/// The counters of every site that does `access` ("load", "store") on `buffer`, summed.
sim::Counters counters(const ThreadRunResult& r, const std::string& access,
                       const std::string& buffer) {
  sim::Counters c;
  for (size_t s = 0; s < r.report.sites.size(); ++s) {
    if (r.report.sites[s].access == access && r.report.sites[s].buffer == buffer) {
      c += r.report.per_site[s];
    }
  }
  return c;
}

/// A loop of `kind` over `extent`: T.vectorized or T.serial.
void loop(KernelBuilder& T, ForKind kind, int extent, const std::function<void(Var)>& body) {
  if (kind == ForKind::kVectorized)
    T.vectorized(extent, body);
  else
    T.serial(extent, body);
}

/// 32 lanes copy a [4, 64] f16 tile global -> shared -> global, 8 elements (16 bytes) each:
/// lane l takes row l / 8, columns (l % 8) * 8 + v, i.e. bytes 16 l .. 16 l + 15.
Kernel copy16(ForKind kind) {
  KernelBuilder T("copy16");
  auto A = T.tensor("A", {4, 64}, kF16);
  auto B = T.tensor("B", {4, 64}, kF16);
  T.kernel1(1, 32);
  Var tx = T.get_thread_binding();
  auto s = T.alloc_shared("s", {4, 64}, kF16);
  loop(T, kind, 8, [&](Var v) { s(tx / 8, tx % 8 * 8 + v) = A(tx / 8, tx % 8 * 8 + v); });
  T.sync_threads();
  loop(T, kind, 8, [&](Var v) { B(tx / 8, tx % 8 * 8 + v) = s(tx / 8, tx % 8 * 8 + v) * 2; });
  return T.finish();
}

ThreadRunResult run(const Kernel& k, TensorMap& t) { return run_thread_level(k, t, sm80()); }

}  // namespace

TEST_SUITE("thread level: vectorized loops") {
  TEST_CASE("a 16-byte f16 copy to shared is four conflict-free phases of one request") {
    // Lane l stores bytes 16 l .. 16 l + 15. Four phases of 8 lanes; phase p covers bytes
    // 128 p .. 128 p + 127 = words 32 p .. 32 p + 31, every bank once: 1 wavefront per phase,
    // 4 in all, ideal 4. The global load reads 32 x 16 = 512 contiguous bytes: 16 sectors,
    // ideal 16, in one request.
    Kernel k = copy16(ForKind::kVectorized);
    TensorMap t = make_tensors(k, {}, {"B"}, 1);
    ThreadRunResult r = run(k, t);
    CHECK(r.report.findings.empty());
    sim::Counters st = counters(r, "store", "s");
    CHECK(st.shared_requests == 1);
    CHECK(st.wavefronts == 4);
    CHECK(st.ideal_wavefronts == 4);
    CHECK(st.bank_conflicts == 0);
    sim::Counters ld = counters(r, "load", "s");
    CHECK(ld.shared_requests == 1);
    CHECK(ld.wavefronts == 4);
    CHECK(ld.bank_conflicts == 0);
    sim::Counters ga = counters(r, "load", "A");
    CHECK(ga.global_requests == 1);
    CHECK(ga.sectors == 16);
    CHECK(ga.ideal_sectors == 16);
    sim::Counters gb = counters(r, "store", "B");
    CHECK(gb.global_requests == 1);
    CHECK(gb.sectors == 16);
  }

  TEST_CASE("the same copy as a serial loop is eight 2-byte requests with 4-way conflicts") {
    // Iteration v: lane l touches byte 16 l + 2 v, word 4 l + v / 2, bank (4 l + v / 2) % 32;
    // lanes l, l + 8, l + 16, l + 24 hit one bank in 4 distinct words: 4 wavefronts, ideal 1
    // (one phase of 32 lanes), per request; 8 requests: 32, ideal 8, conflicts 24. Globally each
    // request touches one 2-byte piece of each of the 16 sectors of the tile: 16 sectors, ideal
    // ceil(64 / 32) = 2; 8 requests: 128 sectors, ideal 16.
    Kernel k = copy16(ForKind::kSerial);
    TensorMap t = make_tensors(k, {}, {"B"}, 1);
    ThreadRunResult r = run(k, t);
    sim::Counters st = counters(r, "store", "s");
    CHECK(st.shared_requests == 8);
    CHECK(st.wavefronts == 32);
    CHECK(st.ideal_wavefronts == 8);
    CHECK(st.bank_conflicts == 24);
    sim::Counters ga = counters(r, "load", "A");
    CHECK(ga.global_requests == 8);
    CHECK(ga.sectors == 128);
    CHECK(ga.ideal_sectors == 16);
  }

  TEST_CASE("an 8-byte f32 access is two conflict-free half-warp phases") {
    // Lane l stores floats 2 l, 2 l + 1 = bytes 8 l .. 8 l + 7. Phase 0 (lanes 0-15): words
    // 0..31, each bank once -> 1; phase 1: words 32..63 -> 1. Total 2, ideal 2. Global: 256
    // contiguous bytes = 8 sectors, ideal 8, one request.
    KernelBuilder T("copy8");
    auto A = T.tensor("A", {64}, kF32);
    auto B = T.tensor("B", {64}, kF32);
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto s = T.alloc_shared("s", {64}, kF32);
    T.vectorized(2, [&](Var v) { s(tx * 2 + v) = A(tx * 2 + v); });
    T.sync_threads();
    B(tx) = s(tx);
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"B"}, 2);
    ThreadRunResult r = run(k, t);
    CHECK(r.report.findings.empty());
    sim::Counters st = counters(r, "store", "s");
    CHECK(st.shared_requests == 1);
    CHECK(st.wavefronts == 2);
    CHECK(st.ideal_wavefronts == 2);
    CHECK(st.bank_conflicts == 0);
    sim::Counters ga = counters(r, "load", "A");
    CHECK(ga.global_requests == 1);
    CHECK(ga.sectors == 8);
    CHECK(ga.ideal_sectors == 8);
  }

  TEST_CASE("16-byte rows at a 128-byte stride conflict 8 ways in every phase") {
    // Lane l stores s[l, 0..7] (f16, rows of 64): bytes 128 l .. 128 l + 15 = words 32 l ..
    // 32 l + 3, banks 0..3 for every lane. A phase of 8 lanes puts 8 distinct words in each of
    // banks 0..3: 8 wavefronts; 4 phases: 32, ideal 4, conflicts 28. Padding the rows to 72
    // elements (144 bytes) moves lane l to words 36 l .. 36 l + 3, banks 4 l % 32 .. + 3: the
    // 8 lanes of a phase cover the 32 banks once, 1 wavefront per phase, 4 in all.
    for (int cols : {64, 72}) {
      INFO("row length " << cols);
      KernelBuilder T("rows");
      auto A = T.tensor("A", {32, 8}, kF16);
      auto B = T.tensor("B", {32, 8}, kF16);
      T.kernel1(1, 32);
      Var tx = T.get_thread_binding();
      auto s = T.alloc_shared("s", {32, cols}, kF16);
      T.vectorized(8, [&](Var v) { s(tx, v) = A(tx, v); });
      T.sync_threads();
      T.vectorized(8, [&](Var v) { B(tx, v) = s(tx, v); });
      Kernel k = T.finish();
      TensorMap t = make_tensors(k, {}, {"B"}, 3);
      ThreadRunResult r = run(k, t);
      sim::Counters st = counters(r, "store", "s");
      CHECK(st.shared_requests == 1);
      CHECK(st.wavefronts == (cols == 64 ? 32 : 4));
      CHECK(st.ideal_wavefronts == 4);
      CHECK(st.bank_conflicts == (cols == 64 ? 28 : 0));
      CHECK(t.at("B").at(31 * 8 + 7) == t.at("A").at(31 * 8 + 7));
    }
  }

  TEST_CASE(
      "a body whose elements are not consecutive in v falls back to one request per "
      "iteration") {
    // s[v, l] = A[l, v]: in iteration v the 32 lanes store the 32 consecutive f16 of row v
    // (bytes 64 v .. 64 v + 63, 16 words in 16 banks): 1 wavefront, ideal 1, per request; the
    // loop gives 8 requests, 8 wavefronts, exactly as the serial loop. The load A[l, v] is
    // consecutive in v (lane l: bytes 16 l .. 16 l + 15) and becomes one request: 16 sectors.
    auto build = [](ForKind kind) {
      KernelBuilder T("transpose");
      auto A = T.tensor("A", {32, 8}, kF16);
      auto B = T.tensor("B", {8, 32}, kF16);
      T.kernel1(1, 32);
      Var tx = T.get_thread_binding();
      auto s = T.alloc_shared("s", {8, 32}, kF16);
      loop(T, kind, 8, [&](Var v) { s(v, tx) = A(tx, v); });
      T.sync_threads();
      T.serial(8, [&](Var v) { B(v, tx) = s(v, tx); });
      return T.finish();
    };
    Kernel kv = build(ForKind::kVectorized), ks = build(ForKind::kSerial);
    TensorMap tv = make_tensors(kv, {}, {"B"}, 4), ts = make_tensors(ks, {}, {"B"}, 4);
    ThreadRunResult rv = run(kv, tv), rs = run(ks, ts);
    sim::Counters st = counters(rv, "store", "s");
    CHECK(st.shared_requests == 8);
    CHECK(st.wavefronts == 8);
    CHECK(st.ideal_wavefronts == 8);
    CHECK(st == counters(rs, "store", "s"));
    sim::Counters ga = counters(rv, "load", "A");
    CHECK(ga.global_requests == 1);
    CHECK(ga.sectors == 16);
    CHECK(rv.report.findings.empty());
  }

  TEST_CASE("a run not aligned to its 16 bytes falls back to one request per iteration") {
    // Lane l copies elements 8 l + 1 .. 8 l + 8: its first byte 16 l + 2 is not a multiple of
    // 16, so no vector access exists; the serial numbers stand. Iteration v: byte 16 l + 2 + 2 v,
    // word 4 l + (1 + v) / 2: lanes l, l + 8, l + 16, l + 24 share a bank in 4 words -> 4
    // wavefronts per request, 8 requests: 32, ideal 8.
    KernelBuilder T("misaligned");
    auto A = T.tensor("A", {264}, kF16);
    auto B = T.tensor("B", {264}, kF16);
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto s = T.alloc_shared("s", {264}, kF16);
    T.vectorized(8, [&](Var v) { s(tx * 8 + 1 + v) = A(tx * 8 + 1 + v); });
    T.sync_threads();
    T.serial(8, [&](Var v) { B(tx * 8 + 1 + v) = s(tx * 8 + 1 + v); });
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"B"}, 5);
    ThreadRunResult r = run(k, t);
    sim::Counters st = counters(r, "store", "s");
    CHECK(st.shared_requests == 8);
    CHECK(st.wavefronts == 32);
    CHECK(st.ideal_wavefronts == 8);
  }

  TEST_CASE("a vectorized loop computes exactly what the serial loop computes") {
    Kernel kv = copy16(ForKind::kVectorized), ks = copy16(ForKind::kSerial);
    TensorMap tv = make_tensors(kv, {}, {"B"}, 6), ts = make_tensors(ks, {}, {"B"}, 6);
    ThreadRunResult rv = run(kv, tv), rs = run(ks, ts);
    const HostTensor &bv = tv.at("B"), &bs = ts.at("B");
    REQUIRE(bv.size() == 256);
    int differ = 0;
    for (int64_t i = 0; i < bv.size(); ++i) {
      differ += bv.at(i) != bs.at(i);
      differ += bv.at(i) != 2 * tv.at("A").at(i);  // x * 2 is exact in f16
    }
    CHECK(differ == 0);
    CHECK(rv.lane_ops == rs.lane_ops);
    CHECK(rv.report.findings.empty());
    CHECK(rs.report.findings.empty());
  }

  TEST_CASE("lanes that skip some iterations of a vectorized loop fall back and stay exact") {
    // Lanes 0-15 store only in iterations v < 4 (an `if` in the body): the store's lanes differ
    // between iterations, so it is presented per iteration: 4 requests of 32 lanes and 4 of 16.
    KernelBuilder T("masked");
    auto A = T.tensor("A", {256}, kF16);
    auto B = T.tensor("B", {256}, kF16);
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    T.vectorized(
        8, [&](Var v) { T.if_then(tx >= 16 || v < 4, [&] { B(tx * 8 + v) = A(tx * 8 + v); }); });
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"B"}, 7);
    ThreadRunResult r = run(k, t);
    sim::Counters gb = counters(r, "store", "B");
    CHECK(gb.global_requests == 8);
    CHECK(gb.lane_accesses == 4 * 32 + 4 * 16);
    CHECK(t.at("B").at(0) == t.at("A").at(0));
    CHECK(std::isnan(t.at("B").at(4)));  // lane 0, v = 4: not written (outputs start as NaN)
    CHECK(t.at("B").at(16 * 8 + 7) == t.at("A").at(16 * 8 + 7));
  }

}  // TEST_SUITE
