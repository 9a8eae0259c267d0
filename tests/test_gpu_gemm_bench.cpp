// The GPU GEMM benchmark's logic that needs no GPU (tools/gpu_gemm_bench.h): its shapes, the
// paths per device, the tiles of each path and what they lower to, the FLOP count, the CSV
// columns, and the no-GPU path.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "codegen/gpu_runner.h"
#include "core/passes.h"
#include "core/target.h"
#include "examples/registry.h"
#include "tools/gpu_gemm_bench.h"

using namespace tessel;
using namespace tessel::cli;

TEST_SUITE("GPU GEMM benchmark") {
  TEST_CASE("the shapes are 4096^3, 8192^3 and the paper's M0-M7") {
    std::vector<GemmShape> all = gemm_bench_shapes(false);
    REQUIRE(all.size() == 10);
    // shared/REFERENCE.md, "The paper's benchmark shapes": M2 = (4096, 28672, 8192),
    // M7 = (8192, 8192, 28672).
    CHECK(all[0].name == "4096^3");
    CHECK(all[4].name == "M2");
    CHECK((all[4].M == 4096 && all[4].N == 28672 && all[4].K == 8192));
    CHECK(all[9].name == "M7");
    CHECK((all[9].M == 8192 && all[9].N == 8192 && all[9].K == 28672));
    CHECK(gemm_bench_shapes(true).size() == 2);
  }

  TEST_CASE("a 9.x device runs the sm90 path beside mma.sync, an 8.x device mma.sync only") {
    std::vector<GemmPath> h100 = gemm_bench_paths("sm90");
    REQUIRE(h100.size() == 2);
    CHECK((h100[0].name == "mma.sync" && h100[0].target == "sm80"));
    CHECK((h100[1].name == "sm90" && h100[1].target == "sm90"));
    std::vector<GemmPath> a100 = gemm_bench_paths("sm80");
    REQUIRE(a100.size() == 1);
    CHECK(a100[0].target == "sm80");
  }

  TEST_CASE("each path's tiles lower at M0 to what the path is named for") {
    const Example* gemm = find_example("gemm");
    REQUIRE(gemm != nullptr);
    GemmShape m0 = gemm_bench_shapes(false)[2];
    REQUIRE(m0.name == "M0");
    for (const GemmPath& path : gemm_bench_paths("sm90")) {
      for (const GemmTile& t : gemm_bench_tiles(path)) {
        CAPTURE(path.name);
        CAPTURE(t.label());
        Kernel k = gemm->build(make_params(*gemm, gemm_bench_defines(m0, t, false)));
        Kernel lowered = lower_kernel(k, find_target(path.target)).kernel;
        if (path.target == "sm90") {
          CHECK(lowered_path_uses(lowered) == "wgmma+tma+ws");
          CHECK(lowered->threads == t.threads + 128);  // plus the producer warpgroup
        } else {
          CHECK(lowered_path_uses(lowered) == "mma.sync+cp.async");
          CHECK(lowered->threads == t.threads);
        }
      }
    }
  }

  TEST_CASE("the tile label and the defines name every parameter") {
    GemmTile t{128, 256, 64, 3, 256};
    CHECK(t.label() == "128x256x64 s3 t256");
    auto d = gemm_bench_defines({"M5", 8192, 8192, 8192}, t, true);
    CHECK(d.at("block_N") == "256");
    CHECK(d.at("num_stages") == "3");
    CHECK(d.at("dtype") == "bfloat16");
    CHECK(d.at("K") == "8192");
  }

  TEST_CASE("FLOPs are 2 M N K") {
    // M0: 2 * 4096 * 1024 * 8192 = 2^1 * 2^12 * 2^10 * 2^13 = 2^36.
    CHECK(gemm_flops({"M0", 4096, 1024, 8192}) == 68719476736.0);
    // M2: 2 * 4096 * 28672 * 8192 = 2^36 * 28 = 1924145348608.
    CHECK(gemm_flops({"M2", 4096, 28672, 8192}) == 1924145348608.0);
  }

  TEST_CASE("the CSV says which path and which instructions each row measured") {
    std::string h = kGemmBenchCsvHeader;
    CHECK(h.find(",path,uses,shape,") != std::string::npos);
    CHECK(h.find("tessel_ms_median") != std::string::npos);
    CHECK(h.rfind(",ratio") == h.size() - 6);
    // 20 columns: one per field the row writes.
    CHECK(std::count(h.begin(), h.end(), ',') == 19);
  }

  TEST_CASE("without a GPU the benchmark says why, runs nothing and exits 0") {
    std::string why;
    if (CudaSession::open(&why)) {
      MESSAGE("a GPU is present: the no-GPU path is not taken on this machine");
      return;
    }
    std::string csv = "gpu_gemm_test_" + std::to_string(::getpid()) + ".csv";
    std::ostringstream out;
    CHECK(run_gpu_gemm(true, csv, out) == 0);
    CHECK(out.str() == "bench_gpu_gemm: no GPU to run on (" + why + "); nothing was run\n");
    std::FILE* f = std::fopen(csv.c_str(), "r");
    CHECK(f == nullptr);  // nothing appended: no file made
    if (f) std::fclose(f), std::remove(csv.c_str());
  }
}
