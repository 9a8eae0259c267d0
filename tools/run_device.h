// `tessel run KERNEL --device cuda`: the kernel lowered for the machine's GPU, compiled, run there
// and compared with the tile-level interpreter on the same inputs.
#pragma once

#include "tools/cli.h"
#include "tools/kernel_source.h"

namespace tessel::cli {

/// Runs on the first CUDA device, lowered for `target` (empty: the device's own NVIDIA target;
/// the cubin is always built for the device); exit 2 with the reason when there is none (no
/// driver, no GPU) or when the device cannot run code lowered for `target`.
void run_on_device(Context& ctx, const ResolvedKernel& k, uint64_t seed, int repeats,
                   const std::string& target);

}  // namespace tessel::cli
