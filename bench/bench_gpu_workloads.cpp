// Every workload of the paper on the GPU (tools/gpu_workloads.h): correctness at each kernel's
// default size against its reference, then the paper's sizes timed (L2 flushed before each run,
// >= 25 ms warm-up, median with p20/p80 of 10 runs), with TFLOP/s and GB/s. Appends to
// bench/results/gpu_workloads.csv. Without a GPU it prints why and exits 0.
//
//   build/bench/bench_gpu_workloads [quick]     quick: one case per kernel
#include <cstring>
#include <iostream>

#include "tools/cli.h"
#include "tools/gpu_workloads.h"

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
  try {
    return tessel::cli::run_gpu_workloads(
        tessel::cli::gpu_workload_cases(quick),
        std::string(TESSEL_SOURCE_DIR) + "/bench/results/gpu_workloads.csv", std::cout);
  } catch (const std::exception& e) {
    std::cerr << "bench_gpu_workloads: " << e.what() << "\n";
    return 2;
  }
}
