// Automatic warp specialisation of T.Pipelined on sm90 (core/pass_warp_specialize.cpp): the
// shape of the split, the GEMM and FlashAttention examples at thread level against the tile
// level (no finding, no bank conflict), verify, a broken barrier protocol caught, the opt-out,
// kernels left alone, and the sm_90a compile.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "codegen/emit.h"
#include "codegen/toolchain.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/printer.h"
#include "core/target.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
#include "tests/cli_runner.h"
#include "tests/sm90_test_util.h"
#include "verify/kernel_proofs.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

/// The small GEMM (128 x 128 x 224: one block, 7 k-steps over 3 stages, so each stage barrier
/// goes through phases 0, 1 and 2 and its parity wraps) lowered for sm90 with `o`, at thread
/// level.
ThreadRunResult run_gemm_sm90(const LowerOptions& o) {
  Kernel k = example("gemm", {{"M", "128"}, {"N", "128"}, {"K", "224"}});
  TensorMap t = make_tensors(k, {}, {"C"}, 7);
  ThreadRunOptions r;
  r.target = "sm90";
  r.workers = 1;
  return run_thread_level(lower_kernel(k, find_target("sm90"), o).kernel, t, r);
}

}  // namespace

TEST_SUITE("warp specialisation") {
  TEST_CASE("on sm90 the pipelined GEMM gets a TMA producer warpgroup and stage barriers") {
    Kernel k = example("gemm");
    Kernel lowered = lower_kernel(k, find_target("sm90")).kernel;
    // 128 consumer threads (the kernel's) + one producer warpgroup of 128.
    CHECK(lowered->threads == 256);
    std::string text = print_kernel(lowered);
    INFO(text);
    // num_stages = 3: full and empty barriers of 3 stages.
    CHECK(contains(text, "ws_full = T.alloc_shared((3,), \"int64\")"));
    CHECK(contains(text, "ws_empty = T.alloc_shared((3,), \"int64\")"));
    // Thread 128 issues the boxes: A's 128 x 32 tile (64-byte rows: the 64B swizzle of its
    // layout) and B's 32 x 128 tile as two 64-column panels (128-byte rows, 128B swizzle), all
    // (128 * 32 + 32 * 128) * 2 = 16384 bytes expected on the stage's full barrier.
    CHECK(contains(text, "if tx == 128:"));
    CHECK(contains(text, "T.mbarrier_arrive_expect_tx(ws_full[k % 3], 16384)"));
    CHECK(contains(text,
                   "T.tma_load_2d(A_shared[k % 3 * 4096], A[by * 128, k * 32], ws_full[k % 3], "
                   "128, 32, 64)"));
    CHECK(contains(text,
                   "T.tma_load_2d(B_shared[k % 3 * 4096 + 2048], B[k * 32, bx * 128 + 64], "
                   "ws_full[k % 3], 32, 64, 128)"));
    CHECK_FALSE(contains(text, "cp_async"));
    // The consumers write no shared memory in the loop and TMA writes through the async proxy:
    // no fence.proxy.async anywhere (the gemm lowering's own fence is dropped in the consumers).
    CHECK_FALSE(contains(text, "fence_proxy_async"));
    // 512 registers per thread of a warpgroup's share of 65536; a TMA producer 24, consumer
    // min(240, (512 - 24) / 1) = 240.
    CHECK(contains(text, "T.set_max_nreg(24, 0)"));
    CHECK(contains(text, "T.set_max_nreg(240, 1)"));
  }

  TEST_CASE("without TMA the producer's 128 threads copy with cp.async, S - 1 stages in flight") {
    LowerOptions o;
    o.warp_specialize_tma = false;
    std::string text = print_kernel(lower_kernel(example("gemm"), find_target("sm90"), o).kernel);
    INFO(text);
    CHECK(contains(text, "T.cp_async_16("));
    CHECK(contains(text, "T.cp_async_wait_group(2)"));  // num_stages - 1 = 2 groups in flight
    CHECK(contains(text, "T.set_max_nreg(40, 0)"));
    CHECK_FALSE(contains(text, "tma_load"));
    // The producer fences its landed copies in the loop and after the drain's wait; the
    // consumers do not fence.
    size_t fences = 0;
    for (size_t at = text.find("fence_proxy_async"); at != std::string::npos;
         at = text.find("fence_proxy_async", at + 1)) {
      ++fences;
    }
    CHECK(fences == 2);
  }

  TEST_CASE("a copy TMA cannot make keeps the cp.async producer, and the lowering says why") {
    // M is symbolic: the tensor map of A would need its shape when the kernel is lowered.
    const char* src =
        "import tilelang.language as T\n"
        "\n"
        "M = T.dynamic(\"M\")\n"
        "\n"
        "\n"
        "@T.prim_func\n"
        "def gemm_dyn(A: T.Tensor((M, 64), \"float16\"), B: T.Tensor((64, 64), \"float16\"),\n"
        "             C: T.Tensor((M, 64), \"float32\")):\n"
        "    with T.Kernel(1, T.ceildiv(M, 64), threads=128) as (bx, by):\n"
        "        A_s = T.alloc_shared((64, 32), \"float16\")\n"
        "        B_s = T.alloc_shared((32, 64), \"float16\")\n"
        "        C_l = T.alloc_fragment((64, 64), \"float32\")\n"
        "        T.clear(C_l)\n"
        "        for k in T.Pipelined(2, num_stages=2):\n"
        "            T.copy(A[by * 64, k * 32], A_s)\n"
        "            T.copy(B[k * 32, 0], B_s)\n"
        "            T.gemm(A_s, B_s, C_l)\n"
        "        T.copy(C_l, C[by * 64, 0])\n";
    std::string path = (std::filesystem::temp_directory_path() / "tessel_ws_gemm_dyn.py").string();
    {
      std::ofstream f(path);
      f << src;
    }
    LoweredKernel l = lower_kernel(parse_kernel(src, "gemm_dyn.py").kernel, find_target("sm90"));
    CHECK(l.kernel->threads == 256);
    CHECK(contains(print_kernel(l.kernel), "T.cp_async_16("));
    CHECK_FALSE(contains(print_kernel(l.kernel), "tma_load"));
    REQUIRE(l.notes.size() == 1);
    CHECK(l.notes[0] ==
          "the warp-specialised producer copies with cp.async, not TMA: 'A' has a symbolic shape "
          "(its tensor map's strides are checked when the kernel is lowered)");
    // M = 100: the second block's rows 64-99 are inside A and C, rows 100-127 guarded.
    check_clean_sm90_run({path, "-D", "M=100"});
    // K = 36: A's rows are 72 bytes; no tensor map can describe A.
    LoweredKernel odd = lower_kernel(example("gemm", {{"M", "128"}, {"N", "128"}, {"K", "36"}}),
                                     find_target("sm90"));
    REQUIRE(odd.notes.size() == 1);
    CHECK(contains(odd.notes[0], "the rows of 'A' are 72 bytes, not a multiple of 16"));
  }

  TEST_CASE("sm80 keeps the software pipeline and the opt-out gives sm90 the same schedule") {
    Kernel k = example("gemm");
    Kernel sm80 = lower_kernel(k, find_target("sm80")).kernel;
    CHECK(sm80->threads == 128);
    CHECK_FALSE(contains(print_kernel(sm80), "mbarrier"));
    LowerOptions off;
    off.warp_specialize = false;
    Kernel sm90 = lower_kernel(k, find_target("sm90"), off).kernel;
    // The same software pipeline (no producer, no mbarriers); only the gemm's instruction
    // differs: wgmma on sm90 (docs/lowering.md, "wgmma (sm90)"), mma.sync on sm80.
    CHECK(sm90->threads == 128);
    CHECK_FALSE(contains(print_kernel(sm90), "mbarrier"));
    CHECK(contains(print_kernel(sm90), "T.wgmma_ss_f16("));
    CHECK(contains(print_kernel(sm80), "T.mma_m16n8k16_f16("));
  }

  TEST_CASE("--no-warp-specialize keeps the sm80 schedule on sm90 at the command line") {
    auto ir = [](std::vector<std::string> args) { return run_json(args)["ir"].get<std::string>(); };
    std::string off = ir({"lower", "gemm", "--target", "sm90", "--no-warp-specialize"});
    CHECK_FALSE(contains(off, "ws_full"));
    CHECK_FALSE(contains(off, "mbarrier"));
    CHECK(contains(ir({"lower", "gemm", "--target", "sm90"}), "ws_full"));
    for (const char* cmd : {"emit", "verify"}) {
      CAPTURE(cmd);
      CliResult r = run_tessel({cmd, "gemm", "--target", "sm90", "--no-warp-specialize"});
      CHECK(r.status == 0);
      CHECK_FALSE(contains(r.out, "mbarrier"));
    }
    CliResult run = run_tessel({"run", "gemm", "--level", "thread", "--target", "sm90", "-D",
                                "M=128", "-D", "N=128", "-D", "K=64", "--no-warp-specialize"});
    CHECK(run.status == 0);
    CHECK_FALSE(contains(run.out, "mbarrier"));
  }

  TEST_CASE("the warp-specialised GEMM equals the tile level with no finding or conflict") {
    // 7 k-steps of 32 over 3 stages: every stage barrier's parity wraps.
    check_clean_sm90_run({"gemm", "-D", "M=128", "-D", "N=128", "-D", "K=224"});
  }

  TEST_CASE("the warp-specialised GEMM kernel file equals the tile level") {
    check_clean_sm90_run({kernel_file("gemm.py"), "-D", "M=128", "-D", "N=128", "-D", "K=128", "-D",
                          "num_stages=2"});
  }

  TEST_CASE("the warp-specialised FlashAttention equals the tile level, causal or not") {
    // seq_len 192 with block_N 64: 3 iterations over 2 stages (stage 0's parity wraps).
    for (const char* causal : {"is_causal=0", "is_causal=1"}) {
      CAPTURE(causal);
      check_clean_sm90_run(
          {kernel_file("flash_attention.py"), "-D", "heads=1", "-D", "seq_len=192", "-D", causal});
    }
  }

  TEST_CASE("a wrong parity in the generated protocol is caught") {
    // The consumers wait for parity (r + 1) % 2 of ws_full: round 0 passes at once on the fresh
    // barriers, so they read stages 0-2 before anything landed there (uninitialised reads) and
    // arrive on ws_empty. Run first (warps in order), they put ws_empty[0] in phase 1 before the
    // producer's first wait for parity 1 (meant: the fresh barrier's phase "-1"), which now
    // means phase 1 and needs the consumers' next arrival; they wait for ws_full[0]'s phase 0,
    // which the producer never fills: a deadlock. Both producers (TMA, cp.async).
    for (bool tma : {true, false}) {
      CAPTURE(tma);
      LowerOptions parity;
      parity.ws_wrong_parity = true;
      parity.warp_specialize_tma = tma;
      ThreadRunResult r = run_gemm_sm90(parity);
      auto uninit = of_kind(r, sim::FindingKind::kUninit);
      REQUIRE(!uninit.empty());
      CHECK(contains(uninit[0]->message, "_shared"));
      CHECK(of_kind(r, sim::FindingKind::kDeadlock).size() == 1);
    }
  }

  TEST_CASE("a wrong arrival count in the generated protocol is a deadlock") {
    // ws_empty expects T + 1 = 129 arrivals and the 128 consumers give 128: its phase 0 never
    // completes, so the producer waits at k = 3 (round 1 of stage 0) and the consumers at
    // k = 3 for a stage that is never filled.
    for (bool tma : {true, false}) {
      CAPTURE(tma);
      LowerOptions count;
      count.ws_wrong_arrival_count = true;
      count.warp_specialize_tma = tma;
      ThreadRunResult d = run_gemm_sm90(count);
      auto deadlocks = of_kind(d, sim::FindingKind::kDeadlock);
      REQUIRE(deadlocks.size() == 1);
      CHECK(contains(deadlocks[0]->message, "ws_empty[0]"));
      CHECK(contains(deadlocks[0]->message, "of 129"));
    }
  }

  TEST_CASE("the generated protocol itself has no finding, with either producer") {
    for (bool tma : {true, false}) {
      CAPTURE(tma);
      LowerOptions o;
      o.warp_specialize_tma = tma;
      ThreadRunResult ok = run_gemm_sm90(o);
      CHECK(ok.report.findings.empty());
    }
  }

  TEST_CASE("verify proves the stage barriers' arrival counts and refuses a wrong one") {
    Kernel k = example("gemm");
    const Target& sm90 = find_target("sm90");
    auto arrivals = [](const KernelProofs& p) {
      std::vector<KernelCheck> out;
      for (const KernelCheck& c : p.checks) {
        if (c.what.starts_with("mbarrier arrivals on")) out.push_back(c);
      }
      return out;
    };
    // ws_full (the TMA producer's first thread, with the boxes' bytes) and ws_empty (the 128
    // consumer threads).
    std::vector<KernelCheck> ok = arrivals(prove_kernel(lower_kernel(k, sm90), sm90));
    REQUIRE(ok.size() == 2);
    for (const KernelCheck& c : ok) CHECK(c.result == "proved");
    LowerOptions wrong;
    wrong.ws_wrong_arrival_count = true;  // ws_empty initialised for 129
    std::vector<KernelCheck> bad = arrivals(prove_kernel(lower_kernel(k, sm90, wrong), sm90));
    REQUIRE(bad.size() == 2);
    int failed = 0;
    for (const KernelCheck& c : bad) {
      if (c.result != "failed") continue;
      ++failed;
      REQUIRE(c.counterexample);
      CHECK(contains(*c.counterexample, "'ws_empty' is initialised for 129 arrivals per phase"));
      CHECK(contains(*c.counterexample, "reached by 128 threads (0-127)"));
      CHECK(contains(*c.counterexample, "never complete"));
    }
    CHECK(failed == 1);
  }

  TEST_CASE("verify proves the arrival counts of the hand-written warp-specialised GEMMs") {
    for (const char* name : {"ws_gemm.py", "ws_gemm_tma.py"}) {
      CAPTURE(name);
      nlohmann::json j = run_json({"verify", kernel_file(name), "--target", "sm90"});
      int arrivals = 0;
      for (const auto& c : j["checks"]) {
        if (c["what"].get<std::string>().starts_with("mbarrier arrivals on")) {
          ++arrivals;
          CHECK(c["result"] == "proved");
        }
      }
      CHECK(arrivals == 2);  // full and empty
      CHECK(j["failed"] == 0);
    }
  }

  TEST_CASE("a kernel written with T.ws is lowered as written") {
    CliResult r = run_tessel({"lower", kernel_file("ws_gemm.py"), "--target", "sm90"});
    REQUIRE(r.status == 0);
    CHECK_FALSE(contains(r.out, "ws_full"));
  }

  TEST_CASE("a pipeline whose consumers write shared memory keeps the sm80 schedule") {
    // The epilogue-free GEMM with the accumulator staged through shared memory inside the loop
    // would need block barriers among the consumers: the pass leaves it to cp.async pipelining.
    const char* src =
        "import tilelang.language as T\n"
        "\n"
        "\n"
        "def staged(M=64, N=64, K=64):\n"
        "    @T.prim_func\n"
        "    def main(A: T.Tensor((M, K), \"float16\"), B: T.Tensor((M, K), \"float16\")):\n"
        "        with T.Kernel(1, threads=128) as bx:\n"
        "            A_s = T.alloc_shared((64, 16), \"float16\")\n"
        "            S_s = T.alloc_shared((64, 16), \"float16\")\n"
        "            for k in T.Pipelined(K // 16, num_stages=2):\n"
        "                T.copy(A[0, k * 16], A_s)\n"
        "                T.copy(A_s, S_s)\n"
        "                T.copy(S_s, B[0, k * 16])\n"
        "\n"
        "    return main\n";
    LowerOptions o;
    o.print_after_all = true;
    LoweredKernel l = lower_kernel(parse_kernel(src, "staged.py").kernel, find_target("sm90"), o);
    CHECK(l.kernel->threads == 128);
    bool noted = false;
    for (const PassSnapshot& s : l.snapshots) {
      noted |= s.pass == "warp_specialize" &&
               contains(s.text, "consumer statement of the loop writes shared memory ('S_s')");
    }
    CHECK(noted);
  }

  TEST_CASE("the warp-specialised GEMM and FlashAttention compile with nvcc for sm_90a") {
    const Target& sm90 = find_target("sm90");
    for (const char* name : {"gemm.py", "flash_attention.py"}) {
      CAPTURE(name);
      Kernel k = parse_kernel_file(kernel_file(name)).kernel;
      EmittedSource src = emit_source(lower_kernel(k, sm90).kernel, sm90);
      CHECK(contains(src.code, "setmaxnreg"));
      CHECK(contains(src.code, "mbarrier.try_wait.parity"));
      std::string dir = (std::filesystem::temp_directory_path() / "tessel_ws_nvcc").string();
      std::filesystem::create_directories(dir);
      CompileResult c = compile_device_code(src, sm90, dir);
      if (!c.skipped.empty()) {
        MESSAGE("skipped: " << c.skipped);
      } else {
        CHECK_MESSAGE(c.compiled, c.log);
      }
    }
  }
}
