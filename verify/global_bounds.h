// Proofs that a lowered kernel stays inside its global tensors: for every element load and store of
// a tensor parameter or T.alloc_global scratch, for every thread, block, iteration and size, the
// offset lies inside the tensor (docs/verify.md). An access past the end reads or corrupts
// whatever the host allocated next to it, and nothing on the GPU says so.
#pragma once

#include <vector>

#include "core/kernel.h"
#include "verify/kernel_proofs.h"

namespace tessel {

/// One check per global buffer `launch` (a lowered, one-launch kernel) touches by element loads
/// and stores: each of them inside the buffer. Buffers in `scratch` are named as T.alloc_global
/// scratch. Accesses through instructions (cp.async operands) are left to the simulator's bounds
/// checks.
std::vector<KernelCheck> prove_global_bounds(const Kernel& launch,
                                             const std::vector<Buffer>& scratch, int warp_size,
                                             unsigned timeout_ms);

}  // namespace tessel
