// wgmma.mma_async (core/families/wgmma.cpp, sm90): the descriptor's address function against the
// PTX ISA canonical layouts worked by hand, D = A B (+ D) at thread level with the accumulator
// fragment of PTX ISA Figure 149 written out in the kernels, the accumulators landing at
// wait_group, the wgmma race of the bug corpus under several schedules, and the errors.
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include "core/builder.h"
#include "core/error.h"
#include "core/families/family_util.h"
#include "core/gemm_partition.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;
using sim::FindingKind;

namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Mat matrix(const HostTensor& t) {
  Mat m(t.shape()[0], t.shape()[1]);
  for (int64_t i = 0; i < t.size(); ++i) m.data()[i] = t.at(i);
  return m;
}

ThreadRunOptions sm90(const char* schedule = "in-order") {
  ThreadRunOptions o;
  o.target = "sm90";
  o.workers = 1;
  o.schedule = *Schedule::parse(schedule);
  return o;
}

IntrinsicArg at(const BufferRef& b, std::vector<Expr> idx) {
  return IntrinsicArg{b.buffer(), std::move(idx), Expr()};
}
IntrinsicArg imm(int64_t v) { return IntrinsicArg{Buffer(), {}, make_int(v)}; }

struct OneWgmma {
  bool rs = false;  ///< A from registers
  DataType in = DataType::f16();
  bool read_before_wait = false;  ///< copy d_0 to X between the issue and the wait
  int n = 32;
  int a_swizzle = 32;  ///< the descriptor's, for a deliberately wrong one
};

/// D (64 x 32) = A (64 x 16) B (16 x 32) by one wgmma m64n32k16 of one warpgroup. A's stage is
/// K-major with a 32-byte swizzle, B's N-major with a 64-byte swizzle, both written out by hand
/// (examples/bugs/bugs_wgmma.cpp derives the two formulas); with `rs`, lane l of warp w holds A
/// element i at row 16 w + l / 4 + 8 ((i / 2) % 2), column 2 (l % 4) + i % 2 + 8 (i / 4) (the
/// m16n8k16 A fragment per warp, PTX ISA Figure 148).
Kernel one_wgmma(const OneWgmma& o) {
  const DataType f32 = DataType::f32();
  KernelBuilder T("one_wgmma");
  auto A = T.tensor("A", {64, 16}, o.in);
  auto B = T.tensor("B", {16, 32}, o.in);
  auto D = T.tensor("D", {64, 32}, f32);
  auto X = T.tensor("X", {128}, f32);
  T.kernel1(1, 128);
  Var tx = T.get_thread_binding();
  auto A_s = T.alloc_shared("A_s", {1024}, o.in);
  auto B_s = T.alloc_shared("B_s", {512}, o.in);
  auto a = T.alloc_local("a", {8}, o.in);
  auto d = T.alloc_local("d", {16}, f32);
  T.serial(
      16, [&](Var i) { d(i) = make_const(f32, 0); }, "i");
  Expr w = tx / 32, l = tx % 32;
  if (o.rs) {
    T.serial(
        8,
        [&](Var i) {
          a(i) = A(16 * w + l / 4 + 8 * (i / 2 % 2), 2 * (l % 4) + i % 2 + 8 * (i / 4));
        },
        "i");
  } else {
    T.serial(
        8,
        [&](Var i) {
          Expr e = i * 128 + tx, m = e / 16, k = e % 16;
          A_s(m * 16 + ((k / 8) ^ (m / 4 % 2)) * 8 + k % 8) = A(m, k);
        },
        "i");
  }
  T.serial(
      4,
      [&](Var i) {
        Expr e = i * 128 + tx, k = e / 32, n = e % 32;
        B_s(k * 32 + ((n / 8) ^ (k / 2 % 4)) * 8 + n % 8) = B(k, n);
      },
      "i");
  T.intrinsic(IntrinsicId::kFenceProxyAsync, {});
  T.sync_threads();
  T.intrinsic(IntrinsicId::kWgmmaFence, {});
  const bool f16 = o.in == DataType::f16();
  if (o.rs) {
    T.intrinsic(f16 ? IntrinsicId::kWgmmaRsF16 : IntrinsicId::kWgmmaRsBF16,
                {at(d, {make_int(0)}), at(a, {make_int(0)}), at(B_s, {make_int(0)}), imm(o.n),
                 imm(64), imm(1024), imm(512), imm(1), imm(1)});
  } else {
    T.intrinsic(f16 ? IntrinsicId::kWgmmaSsF16 : IntrinsicId::kWgmmaSsBF16,
                {at(d, {make_int(0)}), at(A_s, {make_int(0)}), at(B_s, {make_int(0)}), imm(o.n),
                 imm(o.a_swizzle), imm(16), imm(256), imm(0), imm(64), imm(1024), imm(512), imm(1),
                 imm(1)});
  }
  T.intrinsic(IntrinsicId::kWgmmaCommitGroup, {});
  if (o.read_before_wait) X(tx) = d(0);
  T.intrinsic(IntrinsicId::kWgmmaWaitGroup, {imm(0)});
  if (!o.read_before_wait) X(tx) = d(0);
  T.serial(
      16,
      [&](Var i) { D(16 * w + l / 4 + 8 * (i / 2 % 2), 8 * (i / 4) + 2 * (l % 4) + i % 2) = d(i); },
      "i");
  return T.finish();
}

