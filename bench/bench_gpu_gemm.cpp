// GEMM on the GPU (tools/gpu_gemm_bench.h): Tessel's generated kernel against cuBLAS in the same
// process, on the paper's shapes M0-M7 (its Table 2) plus 4096^3 and 8192^3, fp16 and bf16 inputs
// with fp32 output, on every path the device runs: mma.sync, and on compute capability 9.x also
// the sm90 path (wgmma, TMA producer, warp specialisation). Method (shared/REFERENCE.md):
// correctness first (Tessel's C against cuBLAS's, relative to the largest |C|), the L2 flushed
// (256 MB written) before each timed run, warm-up of at least 25 ms, median with p20/p80 of 10
// runs timed with CUDA events, TFLOP/s = 2 M N K / t, and the ratio to cuBLAS. Appends to
// bench/results/gpu_gemm.csv (a `path` and a `uses` column say which code ran). Without a GPU
// it says why and exits 0.
//
//   build/bench/bench_gpu_gemm [quick]     quick: 4096^3 and 8192^3 only
#include <cstring>
#include <iostream>

#include "tools/gpu_gemm_bench.h"

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
  try {
    return tessel::cli::run_gpu_gemm(
        quick, std::string(TESSEL_SOURCE_DIR) + "/bench/results/gpu_gemm.csv", std::cout);
  } catch (const std::exception& e) {
    std::cerr << "bench_gpu_gemm: " << e.what() << "\n";
    return 2;
  }
}
