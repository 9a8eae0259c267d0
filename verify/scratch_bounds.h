// Proofs that a launch stays inside the T.alloc_global scratch of its kernel: for every element
// load and store of a scratch tensor, for every thread, block, iteration and size, the offset
// lies inside the tensor (docs/verify.md). The scratch is no parameter the caller sizes, so
// an access past its end would corrupt whatever the host allocated next to it.
#pragma once

#include <vector>

#include "core/kernel.h"
#include "verify/kernel_proofs.h"

namespace tessel {

/// One check per scratch tensor `launch` (a lowered, one-launch kernel) touches: each of its
/// element accesses inside the tensor. Accesses through instructions (cp.async operands) are
/// left to the simulator's bounds checks.
std::vector<KernelCheck> prove_scratch_bounds(const Kernel& launch,
                                              const std::vector<Buffer>& scratch, int warp_size,
                                              unsigned timeout_ms);

}  // namespace tessel
