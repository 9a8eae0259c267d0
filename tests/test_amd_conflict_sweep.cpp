// Every built-in example and every kernel file, lowered for gfx942 and gfx90a at small sizes: each
// bank-conflict proof of `tessel verify` holds and the thread-level simulator counts zero bank
// conflicts while the result equals the tile level. Kernels left out are listed with the reason.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_runner.h"

namespace {

struct SweepCase {
  std::string kernel;                ///< a built-in name or a path under examples/kernels
  std::vector<std::string> options;  ///< --kernel and -D arguments (small sizes)
  bool runs_clean = true;            ///< the thread-level run exits 0 (no race, no wrong result)
};

std::string kernel_file(const std::string& name) {
  return std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/" + name;
}

const std::vector<std::string> kSmallGemm = {"-D", "M=128", "-D", "N=128", "-D", "K=64"};

/// The cases, small enough to lower, prove and simulate in about a second each. Left out:
/// row_sum_bank_conflicts (its 32-way conflict is the point), gemm_row_major.py (row-major
/// operand tiles, conflicted on purpose), gemm_mma (hand-written ldmatrix / mma.sync: NVIDIA
/// only), gemm_simt (a hand-written SIMT kernel: rows 4 apart of its 32-byte-row A_s share banks,
/// 2-way on sm80 too), gemv.py's
/// gemv_parallel (its own tile shape conflicts on sm80 too), fp8.py's gemm_fp8 (HIP has no fp8
/// arithmetic), bug_cp_async_no_wait (cp.async) and ws_gemm.py / ws_gemm_tma.py (mbarriers, TMA):
/// NVIDIA only.
std::vector<SweepCase> sweep_cases() {
  std::vector<SweepCase> c;
  for (const char* name : {"gemm", "gemm_transpose_b", "gemm_rs", "dequant_gemm"}) {
    c.push_back({name, kSmallGemm});
  }
  for (const char* name : {"softmax",
                           "elementwise",
                           "flash_attention",
                           "chunk_state",
                           "chunk_scan",
                           "linear_attention",
                           "mla_decode",
                           "mla_decode_split",
                           "gemm_splitk",
                           "transpose_shared",
                           "row_sum_padded",
                           "warp_shuffle_reduce",
                           "dequant_gemv_uint4",
                           "dequant_gemm_uint4",
                           "dequant_gemm_int4",
                           "dequant_gemv_int4",
                           "dequant_gemm_nf4",
                           "dequant_gemv_nf4",
                           "dequant_gemm_fp4",
                           "dequant_gemv_fp4",
                           "dequant_gemv_int2",
                           "dequant_gemm_int2"}) {
    c.push_back({name, {}});
  }
  for (const char* name : {"bug_missing_barrier", "bug_reduction_missing_barrier",
                           "bug_divergent_barrier", "bug_global_race"}) {
    c.push_back({name, {}, false});  // wrong on purpose, but not in its banks
  }
  // Kernel files with a built-in twin (gemm.py, chunk_scan.py, ...) are the same kernels (the
  // kernel-family and workload tests check each file equals its built-in); the rest:
  c.push_back({kernel_file("fig16_gemm.py"), kSmallGemm});
  c.push_back({kernel_file("gemv.py"), {"--kernel", "naive_gemv", "-D", "N=64", "-D", "K=128"}});
  c.push_back({kernel_file("gemv.py"), {"--kernel", "splitk_gemv", "-D", "N=64", "-D", "K=128"}});
  c.push_back(
      {kernel_file("topk.py"),
       {"--kernel", "tl_topk", "-D", "M=64", "-D", "N=32", "-D", "topk=4", "-D", "blk_m=16"}});
  c.push_back({kernel_file("topk.py"), {"--kernel", "topk_gating", "-D", "M=64", "-D", "N=32"}});
  const std::vector<std::string> conv = {
      "-D",  "N=2", "-D",  "C=16", "-D",  "H=9", "-D",  "W=9", "-D",         "F=32", "-D",
      "K=3", "-D",  "S=2", "-D",   "D=1", "-D",  "P=1", "-D",  "block_K=16", "-D",   "block_N=32"};
  for (const char* kernel : {"convolution", "convolution_tma"}) {
    std::vector<std::string> options = {"--kernel", kernel};
    options.insert(options.end(), conv.begin(), conv.end());
    c.push_back({kernel_file("convolution.py"), options});
  }
  c.push_back({kernel_file("fp8.py"),
               {"--kernel", "per_token_cast_to_fp8", "-D", "M=8", "-D", "N=128", "-D", "blk_m=8"}});
  c.push_back({kernel_file("gqa_attention.py"),
               {"-D", "batch=1", "-D", "heads=4", "-D", "seq_len=128", "-D", "dim=32", "-D",
                "groups=2", "-D", "is_causal=True", "-D", "block_M=64", "-D", "block_N=32"}});
  return c;
}

void sweep(const std::string& target, size_t first, size_t last) {
  std::vector<SweepCase> cases = sweep_cases();
  for (size_t k = first; k < last && k < cases.size(); ++k) {
    const SweepCase& c = cases[k];
    std::vector<std::string> verify = {"verify", c.kernel, "--target", target, "--json"};
    verify.insert(verify.end(), c.options.begin(), c.options.end());
    CliResult v = run_tessel(verify);
    INFO(target << " " << c.kernel << " " << v.err.substr(0, 500));
    REQUIRE(!v.out.empty());
    auto proofs = nlohmann::json::parse(v.out);
    for (const auto& check : proofs["checks"]) {
      std::string what = check["what"].get<std::string>();
      if (what.find("no bank conflicts") == std::string::npos) continue;
      INFO(what);
      CHECK(check["result"] == "proved");
    }
    std::vector<std::string> run = {"run",      c.kernel, "--level", "thread",
                                    "--target", target,   "--json"};
    run.insert(run.end(), c.options.begin(), c.options.end());
    CliResult r = run_tessel(run);
    REQUIRE(!r.out.empty());
    auto report = nlohmann::json::parse(r.out);
    INFO(r.out.substr(0, 400));
    REQUIRE(report.contains("sim"));
    if (c.runs_clean) {
      CHECK(r.status == 0);
      CHECK(report["passed"] == true);
    }
    CHECK(report["sim"]["shared"]["bank_conflicts"].get<int64_t>() == 0);
  }
}

}  // namespace