struct BugRun {
  ThreadRunResult result;
  bool matches_reference = true;
};

BugRun run_corpus(bool fixed, const char* schedule) {
  const Example* e = find_example("bug_wgmma_stage_race");
  REQUIRE(e != nullptr);
  Params p = make_params(*e, {{"fixed", fixed ? "true" : "false"}});
  Kernel k = e->build(p);
  TensorMap t = make_tensors(k, {}, e->outputs, 1), expected = t;
  e->reference(p, expected);
  BugRun run;
  run.result = run_thread_level(k, t, sm90(schedule));
  run.matches_reference =
      compare(t.at("C"), expected.at("C"), Tolerance::for_dtype(DataType::f32())).passed;
  return run;
}

}  // namespace

TEST_SUITE("wgmma: descriptor and layouts") {
  TEST_CASE("the descriptor addresses the PTX canonical layouts, swizzle included") {
    const int eb = 2;  // f16
    // K-major, 128-byte swizzle, SBO 1024: (1, 0) is row 1 of the atom (byte 128), chunk 0
    // XOR row 1 = chunk 1: byte 144. (9, 8): 8-row group 1 (1024) + row 1 (128), chunk 1 ^ 1 = 0.
    WgmmaOperandDesc k128{128, 16, 1024, false};
    CHECK(wgmma_element_byte<int64_t>(k128, eb, 0, 1, 0) == 144);
    CHECK(wgmma_element_byte<int64_t>(k128, eb, 0, 9, 8) == 1152);
    CHECK(wgmma_element_byte<int64_t>(k128, eb, 0, 0, 15) == 30);  // row 0 is not swizzled
    // K-major, no swizzle, LBO 128, SBO 256: (3, 9) is core-matrix row 3 (48), element 1 of
    // the second core matrix along K (2 + LBO 128): 178.
    WgmmaOperandDesc knone{0, 128, 256, false};
    CHECK(wgmma_element_byte<int64_t>(knone, eb, 0, 3, 9) == 178);
    // K-major, 64-byte swizzle, SBO 512: (2, 8) is byte 128 + 16; bits 7-8 = 1 flip chunk 1
    // to chunk 0: 128.
    WgmmaOperandDesc k64{64, 16, 512, false};
    CHECK(wgmma_element_byte<int64_t>(k64, eb, 0, 2, 8) == 128);
    // MN-major, 128-byte swizzle, LBO 2048 (next 64 columns), SBO 1024 (next 8 k rows):
    // (mn 70, k 9) is panel 1 (2048) + k group 1 (1024) + k row 1 (128) + byte 12 of chunk 0,
    // chunk 0 ^ 1 = 1: 2048 + 1024 + 128 + 16 + 12 = 3228.
    WgmmaOperandDesc mn128{128, 2048, 1024, true};
    CHECK(wgmma_element_byte<int64_t>(mn128, eb, 0, 70, 9) == 3228);
    // A start 32 bytes into a 128-byte-swizzled row (k step 1 of a 64-wide K tile) of row 8:
    // start 1024 + 32, (0, 0): chunk 2 ^ row 0 = 2, byte 1056; (1, 0): 1056 + 128 = 1184, chunk
    // 2 ^ 1 = 3: 1200.
    CHECK(wgmma_element_byte<int64_t>(k128, eb, 1056, 0, 0) == 1056);
    CHECK(wgmma_element_byte<int64_t>(k128, eb, 1056, 1, 0) == 1200);
    // Swizzle-mode encodings (descriptor bits 62-63).
    CHECK(wgmma_swizzle_code(0) == 0);
    CHECK(wgmma_swizzle_code(128) == 1);
    CHECK(wgmma_swizzle_code(64) == 2);
    CHECK(wgmma_swizzle_code(32) == 3);
  }

  TEST_CASE("the gemm's shared layouts are the ones their descriptors read, element by element") {
    // GEMM example tiles: A 128 x 32 K-major (64-byte rows: 64 B swizzle), B 32 x 128 N-major
    // (two 64-column panels of 128 B swizzle, LBO = 32 rows x 128 B = 4096).
    struct Case {
      WgmmaOperand o;
      int64_t mn_extent, tile_rows;
    };
    for (const Case& c : {Case{{false, 64, 16, 512, 128, 32}, 64, 64},
                          Case{{true, 128, 4096, 1024, 32, 128}, 128, 16}}) {
      Layout l = wgmma_operand_layout(c.o, DataType::f16());
      WgmmaOperandDesc d{c.o.swizzle, c.o.lbo, c.o.sbo, c.o.mn_major};
      int bad = 0;
      for (int64_t r = 0; r < c.o.rows; ++r) {
        for (int64_t col = 0; col < c.o.cols; ++col) {
          // The wgmma that reads (r, col): its k step of 16 and (K-major) its 64-row tile.
          int64_t mn = c.o.mn_major ? col : r, k = c.o.mn_major ? r : col;
          int64_t mn0 = mn - mn % c.mn_extent, k0 = k - k % 16;
          int64_t r0 = c.o.mn_major ? k0 : mn0, c0 = c.o.mn_major ? mn0 : k0;
          int64_t start = l.map({r0, c0})[0] * 2;
          bad +=
              wgmma_element_byte<int64_t>(d, 2, start, mn - mn0, k - k0) != l.map({r, col})[0] * 2;
        }
      }
      CHECK(bad == 0);
    }
  }

  TEST_CASE("the wgmma accumulator fragment is PTX ISA Figure 149 per warpgroup") {
    GemmPlan p;
    p.path = GemmPath::kWgmma;
    p.M = 128;
    p.N = 64;
    p.inst_m = 64;
    p.warpgroups = 2;
    p.partition = WarpPartition{2, 1, 64, 64};
    Fragment f = gemm_c_fragment(p);
    int bad = 0;
    for (int64_t i = 0; i < 128; ++i) {
      for (int64_t j = 0; j < 64; ++j) {
        // Warpgroup i / 64, warp (i % 64) / 16, lane (i % 8) * 4 + (j % 8) / 2; register
        // 4 (j / 8) + 2 ((i % 16) / 8) + j % 2.
        int64_t thread = (i / 64) * 128 + (i % 64) / 16 * 32 + (i % 8) * 4 + (j % 8) / 2;
        int64_t reg = 4 * (j / 8) + 2 * ((i % 16) / 8) + j % 2;
        auto [t, r] = f.map_fragment({i, j});
        bad += t != thread || r != reg;
      }
    }
    CHECK(bad == 0);
  }
}

