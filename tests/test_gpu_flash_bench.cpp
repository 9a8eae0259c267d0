// The GPU FlashAttention benchmark's logic that needs no GPU (tools/gpu_flash_bench.h): the
// FA0-FA4 presets, the FLOP count, the presets handed to the baseline script, the baseline file,
// the CSV columns, what each path lowers the presets to, and the no-GPU path.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "codegen/gpu_runner.h"
#include "core/passes.h"
#include "core/target.h"
#include "tools/gpu_flash_bench.h"
#include "tools/gpu_gemm_bench.h"
#include "tools/gpu_workloads.h"
#include "tools/kernel_source.h"

using namespace tessel;
using namespace tessel::cli;

TEST_SUITE("GPU FlashAttention benchmark") {
  TEST_CASE("FA0-FA4 are the paper's shapes") {
    // shared/REFERENCE.md: batch 1, 32 heads, d 128, seq 512/512/1024/1024/4096, causal
    // T/F/T/F/T.
    std::vector<FlashPreset> p = flash_bench_presets();
    REQUIRE(p.size() == 5);
    const int64_t seq[] = {512, 512, 1024, 1024, 4096};
    const bool causal[] = {true, false, true, false, true};
    for (int i = 0; i < 5; ++i) {
      CAPTURE(i);
      CHECK(p[i].name == "FA" + std::to_string(i));
      CHECK(p[i].batch == 1);
      CHECK(p[i].heads == 32);
      CHECK(p[i].dim == 128);
      CHECK(p[i].seq_len == seq[i]);
      CHECK(p[i].causal == causal[i]);
    }
  }

  TEST_CASE("FLOPs are 4 b h s^2 d, halved when causal") {
    std::vector<FlashPreset> p = flash_bench_presets();
    // FA1: 4 * 32 * 512^2 * 128 = 2^2 * 2^5 * 2^18 * 2^7 = 2^32.
    CHECK(flash_flops(p[1]) == 4294967296.0);
    // FA0: the same shape, causal: 2^31.
    CHECK(flash_flops(p[0]) == 2147483648.0);
    // FA4: 4 * 32 * 4096^2 * 128 / 2 = 2^2 * 2^5 * 2^24 * 2^7 / 2 = 2^37.
    CHECK(flash_flops(p[4]) == 137438953472.0);
    // The workloads benchmark counts the same.
    for (const FlashPreset& f : p) {
      CAPTURE(f.name);
      ResolvedKernel k = resolve_kernel("flash_attention", {"preset=" + f.name});
      CHECK(workload_cost(k).flops == flash_flops(f));
    }
  }

  TEST_CASE("the baseline script gets one line per preset") {
    std::string text = flash_presets_text();
    CHECK(text.starts_with("FA0 1 32 512 128 1\nFA1 1 32 512 128 0\n"));
    CHECK(text.ends_with("FA4 1 32 4096 128 1\n"));
    CHECK(std::count(text.begin(), text.end(), '\n') == 5);
  }

  TEST_CASE("the baseline file is read, and a malformed one is refused naming the line") {
    std::istringstream good(
        "preset,impl,ms_median,ms_p20,ms_p80\nFA0,flash-attn-4 (flash_attn.cute),0.25,0.24,0.26\n"
        "FA4,flash-attn-4 (flash_attn.cute),3.5,3.4,3.6\n");
    std::string why;
    auto b = read_flash_baseline(good, &why);
    REQUIRE(b);
    CHECK(b->size() == 2);
    CHECK(b->at("FA4").median == 3.5);
    CHECK(b->at("FA0").impl == "flash-attn-4 (flash_attn.cute)");
    std::istringstream no_header("FA0,x,1,1,1\n");
    CHECK_FALSE(read_flash_baseline(no_header, &why));
    CHECK(why.find("line 1 is not the header") != std::string::npos);
    std::istringstream bad("preset,impl,ms_median,ms_p20,ms_p80\nFA0,x,fast,1,1\n");
    CHECK_FALSE(read_flash_baseline(bad, &why));
    CHECK(why.find("line 2 ('FA0,x,fast,1,1')") != std::string::npos);
  }

  TEST_CASE("the CSV says which path, which instructions and which baseline") {
    std::string h = kFlashBenchCsvHeader;
    CHECK(h.find(",path,uses,preset,") != std::string::npos);
    CHECK(h.find(",baseline,baseline_ms_median,") != std::string::npos);
    CHECK(std::count(h.begin(), h.end(), ',') == 18);  // 19 fields, as each row writes
  }

  TEST_CASE("on sm90 the presets lower to wgmma, a TMA producer and warp specialisation") {
    for (const FlashPreset& f : {flash_bench_presets()[0], flash_bench_presets()[4]}) {
      CAPTURE(f.name);
      ResolvedKernel k = resolve_kernel("flash_attention", {"preset=" + f.name});
      Kernel kernel = k.example->build(k.params);
      CHECK(lowered_path_uses(lower_kernel(kernel, find_target("sm90")).kernel) == "wgmma+tma+ws");
      CHECK(lowered_path_uses(lower_kernel(kernel, find_target("sm80")).kernel) ==
            "mma.sync+cp.async");
    }
  }

  TEST_CASE("without a GPU the benchmark says why, runs nothing and exits 0") {
    std::string why;
    if (CudaSession::open(&why)) {
      MESSAGE("a GPU is present: the no-GPU path is not taken on this machine");
      return;
    }
    std::string csv = "gpu_flash_test_" + std::to_string(::getpid()) + ".csv";
    std::ostringstream out;
    CHECK(run_gpu_flash({}, "none", csv, out) == 0);
    CHECK(out.str() == "bench_gpu_flash: no GPU to run on (" + why + "); nothing was run\n");
    std::FILE* f = std::fopen(csv.c_str(), "r");
    CHECK(f == nullptr);
    if (f) std::fclose(f), std::remove(csv.c_str());
  }
}
