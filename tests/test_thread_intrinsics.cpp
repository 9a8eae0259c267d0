// The intrinsic table and the exact simulation of its instructions. Each test kernel moves
// values into registers with the fragment formulas of REFERENCE.md written out by hand (PTX ISA
// mma.m16n8k16 and ldmatrix, AMD MFMA for CDNA3), so the table's Fragments are checked end to
// end against the public specification, not against themselves.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <algorithm>

#include "core/builder.h"
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/intrinsics.h"
#include "core/printer.h"
#include "core/stmt_functor.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;

namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Mat matrix(const HostTensor& t) {
  Mat m(t.shape()[0], t.shape()[1]);
  for (int64_t i = 0; i < t.size(); ++i) m.data()[i] = t.at(i);
  return m;
}

/// D = A B + C through one mma.sync.m16n8k16 (inputs of `in`), fragments per REFERENCE.md.
Kernel mma_kernel(DataType in) {
  const DataType f32 = DataType::f32();
  KernelBuilder T("mma");
  auto A = T.tensor("A", {16, 16}, in);
  auto B = T.tensor("B", {16, 8}, in);
  auto C = T.tensor("C", {16, 8}, f32);
  auto D = T.tensor("D", {16, 8}, f32);
  T.kernel1(1, 32);
  Var lane = T.get_thread_binding();
  Expr g = lane / 4, t = lane % 4;
  auto a = T.alloc_local("a", {8}, in);
  auto b = T.alloc_local("b", {4}, in);
  auto c = T.alloc_local("c", {4}, f32);
  auto d = T.alloc_local("d", {4}, f32);
  // A element i: row g + 8 ((i >> 1) & 1), col 2t + (i & 1) + 8 (i >> 2).
  T.serial(8, [&](Var i) { a(i) = A(g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)); });
  // B element i: k = 2t + (i & 1) + 8 (i >> 1), n = g.
  T.serial(4, [&](Var i) { b(i) = B(2 * t + (i & 1) + 8 * (i >> 1), g); });
  // C/D element i: row g + 8 (i >> 1), col 2t + (i & 1).
  T.serial(4, [&](Var i) { c(i) = C(g + 8 * (i >> 1), 2 * t + (i & 1)); });
  T.mma_m16n8k16(d(0), a(0), b(0), c(0));
  T.serial(4, [&](Var i) { D(g + 8 * (i >> 1), 2 * t + (i & 1)) = d(i); });
  return T.finish();
}

/// D = A B + C through one MFMA on a wave64; m = 16 (16x16x16) or 32 (32x32x8).
Kernel mfma_kernel(int m) {
  const DataType f16 = DataType::f16(), f32 = DataType::f32();
  int k = m == 16 ? 16 : 8, regs = m == 16 ? 4 : 16;
  KernelBuilder T("mfma");
  auto A = T.tensor("A", {m, k}, f16);
  auto B = T.tensor("B", {k, m}, f16);
  auto C = T.tensor("C", {m, m}, f32);
  auto D = T.tensor("D", {m, m}, f32);
  T.kernel1(1, 64);
  Var l = T.get_thread_binding();
  auto a = T.alloc_local("a", {4}, f16);
  auto b = T.alloc_local("b", {4}, f16);
  auto c = T.alloc_local("c", {regs}, f32);
  auto d = T.alloc_local("d", {regs}, f32);
  // A[m][k] in lane m + M (k / 4), element k % 4; B[k][n] in lane n + M (k / 4).
  T.serial(4, [&](Var i) {
    a(i) = A(l % m, l / m * 4 + i);
    b(i) = B(l / m * 4 + i, l % m);
  });
  // 16x16x16: register r of lane l holds D[4 (l / 16) + r][l % 16];
  // 32x32x8: register r holds D[8 (r / 4) + 4 (l / 32) + r % 4][l % 32].
  auto row = [&](Expr r) { return m == 16 ? l / 16 * 4 + r : r / 4 * 8 + l / 32 * 4 + r % 4; };
  T.serial(regs, [&](Var r) { c(r) = C(row(r), l % m); });
  T.mfma(m, d(0), a(0), b(0), c(0));
  T.serial(regs, [&](Var r) { D(row(r), l % m) = d(r); });
  return T.finish();
}