TEST_SUITE("wgmma: simulation") {
  TEST_CASE("wgmma ss and rs compute D = A B with the PTX fragments, f16 and bf16") {
    for (bool rs : {false, true}) {
      for (DataType in : {DataType::f16(), DataType::bf16()}) {
        INFO((rs ? "rs " : "ss ") << in.name());
        OneWgmma o;
        o.rs = rs;
        o.in = in;
        Kernel k = one_wgmma(o);
        TensorMap t = make_tensors(k, {}, {"D", "X"}, 7);
        ThreadRunResult r = run_thread_level(k, t, sm90());
        Mat want = matrix(t.at("A")) * matrix(t.at("B"));
        CHECK((matrix(t.at("D")) - want).cwiseAbs().maxCoeff() < 1e-4);
        CHECK(r.report.findings.empty());
        // The async proxy's reads are no per-lane requests: only the threads' stores into
        // A_s / B_s count, each warp's 32 2-byte stores within one 64-byte span (two 32-byte A
        // rows, or one 64-byte B row, permuted by the swizzle): 16 words, one wavefront.
        CHECK(r.report.total.bank_conflicts == 0);
      }
    }
  }

  TEST_CASE("the accumulators land at wait_group: a read before it sees the old value") {
    OneWgmma o;
    o.read_before_wait = true;
    Kernel k = one_wgmma(o);
    TensorMap t = make_tensors(k, {}, {"D", "X"}, 9);
    run_thread_level(k, t, sm90());
    // Every thread copied its d_0 before the wait: the 0 it was cleared to.
    for (int64_t i = 0; i < 128; ++i) CHECK(t.at("X").at(i) == 0.0);
    Mat want = matrix(t.at("A")) * matrix(t.at("B"));
    CHECK((matrix(t.at("D")) - want).cwiseAbs().maxCoeff() < 1e-4);
  }

  TEST_CASE("reading an accumulator before wait_group is a wgmma race on the register") {
    OneWgmma o;
    o.read_before_wait = true;
    Kernel k = one_wgmma(o);
    TensorMap t = make_tensors(k, {}, {"D", "X"}, 9);
    ThreadRunResult r = run_thread_level(k, t, sm90());
    // `X[tx] = d[0]` between the commit and the wait: each of the 128 threads reads its d[0].
    REQUIRE(r.report.findings.size() == 1);
    const sim::Finding& f = r.report.findings[0];
    CHECK(f.kind == FindingKind::kWgmmaRace);
    CHECK(f.buffer == "d");
    CHECK(f.element == "[0]");
    CHECK(f.count == 128);
    CHECK(f.message.find("T.wgmma_wait_group(0)") != std::string::npos);
  }

  TEST_CASE("a descriptor with the wrong swizzle reads other elements: the result is wrong") {
    OneWgmma o;
    o.a_swizzle = 0;  // A_s is written with the 32-byte swizzle; read as 8 x 16-byte core matrices
    Kernel k = one_wgmma(o);
    TensorMap t = make_tensors(k, {}, {"D", "X"}, 7);
    run_thread_level(k, t, sm90());
    Mat want = matrix(t.at("A")) * matrix(t.at("B"));
    CHECK((matrix(t.at("D")) - want).cwiseAbs().maxCoeff() > 1e-2);
  }

  TEST_CASE("bug_wgmma_stage_race: the next stage is written while the last wgmma reads it") {
    // In-order schedule. Steps 1 and 2 load into the stage step 0 / step 1 read, still pending
    // (the wait_group 1 comes after the load): per load, A's 1024 elements (each read by the
    // warp owning its 16 rows) and B's 512 (read by all four warps) — 2048 and 1024 stores.
    BugRun r = run_corpus(false, "in-order");
    const auto& f = r.result.report.findings;
    REQUIRE(f.size() == 2);
    CHECK(f[0].kind == FindingKind::kWgmmaRace);
    CHECK(f[0].buffer == "A_s");
    CHECK(f[0].count == 2048);
    CHECK(f[0].element == "[0, 0]");
    CHECK(f[0].threads == std::vector<int>{0, 0});  // warp 0's wgmma, thread 0's store
    CHECK(f[0].message.find("T.wgmma_wait_group") != std::string::npos);
    CHECK(f[1].kind == FindingKind::kWgmmaRace);
    CHECK(f[1].buffer == "B_s");
    CHECK(f[1].count == 1024);
    const sim::SimReport& rep = r.result.report;
    CHECK(rep.sites.at(f[0].sites.at(0)).access.find("wgmma_ss_f16") != std::string::npos);
    CHECK(rep.sites.at(f[0].sites.at(1)).access == "store");
    // The simulated wgmma read its operands at issue, so the values are still right here.
    CHECK(r.matches_reference);
  }

  TEST_CASE("the wgmma race is found under every schedule and the fixed twin is clean") {
    for (const char* s : {"in-order", "reverse", "random:3", "random:11"}) {
      INFO(s);
      BugRun bug = run_corpus(false, s);
      REQUIRE_FALSE(bug.result.report.findings.empty());
      for (const sim::Finding& f : bug.result.report.findings) {
        CHECK(f.kind == FindingKind::kWgmmaRace);
      }
      BugRun fixed = run_corpus(true, s);
      CHECK(fixed.result.report.findings.empty());
      CHECK(fixed.matches_reference);
    }
  }
}

