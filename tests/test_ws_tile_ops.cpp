// Tile operators inside `with T.ws(g)` (core/pass_lower_tile_ops.cpp, layout inference): each is
// lowered for the threads of its branch. Hand-written warp-specialised GEMMs run at thread level
// on sm90 (wgmma) and sm80 (mma.sync) against a product computed here, with no finding and no
// bank conflict, including edge tiles; verify proves them; nvcc compiles them; and the kernels
// that cannot be lowered this way are refused with messages that say why.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "codegen/emit.h"
#include "codegen/toolchain.h"
#include "core/error.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/target.h"
#include "interp/thread_interpreter.h"
#include "tests/sm90_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

/// A small deterministic integer pattern: exact in f16, and products summed over K stay exact
/// in f32 (|a b| <= 9, K <= 256), so the thread level must match to the last bit.
double a_value(int64_t i, int64_t k) { return static_cast<double>((i * 7 + k * 3) % 7 - 3); }
double b_value(int64_t k, int64_t j) { return static_cast<double>((k * 5 + j * 11) % 5 - 2); }

/// `file` with M, N, K lowered for `target` and run at thread level on A and B above; checks C
/// against the product computed here by the textbook triple loop, and the simulator's report.
void check_gemm_file(const char* file, const char* target, int64_t M, int64_t N, int64_t K,
                     std::map<std::string, std::string> d = {}) {
  CAPTURE(file);
  CAPTURE(target);
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  d["M"] = std::to_string(M), d["N"] = std::to_string(N), d["K"] = std::to_string(K);
  std::string defines;
  for (const auto& [name, value] : d) defines += name + "=" + value + " ";
  CAPTURE(defines);
  Kernel k = parse_kernel_file(kernel_file(file), d).kernel;
  HostTensor A(DataType::f16(), {M, K}), B(DataType::f16(), {K, N}), C(DataType::f32(), {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t x = 0; x < K; ++x) A.set(i * K + x, a_value(i, x));
  for (int64_t x = 0; x < K; ++x)
    for (int64_t j = 0; j < N; ++j) B.set(x * N + j, b_value(x, j));
  TensorMap t = {{"A", A}, {"B", B}, {"C", C}};
  ThreadRunOptions o;
  o.target = target;
  o.workers = 1;
  ThreadRunResult r = run_thread_level(lower_kernel(k, find_target(target)).kernel, t, o);
  for (const sim::Finding& f : r.report.findings) FAIL_CHECK(f.message);
  CHECK(r.report.total.bank_conflicts == 0);
  int64_t wrong = 0;
  std::string first;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double expect = 0;
      for (int64_t x = 0; x < K; ++x) expect += a_value(i, x) * b_value(x, j);
      double got = t.at("C").at(i * N + j);
      if (got != expect && wrong++ == 0) {
        first = "C[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(got) +
                ", expected " + std::to_string(expect);
      }
    }
  }
  CHECK_MESSAGE(wrong == 0, wrong << " wrong elements, first " << first);
}