TEST_SUITE("AMD conflict sweep") {
  // Groups of five cases, so that each test case stays within a few seconds.
  TEST_CASE("gfx942: every example and workload is bank-conflict-free, cases 0-4") {
    sweep("gfx942", 0, 5);
  }
  TEST_CASE("gfx942: cases 5-9") { sweep("gfx942", 5, 10); }
  TEST_CASE("gfx942: cases 10-14") { sweep("gfx942", 10, 15); }
  TEST_CASE("gfx942: cases 15-19") { sweep("gfx942", 15, 20); }
  TEST_CASE("gfx942: cases 20-24") { sweep("gfx942", 20, 25); }
  TEST_CASE("gfx942: cases 25-29") { sweep("gfx942", 25, 30); }
  TEST_CASE("gfx942: cases 30-34") { sweep("gfx942", 30, 35); }
  TEST_CASE("gfx942: cases 35-39") { sweep("gfx942", 35, 40); }
  TEST_CASE("gfx90a: every example and workload is bank-conflict-free, cases 0-4") {
    sweep("gfx90a", 0, 5);
  }
  TEST_CASE("gfx90a: cases 5-9") { sweep("gfx90a", 5, 10); }
  TEST_CASE("gfx90a: cases 10-14") { sweep("gfx90a", 10, 15); }
  TEST_CASE("gfx90a: cases 15-19") { sweep("gfx90a", 15, 20); }
  TEST_CASE("gfx90a: cases 20-24") { sweep("gfx90a", 20, 25); }
  TEST_CASE("gfx90a: cases 25-29") { sweep("gfx90a", 25, 30); }
  TEST_CASE("gfx90a: cases 30-34") { sweep("gfx90a", 30, 35); }
  TEST_CASE("gfx90a: cases 35-39") { sweep("gfx90a", 35, 40); }
  TEST_CASE("the groups above cover every case") { CHECK(sweep_cases().size() <= 40); }
}
