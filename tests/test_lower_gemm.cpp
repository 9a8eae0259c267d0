// T.gemm lowering: the warp partition of each policy, the fragments inference records for C and
// for register operands (checked element by element against the PTX and CDNA3 tables), the
// instruction choice, the errors of impossible splits, and end-to-end runs of the gemm examples
// at thread level against the tile level.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/builder.h"
#include "core/builtin_layouts.h"
#include "core/gemm_partition.h"
#include "core/op_gemm.h"
#include "core/passes.h"
#include "core/printer.h"
#include "core/target.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
#include "tests/cli_runner.h"

using namespace tessel;

namespace {

using TL = std::pair<int64_t, int64_t>;

const DataType kF16 = DataType::f16();
const DataType kF32 = DataType::f32();

/// sm80's mma.m16n8k16 split for an M x N tile.
WarpPartition mma_split(int64_t M, int64_t N, int threads, GemmWarpPolicy policy) {
  return compute_warp_partition("kernel 'k': T.gemm", M, N, threads, 32, policy, 16, 8,
                                "mma_m16n8k16_f16");
}

/// A gemm on fresh buffers: A (M, K) or (K, M), B (K, N) or (N, K), C (M, N) f32 fragment.
TileOpRef make_gemm(int64_t M, int64_t N, int64_t K, DataType in, Scope a_scope, Scope b_scope,
                    GemmOptions o = {}) {
  Buffer A = BufferNode::make(
      "A_s", o.transpose_A ? std::vector<Expr>{K, M} : std::vector<Expr>{M, K}, in, a_scope);
  Buffer B = BufferNode::make(
      "B_s", o.transpose_B ? std::vector<Expr>{N, K} : std::vector<Expr>{K, N}, in, b_scope);
  Buffer C = BufferNode::make("C_local", {M, N}, in.is_integral() ? DataType::i32() : kF32,
                              Scope::kFragment);
  return GemmOp::make(A, B, C, o, SourceLoc{"g.py", 7, 5});
}

GemmPlan plan(const TileOpRef& op, const char* target, int threads) {
  return plan_gemm(static_cast<const GemmOp&>(*op), "k", find_target(target), threads);
}

std::string user_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no user error)";
}

/// One gemm kernel for the end-to-end runs: C (+)= op(A) op(B) over K in steps of bK, with
/// A and/or B moved from shared memory into a fragment first when asked.
struct GemmCase {
  const char* target = "sm80";
  int64_t M = 128, N = 128, K = 64;
  int64_t bM = 64, bN = 64, bK = 32;
  int threads = 128;
  DataType in = kF16;
  GemmOptions o;
  bool a_in_registers = false;
  bool b_in_registers = false;
};

Kernel build_case(const GemmCase& c) {
  using Shape = std::vector<Expr>;
  auto shape = [](bool transposed, int64_t rows, int64_t cols) {
    return transposed ? Shape{cols, rows} : Shape{rows, cols};
  };
  DataType acc = c.in.is_integral() ? DataType::i32() : kF32;
  KernelBuilder T("gemm_case");
  auto A = T.tensor("A", shape(c.o.transpose_A, c.M, c.K), c.in);
  auto B = T.tensor("B", shape(c.o.transpose_B, c.K, c.N), c.in);
  auto C = T.tensor("C", {c.M, c.N}, acc);
  auto [bx, by] = T.kernel2(c.N / c.bN, c.M / c.bM, c.threads);
  auto A_s = T.alloc_shared("A_s", shape(c.o.transpose_A, c.bM, c.bK), c.in);
  auto B_s = T.alloc_shared("B_s", shape(c.o.transpose_B, c.bK, c.bN), c.in);
  Buffer a = A_s, b = B_s;
  if (c.a_in_registers) a = T.alloc_fragment("A_f", shape(c.o.transpose_A, c.bM, c.bK), c.in);
  if (c.b_in_registers) b = T.alloc_fragment("B_f", shape(c.o.transpose_B, c.bK, c.bN), c.in);
  auto C_l = T.alloc_fragment("C_l", {c.bM, c.bN}, acc);
  if (!c.o.clear_accum) T.clear(C_l);
  T.serial(
      c.K / c.bK,
      [&](Var k) {
        T.copy(c.o.transpose_A ? A(k * c.bK, by * c.bM) : A(by * c.bM, k * c.bK), A_s);
        T.copy(c.o.transpose_B ? B(bx * c.bN, k * c.bK) : B(k * c.bK, bx * c.bN), B_s);
        if (c.a_in_registers) T.copy(A_s, a);
        if (c.b_in_registers) T.copy(B_s, b);
        T.gemm(a, b, C_l, c.o);
      },
      "k");
  T.copy(C_l, C(by * c.bM, bx * c.bN));
  return T.finish();
}

