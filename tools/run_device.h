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

/// The arguments the emitted source of `kernel` takes, in source.arguments order, for the GPU
/// runner: its tensors, then the T.alloc_global scratch of a kernel of several launches (added
/// to `tensors`, filled with 0xFF bytes as the interpreters fill it), then its symbolic sizes.
/// The tensors' bytes are the host side of each argument.
std::vector<LaunchArg> device_args(const Kernel& kernel, TensorMap& tensors);

}  // namespace tessel::cli