/// Lane l addresses row l of a shared [32, 8] f16 tile holding S; O[l, r] is register element
/// r of lane l after ldmatrix_x<num>[_trans].
Kernel ldmatrix_kernel(int num, bool trans) {
  const DataType f16 = DataType::f16();
  KernelBuilder T("ldm");
  auto S = T.tensor("S", {32, 8}, f16);
  auto O = T.tensor("O", {32, 2 * num}, f16);
  T.kernel1(1, 32);
  Var tx = T.get_thread_binding();
  auto s = T.alloc_shared("s", {32, 8}, f16);
  auto r = T.alloc_local("r", {2 * num}, f16);
  T.serial(8, [&](Var c) { s(tx, c) = S(tx, c); });
  T.sync_threads();
  T.ldmatrix(num, trans, r(0), s(tx, 0));
  T.serial(2 * num, [&](Var e) { O(tx, e) = r(e); });
  return T.finish();
}

/// S[i, j] = 8 i + j: every element distinct and exact in f16.
TensorMap ldmatrix_tensors(const Kernel& k) {
  TensorMap t = make_tensors(k, {}, {"O"}, 0);
  HostTensor& S = t.at("S");
  for (int64_t i = 0; i < S.size(); ++i) S.set(i, static_cast<double>(i));
  return t;
}

ThreadRunOptions target(const char* name) {
  ThreadRunOptions o;
  o.target = name;
  o.workers = 1;
  return o;
}

}  // namespace

