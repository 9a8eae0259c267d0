// `tessel run KERNEL --device cuda`: the kernel lowered for the machine's GPU, compiled, run there
// and compared with the tile-level interpreter on the same inputs.
#pragma once

#include <vector>

#include "codegen/gpu_runner.h"
#include "interp/host_tensor.h"
#include "tools/cli.h"
#include "tools/kernel_source.h"

namespace tessel::cli {

/// Runs on the first CUDA device, lowered for `target` (empty: the device's own NVIDIA target;
/// the cubin is always built for the device); exit 2 with the reason when there is none (no
/// driver, no GPU) or when the device cannot run code lowered for `target`.
void run_on_device(Context& ctx, const ResolvedKernel& k, uint64_t seed, int repeats,
                   const std::string& target);

/// What the GPU runner needs of `kernel` besides its source: the block-index extents of every
/// launch (launch_grids) and the arguments in source.arguments order — its tensors, then the
/// T.alloc_global scratch of a kernel of several launches (added to `tensors`, filled with 0xFF
/// bytes as the interpreters fill it), then its symbolic sizes. Each tensor argument's host
/// side is its tensor's bytes.
struct DeviceCall {
  std::vector<std::vector<int64_t>> grids;
  std::vector<LaunchArg> args;
};
DeviceCall device_call(const Kernel& kernel, TensorMap& tensors);

/// The kernel's tensors for a GPU run, made as make_tensors makes them (`seed`), with the
/// example's zero_outputs zeroed as the host zeroes them before a launch.
TensorMap device_tensors(const ResolvedKernel& k, const Kernel& kernel, uint64_t seed);

}  // namespace tessel::cli
