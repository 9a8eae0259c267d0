// The parities of a kernel's mbarrier waits in a stage ring (warp specialisation, hand-written or
// automatic): each `T.mbarrier_wait_parity` waits for the phase its barrier's arrivals complete
// in its iteration, or in the previous use of the stage when those arrivals depend on the wait
// (docs/verify.md, "mbarrier parities").
#pragma once

#include <vector>

#include "core/kernel.h"
#include "verify/kernel_proofs.h"

namespace tessel {

/// One check per mbarrier buffer of S entries whose waits and arrivals all sit in loops over one
/// variable k (from `min`, i = k - min), on entry i % S, under conditions on the thread index
/// only: a ring whose entry i % S completes its phase floor(i / S) with the arrivals of iteration
/// i. Each wait's parity must be, for every i, either floor(i / S) % 2 (the phase of its own
/// iteration) or floor(i / S - 1) % 2 (the stage's previous use; a fresh barrier's phase "-1"
/// passes at once), and which one is decided by the iteration's order: the previous use exactly
/// when one of the barrier's arrival sites comes after the wait in the same iteration (through
/// program order and the same-iteration waits). The first choice there deadlocks; the second
/// anywhere else passes on a stale phase. Barriers of a loop whose protocol is not of this form
/// (lagged arrivals, entries other than i % S, conditions on other values) get no claim.
std::vector<KernelCheck> prove_barrier_parities(const Kernel& kernel, unsigned timeout_ms);

}  // namespace tessel
