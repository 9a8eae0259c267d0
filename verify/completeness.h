// Completeness of a lowered kernel, the first check of `tessel verify`: nothing of the tile level
// is left — no tile operator, no T.Parallel or T.Pipelined loop, no T.use_swizzle, no fragment
// buffer — since the thread-level interpreter and codegen can run none of them.
#pragma once

#include "core/kernel.h"
#include "verify/kernel_proofs.h"

namespace tessel {

/// "proved" when `lowered` is thread-level IR through and through; "failed" naming every
/// leftover with its source location otherwise.
KernelCheck check_complete(const Kernel& lowered);

}  // namespace tessel
