// The warp-wide shared-memory accesses of a thread-level kernel, each as a BankAccess with the
// domain of its symbols, ready for prove_conflict_free: what `tessel verify` proves about
// accesses.
//
// The walk keeps the enclosing loops and conditions of every access. The thread variable becomes
// `warp * warp_size + lane`, with `warp` a symbol over the block's warps; loop variables become
// symbols over their ranges; `if` conditions that are integer facts restrict the domain (when they
// do not mention the lane) or the active lanes (when they do); conditions on loaded data are
// dropped, which over-approximates (all lanes, every value) and is said in the access's `guard`.
// A `T.vectorized(V)` loop whose index is proved contiguous and aligned in its variable is one
// request of V elements per lane (the index taken at v = 0), as the simulator and codegen issue
// it; otherwise each of its iterations is a request of one element.
#pragma once

#include <string>
#include <vector>

#include "core/kernel.h"
#include "core/target.h"
#include "verify/bank_proofs.h"
#include "verify/index_bounds.h"

namespace tessel {

/// One warp-wide shared-memory access site of a thread-level kernel.
struct SharedAccess {
  BankAccess access;       ///< lane, index (over `domain`'s symbols), width, active lanes
  VarDomain domain;        ///< ranges of the loop variables, the warp and the block indices; guards
  std::string kind;        ///< "load", "store", "ldmatrix_x4", "cp_async_16"
  std::string index_text;  ///< the index as the lowered IR writes it: "A_shared[tx * 8 + v]"
  std::string site;        ///< the statement's source location, "" when unknown
  std::string symbols;     ///< "k < 16, ko < 2, warp < 4" (the symbols the index uses)
  std::string guard;       ///< conditions that restrict it, in IR syntax ("" when none)
  bool guard_dropped = false;  ///< a condition on loaded data was ignored (over-approximation)
  std::string not_provable;    ///< non-empty when the index itself depends on loaded data
  int vector = 0;   ///< V when a T.vectorized(V) loop makes it one V-element request per lane
  std::string key;  ///< equal for accesses that are the same proof
};

/// Every warp-wide shared-memory load, store, ldmatrix source and cp.async destination of
/// `kernel` (thread-level IR), deduplicated by `key` (buffer, index text, width, guard, ranges),
/// in program order. Requires: `kernel` is lowered for `target`.
std::vector<SharedAccess> collect_shared_accesses(const Kernel& kernel, const Target& target,
                                                  unsigned timeout_ms = 60000);

}  // namespace tessel
