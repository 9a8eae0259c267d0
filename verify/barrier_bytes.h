// The transaction bytes of a kernel's mbarriers: each `expect_tx` announces exactly the bytes of
// the TMA boxes that complete on the same barrier after it (docs/verify.md, "mbarrier bytes").
#pragma once

#include <vector>

#include "core/kernel.h"
#include "verify/kernel_proofs.h"

namespace tessel {

/// One check per mbarrier buffer that TMA loads complete on, when every such load and every
/// `T.mbarrier_expect_tx` / `T.mbarrier_arrive_expect_tx` on the buffer sit in one of the groups
/// the lowering makes: an expect_tx with constant bytes, followed in the same statement sequence
/// (so under the same conditions and loops) by the TMA loads of constant boxes onto the same
/// barrier element, up to the next expect_tx on the buffer. The claim: each group's loads
/// deliver exactly the bytes its expect_tx announced. Buffers laid out any other way get no
/// claim (the simulator still counts their bytes).
std::vector<KernelCheck> prove_barrier_bytes(const Kernel& kernel);

}  // namespace tessel
