// `tessel run KERNEL --device cuda`: the kernel lowered for the machine's GPU, compiled, run there
// and compared with the tile-level interpreter on the same inputs.
#pragma once

#include "tools/cli.h"
#include "tools/kernel_source.h"

namespace tessel::cli {

/// Runs on the first CUDA device; exit 2 with the reason when there is none (no driver, no GPU).
void run_on_device(Context& ctx, const ResolvedKernel& k, uint64_t seed, int repeats);

}  // namespace tessel::cli
