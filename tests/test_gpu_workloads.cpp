// The GPU benchmark of every workload (tools/gpu_workloads.h): it covers every workload, its
// FLOP and byte counts equal hand-derived ones, and without a GPU it says why and runs nothing.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <sstream>

#include "codegen/gpu_runner.h"
#include "tools/cli.h"
#include "tools/gpu_workloads.h"

using namespace tessel;
using namespace tessel::cli;

namespace {

WorkloadCost cost_of(const std::string& kernel, const std::vector<std::string>& defines) {
  return workload_cost(resolve_kernel(kernel, defines));
}

}  // namespace

TEST_SUITE("gpu workloads benchmark") {
  TEST_CASE("the cases cover every workload of the paper, quick mode one case per kernel") {
    std::set<std::string> kernels;
    std::vector<WorkloadCase> all = gpu_workload_cases(false);
    for (const WorkloadCase& c : all) kernels.insert(c.kernel);
    for (const char* k :
         {"gemm", "flash_attention", "mla_decode", "mla_decode_split", "chunk_scan", "chunk_state",
          "linear_attention", "gemm_splitk", "dequant_gemm_uint4", "dequant_gemm_int4",
          "dequant_gemm_nf4", "dequant_gemm_fp4", "dequant_gemm_int2", "dequant_gemv_uint4",
          "dequant_gemv_int4", "dequant_gemv_nf4", "dequant_gemv_fp4", "dequant_gemv_int2"}) {
      CHECK_MESSAGE(kernels.count(k) == 1, k << " has no case");
    }
    // Every preset of GEMM (8), FlashAttention (5), MLA (6 x 2 kernels), CC (6), CT (6), the
    // GEMVs (8 x 5) and one size each of linear_attention, the 5 dequant GEMMs and split-K.
    CHECK(all.size() == 8 + 5 + 12 + 6 + 6 + 1 + 5 + 40 + 1);
    std::vector<WorkloadCase> quick = gpu_workload_cases(true);
    CHECK(quick.size() == kernels.size());
  }

  TEST_CASE("GEMM M3 is 2MNK flops over A, B (fp16) and C (fp32) once") {
    // M3: M=4096, N=8192, K=28672. 2 * 4096 * 8192 * 28672 = 1,924,145,348,608.
    // Bytes: A 4096*28672*2 = 234,881,024; B 28672*8192*2 = 469,762,048; C 4096*8192*4 =
    // 134,217,728; sum 838,860,800.
    WorkloadCost c = cost_of("gemm", {"preset=M3"});
    CHECK(c.flops == 1924145348608.0);
    CHECK(c.bytes == 838860800.0);
  }

  TEST_CASE("FlashAttention counts half the score matrix when causal") {
    // FA0: 32 heads, seq 512, d 128, causal: 4 * 32 * 512^2 * 128 / 2 = 2^31. Q, K, V, O of
    // 32 * 512 * 128 fp16 each: 4 * 2,097,152 * 2 = 16,777,216 bytes. FA1 (not causal): 2^32.
    WorkloadCost fa0 = cost_of("flash_attention", {"preset=FA0"});
    CHECK(fa0.flops == 2147483648.0);
    CHECK(fa0.bytes == 16777216.0);
    CHECK(cost_of("flash_attention", {"preset=FA1"}).flops == 4294967296.0);
  }

  TEST_CASE("MLA decode counts scores over dim + pe_dim and the output over dim") {
    // MLA0: batch 64, 128 heads, 1024 keys, dim 512, pe_dim 64:
    // 2 * 64 * 128 * 1024 * (2 * 512 + 64) = 2^24 * 1088 = 18,253,611,008.
    // Bytes (fp16): Q 64*128*512 -> 8,388,608; Q_pe 64*128*64 -> 1,048,576; KV 64*1024*512 ->
    // 67,108,864; K_pe 64*1024*64 -> 8,388,608; Output as Q 8,388,608; sum 93,323,264.
    WorkloadCost c = cost_of("mla_decode", {"preset=MLA0"});
    CHECK(c.flops == 18253611008.0);
    CHECK(c.bytes == 93323264.0);
  }

  TEST_CASE("chunk_state counts 2 B L H P N flops over x, B, dt, dA_cumsum and states") {
    // CT0: batch 1, seq 1024, 64 heads, headdim 64, dstate 128, chunk 256 (4 chunks), 1 group.
    // flops 2 * 1024 * 64 * 64 * 128 = 2^30. Elements: B 1024*128 = 131,072; x 1024*64*64 =
    // 4,194,304; dt and dA_cumsum 64*4*256 = 65,536 each; states 4*64*64*128 = 2,097,152;
    // 6,553,600 fp16 elements = 13,107,200 bytes.
    WorkloadCost c = cost_of("chunk_state", {"preset=CT0"});
    CHECK(c.flops == 1073741824.0);
    CHECK(c.bytes == 13107200.0);
  }

  TEST_CASE("chunk_scan adds the causal half of the intra-chunk product") {
    // CC0: 2 * 1024 * 256 * 64 * 64 * 0.5 = 1,073,741,824 plus 2 * 1024 * 64 * 64 * 128 =
    // 1,073,741,824: 2^31.
    CHECK(cost_of("chunk_scan", {"preset=CC0"}).flops == 2147483648.0);
  }

  TEST_CASE("the int2 GEMV moves its packed weights: a quarter byte per weight") {
    // V5: N = K = 9216. flops 2 * 9216^2 = 169,869,312. Bytes: A 9216 int8; B 9216 x 2304 packed
    // bytes = 21,233,664; C 9216 int32 = 36,864; sum 21,279,744.
    WorkloadCost c = cost_of("dequant_gemv_int2", {"preset=V5"});
    CHECK(c.flops == 169869312.0);
    CHECK(c.bytes == 21279744.0);
  }

  TEST_CASE("linear attention counts the chunked algorithm's four products") {
    // batch 1, 2 heads, 256 positions, dk = dv = 64, chunk 64 (the defaults):
    // 2 * 1 * 2 * 256 * (2 * 64 * 64 + 64 * 128) = 1024 * 16384 = 16,777,216.
    CHECK(cost_of("linear_attention", {}).flops == 16777216.0);
  }

  TEST_CASE("a kernel without a FLOP formula is a usage error naming it") {
    CHECK_THROWS_WITH_AS(cost_of("softmax", {}),
                         doctest::Contains("no FLOP count for kernel 'softmax'"), UsageError);
  }

  TEST_CASE("without a GPU the benchmark says why, runs nothing and exits 0") {
    std::string why;
    if (CudaSession::open(&why)) {
      MESSAGE("a GPU is present: the no-GPU path is not taken on this machine");
      return;
    }
    std::string csv = "gpu_workloads_test_" + std::to_string(::getpid()) + ".csv";
    std::ostringstream out;
    int status = run_gpu_workloads(gpu_workload_cases(true), csv, out);
    CHECK(status == 0);
    CHECK(out.str().find("bench_gpu_workloads: no GPU to run on (" + why + "); nothing was run") !=
          std::string::npos);
    std::FILE* f = std::fopen(csv.c_str(), "r");
    CHECK(f == nullptr);  // nothing appended: no file made
    if (f) std::fclose(f), std::remove(csv.c_str());
  }
}  // TEST_SUITE
