// The CUDA runner: compiles generated source with nvcc, loads the cubin with the CUDA driver API,
// runs the kernel on the GPU and copies the tensors back. The driver (libcuda.so.1) is opened at
// run time, so Tessel builds and runs everywhere and the runner says plainly when a machine has
// no driver or no GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/emit.h"

namespace tessel {

/// One kernel argument: a tensor (host bytes, copied in and back) or an int scalar.
struct LaunchArg {
  uint8_t* data = nullptr;
  size_t bytes = 0;
  bool is_scalar = false;
  int scalar = 0;
};

struct GpuLaunch {
  std::vector<int64_t> grid;  ///< blocks along x, y, z
  int warmup = 0;             ///< untimed runs before the timed ones
  int repeats = 1;            ///< timed runs (each one a full launch)
  /// Called before every timed run (e.g. to flush the L2 cache); may be empty.
  bool flush_l2 = false;
};

struct GpuRunResult {
  bool ran = false;
  std::string unavailable;    ///< why it did not run (no driver, no device, compile error)
  std::string device;         ///< "NVIDIA H100 80GB HBM3 (sm_90)"
  std::string arch;           ///< "sm_90a"
  double compile_seconds = 0;
  std::vector<double> kernel_ms;  ///< one per timed run
};

/// The target to lower for on the first CUDA device ("sm80" or "sm90"), or "" with `why` set.
std::string cuda_device_target(std::string* why);

/// Compiles `source` (CUDA) for the first device, runs it `warmup + repeats` times with `args`,
/// and copies every tensor argument back into its host bytes after the last run.
GpuRunResult run_on_cuda(const EmittedSource& source, const GpuLaunch& launch,
                         std::vector<LaunchArg>& args);

}  // namespace tessel
