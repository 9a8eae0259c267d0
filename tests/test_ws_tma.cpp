// The TMA producer of the automatic warp specialisation (core/pass_warp_specialize.cpp): which
// copies become TMA boxes, the thread-level runs of GEMM and FlashAttention with it, what
// `tessel verify` proves about it (boxes against layouts, arrivals, expect_tx bytes), a wrong
// byte count caught by verify and by the simulator, and the reason printed where TMA is not legal.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "codegen/emit.h"
#include "core/intrinsics.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/printer.h"
#include "core/stmt_functor.h"
#include "core/target.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
#include "tests/cli_runner.h"
#include "tests/sm90_test_util.h"
#include "verify/barrier_bytes.h"
#include "verify/kernel_proofs.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

/// The checks of `j` (a verify report) whose claim starts with `prefix`.
std::vector<nlohmann::json> checks_of(const nlohmann::json& j, const std::string& prefix) {
  std::vector<nlohmann::json> out;
  for (const auto& c : j["checks"]) {
    if (c["what"].get<std::string>().starts_with(prefix)) out.push_back(c);
  }
  return out;
}

/// `k` with the bytes of every arrive_expect_tx replaced by `bytes`.
Kernel with_expect_tx(const Kernel& k, int64_t bytes) {
  class Rewrite : public StmtMutator {
   public:
    explicit Rewrite(int64_t bytes) : bytes_(bytes) {}

   protected:
    Stmt visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt& s) override {
      if (op->intrinsic != IntrinsicId::kMbarrierArriveExpectTx) return s;
      std::vector<IntrinsicArg> args = op->args;
      args[1].value = make_int(bytes_);
      return IntrinsicCallNode::make(op->intrinsic, std::move(args), op->loc);
    }

   private:
    int64_t bytes_;
  };
  KernelNode node = *k;
  node.body = Rewrite(bytes).mutate(k->body);
  return Kernel(std::make_shared<const KernelNode>(std::move(node)));
}

}  // namespace