/// The user error lowering `source` for `target` raises (empty when it lowers).
std::string lowering_error(const std::string& source, const char* target = "sm90") {
  INFO(source);
  try {
    lower_kernel(parse_kernel(source, "kernel.py").kernel, find_target(target));
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

/// A kernel of 256 threads whose body is `body` (8 spaces of indent), with A (64 x 64, f16),
/// a shared tile S, fragments F and G, and two barriers.
std::string ws_kernel(const std::string& body) {
  return "import tilelang.language as T\n"
         "\n"
         "\n"
         "def k(M=64):\n"
         "    @T.prim_func\n"
         "    def main(A: T.Tensor((64, 64), \"float16\"), C: T.Tensor((64, 64), \"float32\")):\n"
         "        with T.Kernel(1, threads=256) as bx:\n"
         "            S = T.alloc_shared((64, 64), \"float16\")\n"
         "            F = T.alloc_fragment((64, 64), \"float32\")\n"
         "            G = T.alloc_fragment((64, 64), \"float32\")\n" +
         body + "\n    return main\n";
}

}  // namespace

TEST_SUITE("tile operators in T.ws") {
  TEST_CASE("a producer/consumer GEMM with tile operators in T.ws runs on sm90") {
    // One tile (64 x 64, K 128: 4 rounds) and edge tiles in every dimension (200 x 136 x 96:
    // 4 x 3 blocks, the last ones partial; 3 rounds, so the barriers' parities wrap).
    check_gemm_file("ws_gemm_tileops.py", "sm90", 64, 64, 128);
    check_gemm_file("ws_gemm_tileops.py", "sm90", 200, 136, 96);
  }

  TEST_CASE("producer and consumer loops in separate T.ws branches run at thread level") {
    check_gemm_file("ws_gemm_tileops_loops.py", "sm90", 64, 64, 128);
    check_gemm_file("ws_gemm_tileops_loops.py", "sm90", 200, 136, 96);
  }

  TEST_CASE("the tile level refuses a wait that program order never satisfies") {
    // The producer's second round waits for phase 0 of `done`, which only the consumer's loop,
    // later in program order, completes: the tile level says so instead of a wrong result.
    CliResult r = run_tessel({"run", kernel_file("ws_gemm_tileops_loops.py")});
    INFO(r.out << r.err);
    CHECK(r.status != 0);
    CHECK(contains(r.out + r.err,
                   "the wait for parity 0 of mbarrier 'done[0]' would block: in "
                   "program order, which the tile level runs, its phase 0 has 0 "
                   "of 128 arrivals"));
    // The one-loop form runs in program order: every wait finds its phase complete.
    CHECK(run_tessel({"run", kernel_file("ws_gemm_tileops.py")}).status == 0);
  }

  TEST_CASE("a FlashAttention consumer of tile operators in T.ws equals the reference on sm90") {
    // The reference is flash_attention's (softmax(Q K^T / sqrt(d)) V in double precision);
    // seq_len 200 has a partial last tile of rows and of keys, causal masks inside the tiles.
    check_clean_sm90_run({kernel_file("ws_flash_attention.py")});
    check_clean_sm90_run(
        {kernel_file("ws_flash_attention.py"), "-D", "seq_len=200", "-D", "is_causal=1"});
    check_clean_sm90_run({kernel_file("ws_flash_attention.py"), "-D", "heads=2", "-D",
                          "seq_len=100", "-D", "dim=128"});
  }

  TEST_CASE("a reduction across warps inside T.ws is refused where it would need a barrier") {
    // On sm80 the 64 x 64 accumulator of 4 mma.sync warps spreads each row over two warps:
    // reduce_max combines them through a shared workspace, which needs a barrier among the
    // consumer's 128 threads.
    std::string src =
        "import tilelang.language as T\n\n\ndef k(M=64):\n    @T.prim_func\n"
        "    def main(A: T.Tensor((64, 64), \"float16\"), C: T.Tensor((64,), \"float32\")):\n"
        "        with T.Kernel(1, threads=256) as bx:\n"
        "            S = T.alloc_shared((64, 64), \"float16\")\n"
        "            F = T.alloc_fragment((64, 64), \"float32\")\n"
        "            m = T.alloc_fragment((64,), \"float32\")\n"
        "            T.copy(A[0, 0], S)\n"
        "            with T.ws(0):\n"
        "                T.clear(F)\n"
        "                T.gemm(S, S, F)\n"
        "                T.reduce_max(F, m, dim=1)\n"
        "                T.copy(m, C[0])\n"
        "\n    return main\n";
    std::string e = lowering_error(src, "sm80");
    CHECK(contains(e,
                   "the operator at kernel.py:15:17 exchanges data between its threads "
                   "through shared 'm_red' (a reduction across warps"));
    // On sm90 one warpgroup's wgmma accumulator keeps each row in one warp: no barrier needed.
    CHECK(lowering_error(src, "sm90").empty());
  }

  TEST_CASE("the T.ws FlashAttention lowers for sm80 and is refused for gfx942 with the reason") {
    // sm80: FullRow keeps each row of the scores in one warp, so the reductions shuffle within
    // warps. gfx942: the MFMA A operand layout differs from the accumulator's, so the cast copy
    // of the scores goes through shared memory, which needs a barrier among the 128 threads.
    Kernel k = parse_kernel_file(kernel_file("ws_flash_attention.py")).kernel;
    CHECK_NOTHROW(lower_kernel(k, find_target("sm80")));
    CHECK_THROWS_WITH_AS(lower_kernel(k, find_target("gfx942")),
                         doctest::Contains("exchanges data between its threads through shared "
                                           "'acc_s_to_acc_s_cast'"),
                         UserError);
  }

  TEST_CASE("two warpgroups with a gemm each in T.ws run on sm80 and sm90") {
    // num_stages 2: the whole block's copies are cp.async two buffers ahead (TileLang's
    // T.Pipelined around T.ws branches); 1: a serial loop.
    for (const char* target : {"sm80", "sm90"}) {
      for (const char* stages : {"1", "2"}) {
        check_gemm_file("ws_gemm_two_groups.py", target, 64, 64, 64, {{"num_stages", stages}});
        check_gemm_file("ws_gemm_two_groups.py", target, 200, 136, 96, {{"num_stages", stages}});
      }
    }
  }

  TEST_CASE("the hand-written warp-specialised GEMMs compile with nvcc for sm_90a") {
    const Target& sm90 = find_target("sm90");
    for (const char* name : {"ws_gemm_tileops.py", "ws_gemm_tileops_loops.py",
                             "ws_gemm_two_groups.py", "ws_flash_attention.py"}) {
      CAPTURE(name);
      Kernel k = parse_kernel_file(kernel_file(name)).kernel;
      EmittedSource src = emit_source(lower_kernel(k, sm90).kernel, sm90);
      CHECK(contains(src.code, "wgmma.mma_async"));
      std::string dir = (std::filesystem::temp_directory_path() / "tessel_ws_tile_ops").string();
      std::filesystem::create_directories(dir);
      CompileResult c = compile_device_code(src, sm90, dir);
      if (!c.skipped.empty()) {
        MESSAGE("skipped: " << c.skipped);
      } else {
        CHECK_MESSAGE(c.compiled, c.log);
      }
    }
  }

  TEST_CASE("verify proves the hand-written warp-specialised GEMMs") {
    for (const char* name : {"ws_gemm_tileops.py", "ws_gemm_tileops_loops.py",
                             "ws_gemm_two_groups.py", "ws_flash_attention.py"}) {
      CAPTURE(name);
      nlohmann::json j = run_json({"verify", kernel_file(name), "--target", "sm90"});
      CHECK(j["failed"] == 0);
      CHECK(j["proved"].get<int>() > 0);
    }
  }

  TEST_CASE("the consumer's accumulator is laid out over the 128 threads of its warpgroup") {
    // 64 x 64 f32 over one warpgroup: 4096 / 128 = 32 registers per thread (over the block's
    // 256 threads it would be 16).
    Kernel k = parse_kernel_file(kernel_file("ws_gemm_tileops.py")).kernel;
    for (const char* target : {"sm90"}) {
      LoweredKernel l = lower_kernel(k, find_target(target));
      bool found = false;
      for (const auto& [_, d] : l.layouts.fragments) {
        if (d.buffer->name != "C_local") continue;
        found = true;
        CHECK(d.layout.thread_extent() == 128);
        CHECK(d.layout.local_extent() == 32);
      }
      CHECK(found);
    }
  }

  TEST_CASE("a fragment used by two warpgroups is refused, naming both operators") {
    std::string e =
        lowering_error(ws_kernel("            with T.ws(0):\n"
                                 "                T.clear(F)\n"
                                 "            with T.ws(1):\n"
                                 "                T.copy(F, C[0, 0])\n"));
    CHECK(contains(e,
                   "fragment 'F' is used by T.clear at kernel.py:12:17 on threads 0-127 and "
                   "by T.copy at kernel.py:14:17 on threads 128-255"));
    CHECK(contains(e, "fix: use 'F' inside branches over the same threads only"));
  }

  TEST_CASE("a fragment used inside and outside T.ws is refused") {
    std::string e =
        lowering_error(ws_kernel("            T.clear(G)\n"
                                 "            with T.ws(0):\n"
                                 "                T.copy(G, C[0, 0])\n"));
    CHECK(contains(e,
                   "fragment 'G' is used by T.clear at kernel.py:11:13 on the whole block "
                   "(threads 0-255) and by T.copy at kernel.py:13:17 on threads 0-127"));
  }

  TEST_CASE("operators of one branch that would need a barrier among its threads are refused") {
    // The second copy reads S, which the first one wrote with other threads' elements: the 128
    // threads would have to synchronise, and a block barrier inside the branch deadlocks.
    std::string e =
        lowering_error(ws_kernel("            with T.ws(1):\n"
                                 "                T.copy(A[0, 0], S)\n"
                                 "                T.copy(S, C[0, 0])\n"));
    CHECK(contains(e,
                   "the statement at kernel.py:13:17 accesses shared 'S' after the statement "
                   "at kernel.py:12:17 accessed it"));
    CHECK(contains(e, "does not emit a barrier over part of the block"));
  }

  TEST_CASE("a tile operator on threads that are not one range of whole warps is refused") {
    std::string e =
        lowering_error(ws_kernel("            tx = T.get_thread_binding()\n"
                                 "            if tx < 100:\n"
                                 "                T.copy(A[0, 0], S)\n"));
    CHECK(contains(e,
                   "T.copy at kernel.py:13:17 is inside `if tx < 100`, which runs on threads "
                   "0-99, but a tile operator inside a branch is lowered for one range of "
                   "whole warps"));
  }

  TEST_CASE("a T.Pipelined loop inside T.ws is refused") {
    std::string e =
        lowering_error(ws_kernel("            with T.ws(1):\n"
                                 "                for k in T.Pipelined(2, num_stages=2):\n"
                                 "                    T.copy(A[0, k * 32], S[0:64, 0:32])\n"));
    CHECK(contains(e, "the T.Pipelined loop over 'k'"));
    CHECK(contains(e, "inside T.ws, loop with T.serial"));
  }
}
