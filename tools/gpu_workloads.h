// The GPU benchmark of every workload (bench/bench_gpu_workloads): which kernels at which sizes,
// their FLOP and byte counts, and the run itself — correctness at the kernel's default size
// against its reference, then the timed runs at the paper's sizes — skipped with the reason
// where there is no GPU.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "codegen/gpu_runner.h"
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

/// Runs `k` at its own sizes once on the first CUDA device, lowered for `target` ("sm80",
/// "sm90"; the cubin is built for the device), and compares its outputs with its reference.
/// Returns "" when they agree, else what differs (or why it could not run).
std::string check_on_device(const ResolvedKernel& k, const std::string& target);

/// Milliseconds of one launch: median, 20th and 80th percentiles.
struct DeviceTiming {
  double median = 0, p20 = 0, p80 = 0;
};

/// Times `k` lowered for `target` on `gpu`: at least 25 ms of warm-up, then 10 runs timed with
/// CUDA events, each after 256 MB written to `flush` (a cold L2) and the zero-initialised outputs
/// cleared. UsageError when it cannot be compiled, loaded or given its tensor maps.
DeviceTiming time_on_device(CudaSession& gpu, uint64_t flush, const ResolvedKernel& k,
                            const std::string& target);

/// Runs `cases` on the first CUDA device and appends one row per case to `csv_path` (date, device,
/// kernel, case, correct, median/p20/p80 ms, TFLOP/s, GB/s). Without a GPU it prints why to `out`
/// and returns 0 having run nothing; 1 when a kernel was wrong on the GPU.
int run_gpu_workloads(const std::vector<WorkloadCase>& cases, const std::string& csv_path,
                      std::ostream& out);

}  // namespace tessel::cli
