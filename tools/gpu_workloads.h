// The GPU benchmark of every workload (bench/bench_gpu_workloads): which kernels at which sizes,
// their FLOP and byte counts, and the run itself — correctness at the kernel's default size
// against its reference, then the timed runs at the paper's sizes — skipped with the reason
// where there is no GPU.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "tools/kernel_source.h"

namespace tessel::cli {

/// One timed case: a built-in kernel with -D values (a paper preset, or sizes).
struct WorkloadCase {
  std::string kernel;
  std::string label;  ///< the preset's name, or what the sizes are
  std::vector<std::string> defines;
};

/// The work one launch of a workload does: floating-point (or integer multiply-add) operations,
/// and the bytes it must move at least — every tensor parameter read or written once.
struct WorkloadCost {
  double flops = 0;
  double bytes = 0;
};

/// Every workload of the paper at its sizes: GEMM (M0-M7), FlashAttention (FA0-FA4), MLA decode
/// (MLA0-MLA5), chunk_scan (CC0-CC5), chunk_state (CT0-CT5), linear_attention, the dequantising
/// GEMMs (M0) and GEMVs (V0-V7) of every format, gemm_splitk. `quick`: one case per kernel.
std::vector<WorkloadCase> gpu_workload_cases(bool quick);

/// The cost of `k` (docs/workloads.md, "GPU benchmark", gives each formula). UsageError for a
/// kernel the table has no formula for.
WorkloadCost workload_cost(const ResolvedKernel& k);

/// Runs `cases` on the first CUDA device and appends one row per case to `csv_path` (date, device,
/// kernel, case, correct, median/p20/p80 ms, TFLOP/s, GB/s). Without a GPU it prints why to `out`
/// and returns 0 having run nothing; 1 when a kernel was wrong on the GPU.
int run_gpu_workloads(const std::vector<WorkloadCase>& cases, const std::string& csv_path,
                      std::ostream& out);

}  // namespace tessel::cli