TEST_SUITE("intrinsics: the table") {
  TEST_CASE("spellings are the PTX and LLVM names") {
    CHECK(intrinsic_info(IntrinsicId::kMmaM16N8K16F16).cuda ==
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
    CHECK(intrinsic_info(IntrinsicId::kMmaM16N8K16BF16).cuda ==
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
    CHECK(intrinsic_info(IntrinsicId::kMmaM16N8K16F16).hip.empty());
    CHECK(intrinsic_info(IntrinsicId::kLdmatrixX4).cuda ==
          "ldmatrix.sync.aligned.m8n8.x4.shared.b16");
    CHECK(intrinsic_info(IntrinsicId::kLdmatrixX2Trans).cuda ==
          "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16");
    CHECK(intrinsic_info(IntrinsicId::kCpAsync16).cuda == "cp.async.cg.shared.global");
    CHECK(intrinsic_info(IntrinsicId::kCpAsync4).cuda == "cp.async.ca.shared.global");
    CHECK(intrinsic_info(IntrinsicId::kCpAsyncCommitGroup).cuda == "cp.async.commit_group");
    CHECK(intrinsic_info(IntrinsicId::kCpAsyncWaitGroup).cuda == "cp.async.wait_group");
    CHECK(intrinsic_info(IntrinsicId::kMfma16x16x16F16).hip ==
          "__builtin_amdgcn_mfma_f32_16x16x16f16");
    CHECK(intrinsic_info(IntrinsicId::kMfma32x32x8F16).hip ==
          "__builtin_amdgcn_mfma_f32_32x32x8f16");
    CHECK(intrinsic_info(IntrinsicId::kMfma32x32x8BF16).hip ==
          "__builtin_amdgcn_mfma_f32_32x32x8bf16_1k");
    CHECK(intrinsic_info(IntrinsicId::kMfma16x16x16F16).cuda.empty());
  }

  TEST_CASE("every register operand's layout covers each (lane, register) of a warp exactly once") {
    for (const IntrinsicInfo& info : intrinsic_table()) {
      for (const IntrinsicOperand& o : info.operands) {
        // wgmma's accumulator has N / 2 registers for its operand n: no fixed fragment (its
        // formula is checked in test_wgmma.cpp).
        if (o.kind != OperandKind::kRegisters || o.elements == 0) continue;
        INFO(info.name << " operand " << o.name);
        CHECK(o.layout.thread_extent() == info.warp_size);
        CHECK(o.layout.local_extent() == o.elements);
        CHECK(o.layout.input_size() == int64_t{info.warp_size} * o.elements);
        std::vector<int> seen(static_cast<size_t>(info.warp_size * o.elements), 0);
        for_each_index(o.layout.input_shape(), [&](const std::vector<int64_t>& idx) {
          auto [lane, reg] = o.layout.map_fragment(idx);
          ++seen[static_cast<size_t>(lane * o.elements + reg)];
        });
        CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(seen.size()));
      }
    }
  }

  TEST_CASE("instructions are found by name and by matrix shape") {
    CHECK(find_intrinsic("ldmatrix_x2") == IntrinsicId::kLdmatrixX2);
    CHECK_FALSE(find_intrinsic("ldmatrix_x3"));
    CHECK(find_matrix_intrinsic(true, 16, 8, 16, DataType::bf16()) ==
          IntrinsicId::kMmaM16N8K16BF16);
    CHECK(find_matrix_intrinsic(false, 32, 32, 8, DataType::f16()) == IntrinsicId::kMfma32x32x8F16);
    CHECK_FALSE(find_matrix_intrinsic(true, 16, 16, 16, DataType::f16()));
  }

  TEST_CASE("intrinsic calls print in the kernel language") {
    KernelBuilder T("printed");
    auto A = T.tensor("A", {128}, DataType::f16());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto s = T.alloc_shared("s", {32, 8}, DataType::f16());
    auto r = T.alloc_local("r", {8}, DataType::f16());
    auto acc = T.alloc_local("acc", {4}, DataType::f32());
    T.cp_async(s(tx / 2, tx % 2 * 4), A(tx * 4), 8);
    T.cp_async_commit_group();
    T.cp_async_wait_group(0);
    T.ldmatrix(4, false, r(0), s(tx, 0));
    T.mma_m16n8k16(acc(0), r(0), r(4), acc(0));
    std::string text = print_kernel(T.finish());
    CHECK(text.find("        T.cp_async_8(s[tx // 2, tx % 2 * 4], A[tx * 4], 8)\n") !=
          std::string::npos);
    CHECK(text.find("        T.cp_async_commit_group()\n        T.cp_async_wait_group(0)\n") !=
          std::string::npos);
    CHECK(text.find("        T.ldmatrix_x4(r[0], s[tx, 0])\n") != std::string::npos);
    CHECK(text.find("        T.mma_m16n8k16_f16(acc[0], r[0], r[4], acc[0])\n") !=
          std::string::npos);
  }

  TEST_CASE(
      "visitors see an intrinsic call's expressions and the mutator keeps it when unchanged") {
    KernelBuilder T("visited");
    auto A = T.tensor("A", {128}, DataType::f32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto s = T.alloc_shared("s", {128}, DataType::f32());
    T.cp_async(s(tx * 4), A(tx * 4), 16);
    Kernel k = T.finish();
    int mentions = 0;
    for_each_expr(k->body, [&](const Expr& e) { mentions += uses_var(e, tx); });
    CHECK(mentions == 2);  // s[tx * 4] and A[tx * 4]; src_size 16 does not mention tx
    class Identity : public StmtMutator {};
    CHECK(Identity().mutate(k->body).same_as(k->body));
  }

}  // TEST_SUITE

TEST_SUITE("intrinsics: argument errors") {
  TEST_CASE("an mma operand in shared memory is a user error naming the operand") {
    KernelBuilder T("bad");
    T.kernel1(1, 32);
    auto s = T.alloc_shared("A_s", {16}, DataType::f16());
    auto r = T.alloc_local("r", {8}, DataType::f16());
    auto acc = T.alloc_local("acc", {4}, DataType::f32());
    CHECK_THROWS_WITH_AS(T.mma_m16n8k16(acc(0), s(0), r(0), acc(0)),
                         doctest::Contains("T.mma_m16n8k16_f16 at test_thread_intrinsics.cpp:"),
                         UserError);
    CHECK_THROWS_WITH_AS(T.mma_m16n8k16(acc(0), s(0), r(0), acc(0)),
                         doctest::Contains("operand A must be an element of a local (register) "
                                           "buffer, but 'A_s' is a shared buffer"),
                         UserError);
  }

  TEST_CASE("ldmatrix of 32-bit elements is a user error") {
    KernelBuilder T("bad");
    T.kernel1(1, 32);
    auto s = T.alloc_shared("s", {32, 4}, DataType::f32());
    auto r = T.alloc_local("r", {2}, DataType::f32());
    CHECK_THROWS_WITH_AS(
        T.ldmatrix(1, false, r(0), s(0, 0)),
        doctest::Contains("operand dst needs 16-bit elements, but 'r' holds float32"), UserError);
    CHECK_THROWS_WITH_AS(T.ldmatrix(3, false, r(0), s(0, 0)),
                         doctest::Contains("x3 does not exist; load 1, 2 or 4 matrices"),
                         UserError);
  }

  TEST_CASE("cp.async needs one element type on both sides and a hardware width") {
    KernelBuilder T("bad");
    auto A = T.tensor("A", {64}, DataType::f16());
    T.kernel1(1, 32);
    auto s = T.alloc_shared("s", {64}, DataType::f32());
    CHECK_THROWS_WITH_AS(T.cp_async(s(0), A(0), 16),
                         doctest::Contains("dst 's' is float32 but src 'A' is float16"), UserError);
    CHECK_THROWS_WITH_AS(T.cp_async(s(0), A(0), 12),
                         doctest::Contains("12 bytes; cp.async copies 4, 8 or 16 bytes per thread"),
                         UserError);
    CHECK_THROWS_WITH_AS(T.cp_async_wait_group(-1), doctest::Contains("is negative"), UserError);
  }

}  // TEST_SUITE

TEST_SUITE("intrinsics: simulation semantics") {
  TEST_CASE("mma.sync.m16n8k16 f16 computes D = A B + C with the PTX fragment layouts") {
    for (DataType in : {DataType::f16(), DataType::bf16()}) {
      INFO("inputs " << in.name());
      Kernel k = mma_kernel(in);
      TensorMap t = make_tensors(k, {}, {"D"}, 3);
      ThreadRunResult r = run_thread_level(k, t, target("sm80"));
      Mat want = matrix(t.at("A")) * matrix(t.at("B")) + matrix(t.at("C"));
      Mat got = matrix(t.at("D"));
      CHECK((got - want).cwiseAbs().maxCoeff() < 1e-5);
      CHECK(r.report.findings.empty());
    }
  }

  TEST_CASE("MFMA 16x16x16 and 32x32x8 compute D = A B + C with the CDNA3 layouts") {
    for (int m : {16, 32}) {
      INFO("m = " << m);
      Kernel k = mfma_kernel(m);
      TensorMap t = make_tensors(k, {}, {"D"}, 5);
      ThreadRunResult r = run_thread_level(k, t, target("gfx942"));
      Mat want = matrix(t.at("A")) * matrix(t.at("B")) + matrix(t.at("C"));
      CHECK((matrix(t.at("D")) - want).cwiseAbs().maxCoeff() < 1e-5);
      CHECK(r.report.findings.empty());
      CHECK(r.warp_size == 64);
    }
  }

  TEST_CASE("an AMD instruction on an NVIDIA target is a user error") {
    Kernel k = mfma_kernel(16);
    TensorMap t = make_tensors(k, {}, {"D"}, 5);
    CHECK_THROWS_WITH_AS(
        run_thread_level(k, t, target("sm80")),
        doctest::Contains("is an AMD instruction (__builtin_amdgcn_mfma_f32_16x16x16f16), "
                          "but the target has 32-lane warps; run with --target gfx942"),
        UserError);
  }

  TEST_CASE("ldmatrix x1, x2, x4: lane l gets row l / 4, columns 2 (l % 4) and +1 of matrix j") {
    for (int num : {1, 2, 4}) {
      INFO("x" << num);
      Kernel k = ldmatrix_kernel(num, false);
      TensorMap t = ldmatrix_tensors(k);
      ThreadRunResult r = run_thread_level(k, t, target("sm80"));
      const HostTensor& O = t.at("O");
      for (int l = 0; l < 32; ++l) {
        for (int j = 0; j < num; ++j) {
          for (int e = 0; e < 2; ++e) {
            int row = 8 * j + l / 4, col = 2 * (l % 4) + e;
            CHECK(O.at(l * 2 * num + 2 * j + e) == 8 * row + col);
          }
        }
      }
      CHECK(r.report.findings.empty());
      // One ldmatrix request of `num` conflict-free phases (16-byte rows).
      const sim::SimReport& rep = r.report;
      bool found = false;
      for (size_t s = 0; s < rep.sites.size(); ++s) {
        if (rep.sites[s].access == "ldmatrix_x" + std::to_string(num) + " src") {
          CHECK(rep.per_site[s].shared_requests == 1);
          CHECK(rep.per_site[s].wavefronts == num);
          found = true;
        }
      }
      CHECK(found);
    }
  }

  TEST_CASE("ldmatrix .trans: lane l gets column l / 4, rows 2 (l % 4) and +1 of matrix j") {
    for (int num : {1, 2, 4}) {
      INFO("x" << num << ".trans");
      Kernel k = ldmatrix_kernel(num, true);
      TensorMap t = ldmatrix_tensors(k);
      run_thread_level(k, t, target("sm80"));
      const HostTensor& O = t.at("O");
      for (int l = 0; l < 32; ++l) {
        for (int j = 0; j < num; ++j) {
          for (int e = 0; e < 2; ++e) {
            int row = 8 * j + 2 * (l % 4) + e, col = l / 4;
            CHECK(O.at(l * 2 * num + 2 * j + e) == 8 * row + col);
          }
        }
      }
    }
  }

  TEST_CASE("ldmatrix by part of a warp is barrier divergence") {
    KernelBuilder T("ldm_partial");
    auto O = T.tensor("O", {32}, DataType::f16());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto s = T.alloc_shared("s", {32, 8}, DataType::f16());
    auto r = T.alloc_local("r", {2}, DataType::f16());
    T.serial(8, [&](Var c) { s(tx, c) = make_const(DataType::f16(), 1); });
    T.sync_threads();
    T.if_then(tx < 16, [&] { T.ldmatrix(1, false, r(0), s(tx, 0)); });
    O(tx) = make_const(DataType::f16(), 0);
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"O"}, 0);
    ThreadRunResult res = run_thread_level(k, t, target("sm80"));
    auto div = res.report.of_kind(sim::FindingKind::kBarrierDivergence);
    REQUIRE(div.size() == 1);
    CHECK(div[0]->message.find("the warp-collective T.ldmatrix_x1") != std::string::npos);
    CHECK(div[0]->message.find("is executed by lanes 0-15 of warp 0") != std::string::npos);
  }

  TEST_CASE("cp.async zero-fills past src_size and reads nothing when src_size is 0") {
    // Lanes 0-15 copy A[4l .. 4l + 3] with src_size 16 (even lanes) or 8 (odd lanes: the last two
    // floats are zero); lanes 16-31 address past A's end with src_size 0: no read, no finding,
    // four zeros.
    KernelBuilder T("zfill");
    auto A = T.tensor("A", {64}, DataType::f32());
    auto B = T.tensor("B", {128}, DataType::f32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto s = T.alloc_shared("s", {128}, DataType::f32());
    Expr size =
        if_then_else(tx < 16, if_then_else(tx % 2 == 0, make_int(16), make_int(8)), make_int(0));
    T.cp_async(s(tx * 4), A(tx * 4), 16, size);
    T.cp_async_commit_group();
    T.cp_async_wait_group(0);
    T.sync_threads();
    T.serial(4, [&](Var j) { B(tx * 4 + j) = s(tx * 4 + j); });
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"B"}, 2);
    ThreadRunResult r = run_thread_level(k, t, target("sm80"));
    CHECK(r.report.findings.empty());
    for (int l = 0; l < 32; ++l) {
      for (int j = 0; j < 4; ++j) {
        bool copied = l < 16 && (l % 2 == 0 || j < 2);
        CHECK(t.at("B").at(4 * l + j) == (copied ? t.at("A").at(4 * l + j) : 0.0));
      }
    }
  }

  TEST_CASE("cp.async.wait_group 1 lands all but the newest group") {
    // Two groups per thread: s[0:32] then s[32:64]. After wait_group(1) the first is readable;
    // reading the second is an async race (the copy of thread t to s[32 + t]).
    KernelBuilder T("groups");
    auto A = T.tensor("A", {64}, DataType::f32());
    auto B = T.tensor("B", {64}, DataType::f32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto s = T.alloc_shared("s", {64}, DataType::f32());
    T.cp_async(s(tx), A(tx), 4);
    T.cp_async_commit_group();
    T.cp_async(s(tx + 32), A(tx + 32), 4);
    T.cp_async_commit_group();
    T.cp_async_wait_group(1);
    B(tx) = s(tx);
    B(tx + 32) = s(tx + 32);
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"B"}, 2);
    ThreadRunResult r = run_thread_level(k, t, target("sm80"));
    REQUIRE(r.report.findings.size() == 1);
    const sim::Finding& f = r.report.findings[0];
    CHECK(f.kind == sim::FindingKind::kAsyncRace);
    CHECK(f.element == "[32]");
    CHECK(f.count == 32);
    CHECK(t.at("B").at(5) == t.at("A").at(5));
  }

  TEST_CASE("a cp.async instruction counts its global and shared sides") {
    // 32 lanes copy 16 consecutive bytes each: global 512 bytes = 16 sectors (ideal 16); shared
    // 16-byte writes in 4 quarter-warp phases of 128 contiguous bytes: 4 wavefronts, ideal 4.
    KernelBuilder T("copy16");
    auto A = T.tensor("A", {128}, DataType::f32());
    auto B = T.tensor("B", {128}, DataType::f32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto s = T.alloc_shared("s", {128}, DataType::f32());
    T.cp_async(s(tx * 4), A(tx * 4), 16);
    T.cp_async_commit_group();
    T.cp_async_wait_group(0);
    T.serial(4, [&](Var j) { B(tx * 4 + j) = s(tx * 4 + j); });
    Kernel k = T.finish();
    TensorMap t = make_tensors(k, {}, {"B"}, 2);
    ThreadRunResult r = run_thread_level(k, t, target("sm80"));
    const sim::SimReport& rep = r.report;
    for (size_t s = 0; s < rep.sites.size(); ++s) {
      if (rep.sites[s].access == "cp_async_16 src") {
        CHECK(rep.per_site[s].global_requests == 1);
        CHECK(rep.per_site[s].sectors == 16);
        CHECK(rep.per_site[s].ideal_sectors == 16);
      }
      if (rep.sites[s].access == "cp_async_16 dst") {
        CHECK(rep.per_site[s].shared_requests == 1);
        CHECK(rep.per_site[s].wavefronts == 4);
        CHECK(rep.per_site[s].ideal_wavefronts == 4);
      }
    }
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("the thread-level tensor-core GEMM matches its reference without findings") {
    const Example* e = find_example("gemm_mma");
    REQUIRE(e != nullptr);
    Params p = make_params(*e, {{"M", "128"}, {"N", "64"}, {"K", "64"}});
    Kernel k = e->build(p);
    TensorMap t = make_tensors(k, {}, {"C"}, 9), expected = t;
    e->reference(p, expected);
    ThreadRunResult r = run_thread_level(k, t, target("sm80"));
    CHECK(compare(t.at("C"), expected.at("C"), Tolerance::for_dtype(DataType::f32())).passed);
    CHECK(r.report.findings.empty());
    // Swizzled tiles: every ldmatrix phase is conflict-free.
    for (size_t s = 0; s < r.report.sites.size(); ++s) {
      if (r.report.sites[s].access.rfind("ldmatrix", 0) == 0) {
        CHECK(r.report.per_site[s].bank_conflicts == 0);
      }
    }
  }

}  // TEST_SUITE
