// Every proof `tessel verify` makes about one lowered kernel, as a list of checks with times
// (docs/verify.md):
//   - completeness: nothing of the tile level is left (verify/completeness.h);
//   - capacity: threads, shared memory and registers within the target's limits
//     (core/capacity.h);
//   - each shared-memory layout inference chose: a bijection onto its allocation when it fills it
//     (a swizzle), else injective and inside the allocation (padding);
//   - each fragment and each loop partition: every element held by exactly `replicate` threads
//     with no register slot shared, and every owner thread inside the block;
//   - registers: every read of a register its own thread wrote before, every replica of a
//     replicated fragment written (verify/definition_proofs.h);
//   - alignment: every cp.async, ldmatrix row and vector copy at a multiple of its size
//     (verify/alignment_proofs.h);
//   - each warp-wide shared-memory access of the thread-level IR (verify/shared_accesses.h):
//     free of bank conflicts for every value of its loop variables and warp index;
//   - mbarriers: every arrive site reached by as many threads as the barrier's phases wait for
//     (verify/barrier_arrivals.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/passes.h"
#include "core/target.h"

namespace tessel {

/// One proof about the kernel.
struct KernelCheck {
  std::string what;                           ///< the claim, naming the buffer and its origin
  std::string result;                         ///< "proved", "failed" or "undecided"
  std::optional<std::string> counterexample;  ///< failed: the witness in the user's terms;
                                              ///< undecided: why
  double ms = 0;                              ///< wall time of the proof
};

/// The checks of one kernel, in report order: completeness, capacity, layouts, fragments, loops,
/// registers, alignment, accesses.
struct KernelProofs {
  std::vector<KernelCheck> checks;

  /// Checks whose result is `result`.
  int count(const std::string& result) const;
  /// Sum of the checks' times.
  double total_ms() const;
  /// True when every check was proved.
  bool all_proved() const { return count("proved") == static_cast<int>(checks.size()); }
};

struct KernelProofOptions {
  unsigned timeout_ms = 60000;  ///< per Z3 query; a query that runs out is "undecided"
  bool warp_specialize = true;  ///< verify_kernel's lowering: LowerOptions::warp_specialize
};

/// Proves every layout, fragment, loop partition, shared-memory access and global element access
/// of `lowered` (the output of lower_kernel for `target`), and checks its capacity
/// (core/capacity.h). Global buffers in `scratch` are named as T.alloc_global scratch.
KernelProofs prove_kernel(const LoweredKernel& lowered, const Target& target,
                          const KernelProofOptions& options = {},
                          const std::vector<Buffer>& scratch = {});

/// What `tessel verify` does: the capacity of `kernel` as written, then — when it fits — the
/// kernel lowered for `target` (capacity left to the report, not thrown) and prove_kernel.
KernelProofs verify_kernel(const Kernel& kernel, const Target& target,
                           const KernelProofOptions& options = {});

}  // namespace tessel
