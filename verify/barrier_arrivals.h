// The arrival counts of a kernel's mbarriers (warp specialisation, hand-written or automatic):
// each site that arrives on a barrier is reached by exactly the number of threads the barrier's
// phases wait for (docs/verify.md, "mbarrier arrivals").
#pragma once

#include <vector>

#include "core/kernel.h"
#include "verify/kernel_proofs.h"

namespace tessel {

/// One check per mbarrier buffer whose arrivals come from sites guarded by conditions on the
/// thread index only: the threads of the block that reach each site (every thread index
/// evaluated) equal the count `T.mbarrier_init` gave the barrier. Barriers whose sites depend on
/// other values, or whose entries have different counts, get no claim.
std::vector<KernelCheck> prove_barrier_arrivals(const Kernel& kernel);

}  // namespace tessel