TEST_SUITE("warp specialisation with a TMA producer") {
  TEST_CASE("FlashAttention's K and V tiles are TMA boxes on one full barrier per stage") {
    std::string text =
        print_kernel(lower_kernel(parse_kernel_file(kernel_file("flash_attention.py")).kernel,
                                  find_target("sm90"))
                         .kernel);
    INFO(text);
    // Defaults: block_N = 64, dim = 64, f16: each of K's and V's 64 x 64 tiles is one box of
    // 1 x 64 x 64 (rows of 128 bytes, one 128B-swizzle span) from the (heads, seq, dim) tensor;
    // the stage's full barrier expects both, 2 * 64 * 64 * 2 = 16384 bytes.
    CHECK(contains(text, "T.mbarrier_arrive_expect_tx(ws_full[k % 2], 16384)"));
    CHECK(contains(text, "T.tma_load_3d(K_shared["));
    CHECK(contains(text, "T.tma_load_3d(V_shared["));
    CHECK_FALSE(contains(text, "cp_async"));
  }

  TEST_CASE("boxes past the tensors' edges and two-panel tiles equal the tile level") {
    // GEMM 200 x 136 x 96: the last row and column blocks' boxes reach past A's and B's edges
    // (zero-filled, like the cp.async producer's guarded copies); the epilogue is guarded.
    check_clean_sm90_run({"gemm", "-D", "M=200", "-D", "N=136", "-D", "K=96"});
    // FlashAttention seq_len 100: the second K/V box is 36 rows inside the tensor, 28 past it.
    check_clean_sm90_run({kernel_file("flash_attention.py"), "-D", "heads=2", "-D", "seq_len=100",
                          "-D", "is_causal=1"});
    // dim 128: K's and V's 256-byte rows are two 128-byte panels each, 32768 bytes a stage.
    check_clean_sm90_run(
        {kernel_file("flash_attention.py"), "-D", "heads=1", "-D", "seq_len=128", "-D", "dim=128"});
  }

  TEST_CASE("verify proves the TMA-produced GEMM and FlashAttention: boxes, arrivals and bytes") {
    for (std::vector<std::string> args :
         {std::vector<std::string>{"verify", "gemm", "--target", "sm90"},
          std::vector<std::string>{"verify", kernel_file("flash_attention.py"), "--target",
                                   "sm90"}}) {
      CAPTURE(args[1]);
      nlohmann::json j = run_json(args);
      INFO(j.dump(1));
      CHECK(j["failed"] == 0);
      CHECK(j["undecided"] == 0);
      // GEMM: A's box and B's two 64-column panels; FlashAttention: K's and V's boxes.
      std::vector<nlohmann::json> boxes = checks_of(j, "TMA box");
      CHECK(boxes.size() == (args[1] == "gemm" ? 3u : 2u));
      // ws_full: its one arrive (the producer's first thread) and its bytes; ws_empty.
      CHECK(checks_of(j, "mbarrier arrivals on").size() == 2);
      std::vector<nlohmann::json> bytes = checks_of(j, "mbarrier bytes on 'ws_full'");
      REQUIRE(bytes.size() == 1);
      CHECK(bytes[0]["result"] == "proved");
    }
  }

  TEST_CASE("a wrong expect_tx byte count fails verify and the simulator sees it") {
    // GEMM 128 x 128 x 224 (7 k-steps, 3 stages): each stage's boxes deliver A's 128 x 32 and
    // B's 32 x 128 f16 tiles, 2 * 4096 * 2 = 16384 bytes. Announcing 8192 completes the phase
    // once A's box has landed; announcing 24576 never completes it.
    Kernel k = example("gemm", {{"M", "128"}, {"N", "128"}, {"K", "224"}});
    const Target& sm90 = find_target("sm90");
    LoweredKernel lowered = lower_kernel(k, sm90);
    for (int64_t wrong : {8192, 24576}) {
      CAPTURE(wrong);
      Kernel bad = with_expect_tx(lowered.kernel, wrong);
      std::vector<KernelCheck> checks = prove_barrier_bytes(bad);
      REQUIRE(checks.size() == 1);
      CHECK(checks[0].result == "failed");
      REQUIRE(checks[0].counterexample);
      const std::string& why = *checks[0].counterexample;
      CHECK(contains(why, "announces " + std::to_string(wrong) + " bytes on 'ws_full["));
      CHECK(contains(why, "deliver 16384"));
      CHECK(contains(why, wrong < 16384 ? "race" : "deadlock"));
      // The simulator runs the same kernel: a short count lets the consumers read B's tile
      // before its phase (or never fills later phases), a long one never completes a phase.
      TensorMap t = make_tensors(k, {}, {"C"}, 7);
      ThreadRunOptions r;
      r.target = "sm90";
      r.workers = 1;
      ThreadRunResult run = run_thread_level(bad, t, r);
      CHECK_FALSE(run.report.findings.empty());
    }
    // The kernel as lowered: proved.
    std::vector<KernelCheck> ok = prove_barrier_bytes(lowered.kernel);
    REQUIRE(ok.size() == 1);
    CHECK(ok[0].result == "proved");
  }

  TEST_CASE("warp-specialised kernels keep the one-block minimum of __launch_bounds__") {
    // ptxas (CUDA 13.0, sm_90a) on M0 (128x128x32 tiles, 3 stages), measured 2026-11-26: with (256,
    // 1): 240 registers, 0 spills, 114 main-loop instructions (TileLang 0.1.15: 114); without the
    // ", 1": 154 registers, 0 spills, 145 instructions.
    Kernel k = example("gemm");
    std::string sm90 =
        emit_source(lower_kernel(k, find_target("sm90")).kernel, find_target("sm90")).code;
    CHECK(contains(sm90, "__global__ void __launch_bounds__(256, 1) gemm("));
    std::string sm80 =
        emit_source(lower_kernel(k, find_target("sm80")).kernel, find_target("sm80")).code;
    CHECK(contains(sm80, "__global__ void __launch_bounds__(128, 1) gemm("));
  }

  TEST_CASE("tessel lower prints why a producer copies with cp.async") {
    // K = 36: A's rows are 72 bytes, not a multiple of 16: no tensor map can describe A.
    CliResult r = run_tessel(
        {"lower", "gemm", "--target", "sm90", "-D", "M=128", "-D", "N=128", "-D", "K=36"});
    REQUIRE(r.status == 0);
    CHECK(contains(r.out,
                   "# note: the warp-specialised producer copies with cp.async, not TMA: "
                   "the rows of 'A' are 72 bytes, not a multiple of 16"));
    nlohmann::json j =
        run_json({"lower", "gemm", "--target", "sm90", "-D", "M=128", "-D", "N=128", "-D", "K=64"});
    CHECK(j["notes"].empty());  // K = 64: 128-byte rows, TMA
  }
}
