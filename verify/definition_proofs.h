// Ownership and definition of registers in a lowered kernel, a proof family of `tessel verify`:
//
//   - reads: every read of a register — a local buffer, or the register array a fragment became
//     — is of a register its own thread wrote before, for every thread, block, loop iteration
//     and register the read touches (an instruction operand reads several);
//   - replicas: every write of a replicated fragment reaches all replicas — when a thread that
//     holds element e writes e's register, every other thread holding e writes it in the same
//     iteration too.
//
// A failed proof names the thread, the register, the fragment element, the read and the writes
// with their conditions and source locations. Reads are proved by enumeration when earlier
// unconditional writes cover every register they may touch (no Z3 call), else with Z3 over
// every value (symbolic sizes included); writes under conditions on loaded data are not modelled
// (a proof that needs them is undecided, never proved).
#pragma once

#include <vector>

#include "core/lowering.h"
#include "verify/kernel_proofs.h"

namespace tessel {

/// One check per register buffer that is read (reads) and per replicated fragment (replicas),
/// in the order the kernel allocates them. `fragments`: the fragment layouts inference chose
/// (register arrays keep their fragment's name); `warp_size` words the thread in messages.
std::vector<KernelCheck> prove_register_definitions(const Kernel& kernel,
                                                    const LayoutMap& fragments, int warp_size,
                                                    unsigned timeout_ms);

}  // namespace tessel
