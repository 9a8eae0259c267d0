// What one block of a kernel needs from the GPU — shared memory, registers per thread, threads —
// and the check against a target's limits (core/target.h). One function for every level: the
// lowering (before and after), `tessel verify`, codegen and both interpreters call it before they
// allocate anything, so a kernel too large for the GPU is a kernel error naming its buffers, not
// gigabytes of host memory.
//
// The register count is an estimate and a lower bound: the 32-bit registers that hold the
// kernel's register buffers, ceil(elements * bits / 32) for each local buffer (T.alloc_local,
// T.alloc_var, and after lowering the register arrays fragments become); before lowering a
// fragment counts ceil(elements / threads) elements per thread, its share when spread evenly
// (replication only adds). Addresses, loop counters and temporaries come on top, so a kernel over
// the limit by this estimate is certainly over it. Shared memory is the sum of the shared buffers,
// each rounded up to 16 bytes as codegen lays them out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/int_eval.h"
#include "core/kernel.h"
#include "core/target.h"

namespace tessel {

/// One buffer's share of a block's resources.
struct BufferNeed {
  std::string name;
  int64_t bytes = 0;      ///< shared: bytes per block; local: bytes per thread
  int64_t registers = 0;  ///< local: 32-bit registers per thread
  SourceLoc loc;
};

/// What one block needs.
struct BlockNeeds {
  int threads = 0;
  int64_t shared_bytes = 0;  ///< every shared buffer, 16-byte aligned
  int64_t registers = 0;     ///< per thread (the lower bound above)
  std::vector<BufferNeed> shared, local;
  /// Buffers whose size is symbolic and had no value (not counted).
  std::vector<std::string> unknown;
};

/// The needs of `kernel` (tile or thread level). `env` gives the values of symbolic sizes where
/// they are known (at run time); sizes are saturated, never wrapped.
BlockNeeds block_needs(const Kernel& kernel, const IntEnv& env = {});

/// The limits to check against when no target is named (the tile level): each the largest of
/// any target's, so that only a kernel no GPU could run is refused.
const Target& loosest_target();

/// One limit of a block against its need.
struct CapacityCheck {
  std::string claim;                   ///< "shared memory per block: 49152 bytes (...) within ..."
  std::optional<std::string> problem;  ///< set when over the limit: the message, with the fix
};

/// The threads, shared-memory and register limits of `target` against `kernel`, in that order.
std::vector<CapacityCheck> capacity_checks(const Kernel& kernel, const Target& target,
                                           const IntEnv& env = {});

/// The first limit `kernel` exceeds on `target`, as a message naming the kernel, the buffers with
/// their sizes, the limit and the fix; nullopt when it fits.
std::optional<std::string> capacity_problem(const Kernel& kernel, const Target& target,
                                            const IntEnv& env = {});

/// User error with capacity_problem's message when `kernel` does not fit `target` (nullptr: the
/// loosest target).
void check_capacity(const Kernel& kernel, const Target* target, const IntEnv& env = {});

/// User error when one buffer, about to be allocated with the extents `shape` (evaluated, each
/// positive), is more than a block can hold on `target` (nullptr: the loosest target): a shared
/// buffer over a block's shared memory, a register buffer over a thread's registers (a fragment
/// counts its share per thread, as block_needs does). Both interpreters call it before they
/// allocate, for sizes check_capacity could not know beforehand (a size that depends on a block,
/// thread or loop variable, or on a value read from memory). The message names the kernel, the
/// buffer with its source location, shape and bytes, the limit and the fix.
void check_allocation(const Kernel& kernel, const Buffer& buffer, const std::vector<int64_t>& shape,
                      const Target* target);

}  // namespace tessel