struct BothLevels {
  Comparison c;           ///< thread level against tile level
  sim::SimReport report;  ///< the thread level's simulator report
  std::string lowered;    ///< the thread-level IR
};

/// Lowers the case for its target and runs both levels on the same random inputs.
BothLevels run_both(const GemmCase& gc) {
  Kernel kernel = build_case(gc);
  LoweredKernel low = lower_kernel(kernel, find_target(gc.target));
  TensorMap thread = make_tensors(kernel, {}, {"C"}, 7);
  TensorMap tile = thread;
  run_tile_level(kernel, tile);
  ThreadRunOptions options;
  options.target = gc.target;
  ThreadRunResult r = run_thread_level(low.kernel, thread, options);
  const HostTensor& out = thread.at("C");
  return {compare(out, tile.at("C"), Tolerance::for_dtype(out.dtype())), r.report,
          print_kernel(low.kernel)};
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_SUITE("gemm warp partition") {
  TEST_CASE("Square splits a 128 x 128 tile over 4 warps 2 x 2") {
    // (1, 4): 128 x 32, ratio 4; (2, 2): 64 x 64, ratio 1; (4, 1): 32 x 128, ratio 4.
    WarpPartition p = mma_split(128, 128, 128, GemmWarpPolicy::kSquare);
    CHECK(p.m_warps == 2);
    CHECK(p.n_warps == 2);
    CHECK(p.warp_m == 64);
    CHECK(p.warp_n == 64);
  }

  TEST_CASE("Square breaks a tie towards fewer warps along M") {
    // 8 warps: (2, 4) is 64 x 32 and (4, 2) is 32 x 64, both ratio 2; (1, 8) and (8, 1) ratio 8.
    WarpPartition p = mma_split(128, 128, 256, GemmWarpPolicy::kSquare);
    CHECK(p.m_warps == 2);
    CHECK(p.n_warps == 4);
    CHECK(p.warp_m == 64);
    CHECK(p.warp_n == 32);
  }

  TEST_CASE("Square skips splits whose warp tile is not a multiple of the instruction") {
    // 16 x 64 over 4 warps: (2, 2) and (4, 1) leave 8 or 4 rows per warp (< 16); only (1, 4),
    // 16 x 16 per warp, fits.
    WarpPartition p = mma_split(16, 64, 128, GemmWarpPolicy::kSquare);
    CHECK(p.m_warps == 1);
    CHECK(p.n_warps == 4);
    CHECK(p.warp_n == 16);
  }

  TEST_CASE("FullRow puts every warp along M, FullCol along N") {
    WarpPartition row = mma_split(128, 128, 128, GemmWarpPolicy::kFullRow);
    CHECK(row.m_warps == 4);
    CHECK(row.n_warps == 1);
    CHECK(row.warp_m == 32);  // 128 / 4
    CHECK(row.warp_n == 128);
    WarpPartition col = mma_split(128, 128, 128, GemmWarpPolicy::kFullCol);
    CHECK(col.m_warps == 1);
    CHECK(col.n_warps == 4);
    CHECK(col.warp_n == 32);
  }

  TEST_CASE("MFMA 16x16 on wave64: 256 threads are 4 waves") {
    // 64 x 128: (1, 4) 64 x 32 and (2, 2) 32 x 64 tie at ratio 2, (4, 1) 16 x 128 is ratio 8.
    WarpPartition p = compute_warp_partition("k", 64, 128, 256, 64, GemmWarpPolicy::kSquare, 16, 16,
                                             "mfma_16x16x16_f16");
    CHECK(p.m_warps == 1);
    CHECK(p.n_warps == 4);
    CHECK(p.warp_m == 64);
    CHECK(p.warp_n == 32);
  }
}

TEST_SUITE("gemm warp partition errors") {
  TEST_CASE("a tile too small for the warps names M, N, threads, policy and a thread count") {
    // 16 x 16 over 4 warps: (1, 4) leaves 4 columns (< 8), (2, 2) 8 rows (< 16), (4, 1) 4 rows.
    // 2 warps as (1, 2) give 16 x 8: threads=64 fits.
    std::string msg = user_error_of([] { mma_split(16, 16, 128, GemmWarpPolicy::kSquare); });
    CHECK(msg ==
          "kernel 'k': T.gemm: cannot split the 16 x 16 C tile (M=16, N=16) over 4 warps "
          "(threads=128) with policy Square: each warp's tile must be a multiple of 16 x 8 "
          "(mma_m16n8k16_f16); use threads=64");
  }

  TEST_CASE("an impossible FullRow suggests fewer threads or the Square policy") {
    // 64 rows over 8 warps is 8 rows (< 16); 4 warps give 16 rows each; Square finds (1, 8):
    // 64 x 8 per warp.
    std::string msg = user_error_of([] { mma_split(64, 64, 256, GemmWarpPolicy::kFullRow); });
    CHECK(msg.find("over 8 warps (threads=256) with policy FullRow") != std::string::npos);
    CHECK(msg.find("use threads=128, or policy=T.GemmWarpPolicy.Square") != std::string::npos);
  }

  TEST_CASE("threads that are not whole wavefronts are a user error") {
    std::string msg = user_error_of([] {
      compute_warp_partition("kernel 'k': T.gemm", 64, 64, 96, 64, GemmWarpPolicy::kSquare, 16, 16,
                             "mfma_16x16x16_f16");
    });
    CHECK(msg.find("threads=96 is not a positive multiple of the warp size 64") !=
          std::string::npos);
  }

  TEST_CASE("a fragment operand on the scalar path names the buffer and the reason") {
    TileOpRef g = make_gemm(64, 64, 32, kF32, Scope::kFragment, Scope::kShared);
    std::string msg = user_error_of([&] { plan(g, "sm80", 128); });
    CHECK(msg.find("kernel 'k': T.gemm at g.py:7:5: 'A_s' is a fragment") != std::string::npos);
    CHECK(msg.find("float32 inputs") != std::string::npos);
    CHECK(msg.find("allocate 'A_s' with T.alloc_shared") != std::string::npos);
  }

  TEST_CASE("a tile too small for the block's warps is reported by the plan") {
    TileOpRef g = make_gemm(16, 16, 16, kF16, Scope::kShared, Scope::kShared);
    std::string msg = user_error_of([&] { plan(g, "sm80", 128); });
    CHECK(msg.find("kernel 'k': T.gemm at g.py:7:5: cannot split the 16 x 16 C tile") !=
          std::string::npos);
  }
}

TEST_SUITE("gemm instruction choice") {
  TEST_CASE("f16 on sm80 uses mma.sync, on gfx942 MFMA 16x16x16") {
    TileOpRef g = make_gemm(128, 128, 32, kF16, Scope::kShared, Scope::kShared);
    GemmPlan nv = plan(g, "sm80", 128);
    CHECK(nv.path == GemmPath::kMma);
    CHECK(intrinsic_info(nv.instruction).name == "mma_m16n8k16_f16");
    CHECK(nv.tiles_m() == 4);  // warp tile 64 x 64 = 4 x 8 tiles of 16 x 8
    CHECK(nv.tiles_n() == 8);
    CHECK(nv.k_steps() == 2);  // 32 / 16
    GemmPlan amd = plan(g, "gfx942", 256);
    CHECK(amd.path == GemmPath::kMfma);
    CHECK(intrinsic_info(amd.instruction).name == "mfma_16x16x16_f16");
    CHECK(amd.tiles_n() == 4);  // 64 / 16
  }

  TEST_CASE("float32 inputs and ragged tiles fall back to scalar multiply-adds") {
    CHECK(plan(make_gemm(64, 64, 32, kF32, Scope::kShared, Scope::kShared), "sm80", 128).why_simt ==
          "float32 inputs (the matrix instructions take float16 or bfloat16)");
    CHECK(plan(make_gemm(64, 60, 32, kF16, Scope::kShared, Scope::kShared), "sm80", 128).why_simt ==
          "N = 60 is not a multiple of 8");
    CHECK(
        plan(make_gemm(64, 64, 24, kF16, Scope::kShared, Scope::kShared), "gfx942", 256).why_simt ==
        "K = 24 is not a multiple of 16");
  }
}

TEST_SUITE("gemm fragments") {
  TEST_CASE("C of a 128 x 128 tile on 128 threads (sm80): element (77, 90) by hand") {
    // 2 x 2 warps of 64 x 64, 4 x 8 mma tiles each. Row 77: wm = 1, row 13 of tile ti = 0;
    // col 90: wn = 1, col 26 = tile tj = 3, col 2 in it. PTX C layout: g = 13 % 8 = 5,
    // 2t = 2 -> t = 1, lane 4g + t = 21, element 2 * (13 / 8) + 0 = 2. Warp 1 * 2 + 1 = 3:
    // thread 96 + 21 = 117; register (ti * 8 + tj) * 4 + 2 = 14.
    GemmPlan p = plan(make_gemm(128, 128, 32, kF16, Scope::kShared, Scope::kShared), "sm80", 128);
    Fragment c = gemm_c_fragment(p);
    CHECK(c.thread_extent() == 128);
    CHECK(c.local_extent() == 128);  // 32 tiles x 4 registers
    CHECK(c.map_fragment({77, 90}) == TL{117, 14});
  }

  TEST_CASE("C on sm80: every register of every thread is the PTX element of its tile") {
    GemmPlan p = plan(make_gemm(128, 128, 32, kF16, Scope::kShared, Scope::kShared), "sm80", 128);
    Fragment c = gemm_c_fragment(p);
    for (int64_t thread = 0; thread < 128; ++thread) {
      int64_t warp = thread / 32, lane = thread % 32, g = lane >> 2, t = lane % 4;
      for (int64_t r = 0; r < 128; ++r) {
        int64_t tile = r / 4, e = r % 4, ti = tile / 8, tj = tile % 8;
        int64_t row = (warp / 2) * 64 + ti * 16 + g + 8 * (e >> 1);
        int64_t col = (warp % 2) * 64 + tj * 8 + 2 * t + (e & 1);
        REQUIRE(c.map_fragment({row, col}) == TL{thread, r});
      }
    }
  }

  TEST_CASE("C on gfx942 (4 waves): element (77, 90) by hand from the MFMA D layout") {
    // 2 x 2 waves of 64 x 64, 4 x 4 MFMA tiles. Row 77: wm = 1, row 13 of ti = 0; col 90:
    // wn = 1, col 26 = tj = 1, col 10. D[4 (l / 16) + r][l % 16]: l = 10 + 16 * (13 / 4) = 58,
    // r = 13 % 4 = 1. Thread 3 * 64 + 58 = 250; register (0 * 4 + 1) * 4 + 1 = 5.
    GemmPlan p = plan(make_gemm(128, 128, 32, kF16, Scope::kShared, Scope::kShared), "gfx942", 256);
    Fragment c = gemm_c_fragment(p);
    CHECK(c.thread_extent() == 256);
    CHECK(c.local_extent() == 64);  // 16 tiles x 4
    CHECK(c.map_fragment({77, 90}) == TL{250, 5});
  }

  TEST_CASE("A in registers (rs, sm80) is replicated over the two warps of a warp row") {
    // 128 x 32 A, warps 2 x 2. Element (77, 25): wm = 1 -> warps 2 and 3. Row 13 of ti = 0,
    // col 9 of tk = 1. PTX A: g = 13 % 8 = 5, t = (9 % 8) / 2 = 0 -> lane 20; element
    // (9 % 2) + 2 (13 / 8) + 4 (9 / 8) = 7. Register (ti * 2 + tk) * 8 + 7 = 15.
    GemmPlan p = plan(make_gemm(128, 128, 32, kF16, Scope::kFragment, Scope::kShared), "sm80", 128);
    Fragment a = gemm_a_fragment(p, false, kF16);
    CHECK(a.replicate() == 2);
    CHECK(a.local_extent() == 64);  // 4 x 2 tiles x 8
    CHECK(a.map_fragment({77, 25}, 0) == TL{64 + 20, 15});
    CHECK(a.map_fragment({77, 25}, 1) == TL{96 + 20, 15});
  }

  TEST_CASE("B in registers (sr, sm80) is replicated over the two warps of a warp column") {
    // 32 x 128 B, warps 2 x 2. Element (25, 90): wn = 1 -> warps 1 and 3. Col 26 = tj 3, n 2;
    // row 25 = tk 1, k 9. PTX B: lane 4 n + (k % 8) / 2 = 8, element k % 2 + 2 (k / 8) = 3.
    // Register (tk * 8 + tj) * 4 + 3 = 47.
    GemmPlan p = plan(make_gemm(128, 128, 32, kF16, Scope::kShared, Scope::kFragment), "sm80", 128);
    Fragment b = gemm_b_fragment(p, false, kF16);
    CHECK(b.replicate() == 2);
    CHECK(b.map_fragment({25, 90}, 0) == TL{32 + 8, 47});
    CHECK(b.map_fragment({25, 90}, 1) == TL{96 + 8, 47});
  }

  TEST_CASE("a transposed A fragment is the plain one read with swapped indices") {
    GemmOptions o;
    o.transpose_A = true;
    GemmPlan p =
        plan(make_gemm(64, 64, 32, kF16, Scope::kFragment, Scope::kShared, o), "sm80", 128);
    Fragment plain = gemm_a_fragment(p, false, kF16);
    Fragment t = gemm_a_fragment(p, true, kF16);
    CHECK(t.input_shape() == std::vector<int64_t>{32, 64});
    // Same threads; registers renumbered: (ti, tk) is copy ti * 2 + tk plain, tk * 2 + ti
    // transposed (2 x 2 warps of 32 x 32: 2 row tiles, 2 k steps). Element (m 40, k 20): warp
    // row 1, row 8 of ti = 0; col 4 of tk = 1: plain copy 1, transposed copy 2. PTX A element
    // (4 % 2) + 2 (8 / 8) + 4 (4 / 8) = 2 in both.
    CHECK(plain.map_fragment({40, 20}).first == t.map_fragment({20, 40}).first);
    CHECK(plain.map_fragment({40, 20}).second == 8 + 2);
    CHECK(t.map_fragment({20, 40}).second == 16 + 2);
  }

  TEST_CASE("the scalar path gives C element e = i * N + j to thread e % threads") {
    // 64 x 60 on 128 threads: element (3, 17) is e = 197 -> thread 69, register 1.
    GemmPlan p = plan(make_gemm(64, 60, 32, kF16, Scope::kShared, Scope::kShared), "sm80", 128);
    Fragment c = gemm_c_fragment(p);
    CHECK(c.map_fragment({3, 17}) == TL{69, 1});
    CHECK(c.local_extent() == 30);  // 3840 / 128
  }
}

TEST_SUITE("gemm examples at thread level") {
  TEST_CASE("gemm on sm80 equals the tile level with conflict-free ldmatrix reads") {
    CliResult r = run_tessel({"run", "gemm", "-D", "M=256", "-D", "N=256", "-D", "K=128", "--level",
                              "thread", "--target", "sm80", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["tile"]["matches"] == true);
    CHECK(j["sim"]["findings"].empty());
    // Every ldmatrix.x4 reads 4 matrices of 8 rows x 16 bytes, one phase each: with the
    // swizzle the 8 rows of a matrix fall in 8 distinct groups of 4 banks, so a request costs
    // 4 wavefronts and none is a conflict.
    int ldmatrix_sites = 0;
    for (const auto& op : j["sim"]["per_op"]) {
      std::string access = op["site"]["access"];
      if (access.rfind("ldmatrix", 0) != 0) continue;
      ++ldmatrix_sites;
      CHECK(op["shared"]["requests"].get<int64_t>() > 0);
      CHECK(op["shared"]["bank_conflicts"] == 0);
      CHECK(op["shared"]["wavefronts"] == 4 * op["shared"]["requests"].get<int64_t>());
    }
    // A and B, at the gemm's 3 sites: K = 128 is 4 k-tiles > 2 = num_stages - 1, so the pipeline
    // is peeled (the main loop and 2 epilogue iterations).
    CHECK(ldmatrix_sites == 2 * 3);
  }

  TEST_CASE("gemm lowered for sm80 uses ldmatrix (trans for B stored K x N) and mma.sync") {
    CliResult r = run_tessel(
        {"lower", "gemm", "-D", "M=128", "-D", "N=128", "-D", "K=64", "--target", "sm80"});
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "T.ldmatrix_x4(A_shared_frag"));
    CHECK(has(r.out, "T.ldmatrix_x4_trans(B_shared_frag"));
    CHECK(has(r.out, "T.mma_m16n8k16_f16(C_local["));
  }

  TEST_CASE("gemm on gfx942 equals the tile level and uses MFMA") {
    CliResult r = run_tessel({"run", "gemm", "-D", "M=256", "-D", "N=256", "-D", "K=128", "--level",
                              "thread", "--target", "gfx942", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["tile"]["matches"] == true);
    CHECK(j["sim"]["findings"].empty());
    CliResult low = run_tessel(
        {"lower", "gemm", "-D", "M=128", "-D", "N=128", "-D", "K=64", "--target", "gfx942"});
    CHECK(has(low.out, "T.mfma_16x16x16_f16(C_local["));
  }

  TEST_CASE("gemm_transpose_b equals the tile level on sm80 and gfx942") {
    for (const char* target : {"sm80", "gfx942"}) {
      CAPTURE(target);
      CliResult r = run_tessel({"run", "gemm_transpose_b", "-D", "M=128", "-D", "N=256", "-D",
                                "K=128", "--level", "thread", "--target", target, "--json"});
      REQUIRE(r.status == 0);
      auto j = nlohmann::json::parse(r.out);
      CHECK(j["passed"] == true);
      CHECK(j["tile"]["matches"] == true);
      CHECK(j["sim"]["findings"].empty());
    }
  }

  TEST_CASE("gemm_transpose_b on sm80 reads B stored (N, K) with plain ldmatrix, conflict-free") {
    CliResult low = run_tessel({"lower", "gemm_transpose_b", "-D", "M=128", "-D", "N=128", "-D",
                                "K=64", "--target", "sm80"});
    CHECK(has(low.out, "T.ldmatrix_x4(B_shared_frag"));
    CHECK(!has(low.out, "ldmatrix_x4_trans"));
    CliResult r = run_tessel({"run", "gemm_transpose_b", "-D", "M=128", "-D", "N=128", "-D", "K=64",
                              "--level", "thread", "--target", "sm80", "--json"});
    auto j = nlohmann::json::parse(r.out);
    for (const auto& op : j["sim"]["per_op"]) {
      std::string access = op["site"]["access"];
      if (access.rfind("ldmatrix", 0) == 0) CHECK(op["shared"]["bank_conflicts"] == 0);
    }
  }

  TEST_CASE("gemm_rs (A in registers) equals the tile level on sm80 and gfx942") {
    for (const char* target : {"sm80", "gfx942"}) {
      CAPTURE(target);
      CliResult r = run_tessel({"run", "gemm_rs", "-D", "M=128", "-D", "N=128", "-D", "K=128",
                                "--level", "thread", "--target", target, "--json"});
      REQUIRE(r.status == 0);
      auto j = nlohmann::json::parse(r.out);
      CHECK(j["passed"] == true);
      CHECK(j["tile"]["matches"] == true);
      CHECK(j["sim"]["findings"].empty());
    }
    // The mma reads A straight from A_local's registers: no ldmatrix of A.
    CliResult low = run_tessel(
        {"lower", "gemm_rs", "-D", "M=128", "-D", "N=128", "-D", "K=64", "--target", "sm80"});
    CHECK(has(low.out, "T.mma_m16n8k16_f16(C_local["));
    CHECK(has(low.out, ", A_local["));
    CHECK(!has(low.out, "T.ldmatrix_x4(A_shared_frag"));
  }

  TEST_CASE("bfloat16 inputs use the bf16 mma") {
    CliResult r = run_tessel({"run", "gemm", "-D", "M=128", "-D", "N=128", "-D", "K=64", "-D",
                              "dtype=bfloat16", "--level", "thread", "--target", "sm80", "--json"});
    REQUIRE(r.status == 0);
    CHECK(nlohmann::json::parse(r.out)["tile"]["matches"] == true);
    CliResult low = run_tessel({"lower", "gemm", "-D", "M=128", "-D", "N=128", "-D", "K=64", "-D",
                                "dtype=bfloat16", "--target", "sm80"});
    CHECK(has(low.out, "T.mma_m16n8k16_bf16("));
  }
}

TEST_SUITE("gemm variants at thread level") {
  TEST_CASE("A stored (K, M) is read with ldmatrix.trans, conflict-free, on sm80") {
    GemmCase c;
    c.o.transpose_A = true;
    BothLevels r = run_both(c);
    CHECK(r.c.passed);
    CHECK(r.report.findings.empty());
    CHECK(r.report.total.bank_conflicts == 0);
    CHECK(has(r.lowered, "T.ldmatrix_x4_trans(A_s_frag"));
  }

  TEST_CASE("A stored (K, M) and B stored (N, K) on gfx942") {
    GemmCase c;
    c.target = "gfx942";
    c.threads = 256;
    c.o.transpose_A = true;
    c.o.transpose_B = true;
    BothLevels r = run_both(c);
    CHECK(r.c.passed);
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("B in registers (sr) and both in registers (rr) on sm80 and gfx942") {
    for (const char* target : {"sm80", "gfx942"}) {
      for (bool a_regs : {false, true}) {
        CAPTURE(target);
        CAPTURE(a_regs);
        GemmCase c;
        c.target = target;
        c.b_in_registers = true;
        c.a_in_registers = a_regs;
        BothLevels r = run_both(c);
        CHECK(r.c.passed);
        CHECK(r.report.findings.empty());
      }
    }
  }

  TEST_CASE("a transposed A fragment (rs, A stored (K, M)) on sm80") {
    GemmCase c;
    c.o.transpose_A = true;
    c.a_in_registers = true;
    BothLevels r = run_both(c);
    CHECK(r.c.passed);
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("FullRow and FullCol policies on sm80") {
    for (GemmWarpPolicy policy : {GemmWarpPolicy::kFullRow, GemmWarpPolicy::kFullCol}) {
      CAPTURE(policy_name(policy));
      GemmCase c;
      c.o.policy = policy;
      BothLevels r = run_both(c);
      CHECK(r.c.passed);
      CHECK(r.report.findings.empty());
      CHECK(r.report.total.bank_conflicts == 0);
    }
  }

  TEST_CASE("an odd number of n8 tiles per warp loads B with ldmatrix.x2") {
    // 64 x 24 over 4 warps: only (4, 1) fits (16 x 24 per warp), 3 n8 tiles.
    GemmCase c;
    c.M = 128;
    c.N = 48;
    c.bN = 24;
    BothLevels r = run_both(c);
    CHECK(r.c.passed);
    CHECK(r.report.findings.empty());
    CHECK(has(r.lowered, "T.ldmatrix_x2_trans(B_s_frag"));
  }

  TEST_CASE("clear_accum zeroes C before the first product on sm80 and on the scalar path") {
    for (DataType in : {kF16, kF32}) {
      CAPTURE(in.name());
      GemmCase c;
      c.K = 32;  // one step: clear_accum replaces T.clear
      c.in = in;
      c.o.clear_accum = true;
      BothLevels r = run_both(c);
      CHECK(r.c.passed);
      CHECK(r.report.findings.empty());  // no read of an uninitialised accumulator
    }
  }

  TEST_CASE("float32 inputs run as scalar multiply-adds equal to the tile level") {
    GemmCase c;
    c.in = kF32;
    BothLevels r = run_both(c);
    CHECK(r.c.passed);
    CHECK(r.report.findings.empty());
    CHECK(!has(r.lowered, "T.mma"));
  }

  TEST_CASE("int8 inputs accumulate exactly in int32 on the scalar path") {
    GemmCase c;
    c.in = DataType::i8();
    BothLevels r = run_both(c);
    CHECK(r.c.passed);  // integer tolerance is exact
    CHECK(r.c.max_abs_err == 0);
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("a tile that is no multiple of the instruction uses the scalar path") {
    // N tile 20: not a multiple of 8 (sm80) nor 16 (gfx942); 60 x 20 is not a multiple of the
    // 128 threads either (1200 elements: threads 0-47 hold 10, the others 9).
    for (const char* target : {"sm80", "gfx942"}) {
      CAPTURE(target);
      GemmCase c;
      c.target = target;
      c.M = 120;
      c.bM = 60;
      c.N = 40;
      c.bN = 20;
      BothLevels r = run_both(c);
      CHECK(r.c.passed);
      CHECK(r.report.findings.empty());
    }
  }
}