TEST_SUITE("wgmma: errors") {
  TEST_CASE("a descriptor that reaches past its buffer is a user error with the element") {
    // A read as K-major 64-byte swizzle with SBO 256: row 60 of warp 3 starts at (60 % 8) 64 +
    // (60 / 8) 256 = 2048 bytes, the end of the 1024-element (2048-byte) A_s.
    OneWgmma o;
    o.a_swizzle = 64;
    Kernel k = one_wgmma(o);
    TensorMap t = make_tensors(k, {}, {"D", "X"}, 7);
    CHECK_THROWS_WITH_AS(run_thread_level(k, t, sm90()),
                         doctest::Contains("reaches element (60, 0) at byte 2048"), UserError);
  }

  TEST_CASE("wgmma on sm80 is refused with the target to use") {
    Kernel k = one_wgmma({});
    TensorMap t = make_tensors(k, {}, {"D", "X"}, 7);
    ThreadRunOptions o = sm90();
    o.target = "sm80";
    CHECK_THROWS_WITH_AS(run_thread_level(k, t, o), doctest::Contains("run with --target sm90"),
                         UserError);
  }

  TEST_CASE("a bad N or swizzle is a user error naming the operand") {
    OneWgmma o;
    o.n = 12;
    CHECK_THROWS_WITH_AS(one_wgmma(o), doctest::Contains("n = 12; wgmma.m64nNk16 takes N = 8"),
                         UserError);
    o.n = 32;
    o.a_swizzle = 48;
    CHECK_THROWS_WITH_AS(one_wgmma(o), doctest::Contains("A's swizzle is 48 bytes"), UserError);
  }
}
