// The GPU GEMM benchmark (bench/bench_gpu_gemm): the `gemm` example's generated kernel against
// cuBLAS on the paper's shapes, on every code path the device runs — mma.sync (the sm80
// lowering) everywhere, and on compute capability 9.x also the sm90 lowering (wgmma consumers,
// a TMA producer, warp specialisation) — one CSV row per shape, dtype, path and tile; skipped
// with the reason where there is no GPU. The pure parts (shapes, paths, tiles, FLOPs, CSV
// columns, what a lowering uses) are unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "core/kernel.h"

namespace tessel::cli {

/// A GEMM problem C[M, N] = A[M, K] B[K, N].
struct GemmShape {
  std::string name;  ///< "M0" ... "M7" (the paper's Table 2), "4096^3", "8192^3"
  int64_t M = 0, N = 0, K = 0;
};

/// 4096^3 and 8192^3, then (unless `quick`) the paper's M0-M7.
std::vector<GemmShape> gemm_bench_shapes(bool quick);

/// A code path: the target the kernel is lowered for (the cubin is always built for the device).
struct GemmPath {
  std::string name;    ///< "mma.sync", "sm90"
  std::string target;  ///< "sm80", "sm90"
};

/// The paths a device of `device_target` ("sm80" or "sm90") runs: mma.sync, and on sm90 also
/// the sm90 path.
std::vector<GemmPath> gemm_bench_paths(const std::string& device_target);

/// A tile configuration of the `gemm` example.
struct GemmTile {
  int64_t block_M = 0, block_N = 0, block_K = 0, stages = 0, threads = 0;
  /// "128x128x32 s3 t128"
  std::string label() const;
};

/// The tiles measured on `path`: mma.sync 128x128x32 (128 threads) and 128x256x32 (256); sm90
/// 128x128x64 (one consumer warpgroup) and 128x256x64 (two), 3 stages each.
std::vector<GemmTile> gemm_bench_tiles(const GemmPath& path);

/// The `gemm` example's -D values for a shape, a tile and an input type (fp16 or bf16).
std::map<std::string, std::string> gemm_bench_defines(const GemmShape& s, const GemmTile& t,
                                                      bool bf16);

/// 2 M N K: one multiply and one add per product term.
double gemm_flops(const GemmShape& s);

/// What a lowered kernel computes and copies with, from its instructions: the matrix instruction
/// ("wgmma", "mma.sync", "mfma" or "scalar"), the global->shared copy ("tma", "cp.async" or
/// "ld/st") and "+ws" when warp-specialised (it waits on mbarrier phases): "wgmma+tma+ws".
std::string lowered_path_uses(const Kernel& lowered);

/// The CSV header of bench/results/gpu_gemm.csv (no newline).
extern const char* const kGemmBenchCsvHeader;

/// Runs the benchmark on the first CUDA device and appends one row per case to `csv_path`.
/// Without a GPU it prints why to `out` and returns 0 having run nothing; 1 when a kernel was
/// wrong or failed to run; cuBLAS missing is 1 with the reason.
int run_gpu_gemm(bool quick, const std::string& csv_path, std::ostream& out);

}  // namespace tessel::cli
