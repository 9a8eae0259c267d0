// The values a kernel's own variables take, as a VarDomain for its proofs.
#pragma once

#include "core/kernel.h"
#include "verify/index_bounds.h"

namespace tessel {

/// The thread index over [0, threads), the block indices over the grid (a symbolic grid
/// extent as a fact), and every symbolic size (T.dynamic, T.const) over the non-negative
/// values of its dtype: a tensor extent is never negative. Without these, a proof ranges over
/// values no launch can have, and wrapping index arithmetic there makes its models unreal.
VarDomain kernel_domain(const Kernel& kernel);

}  // namespace tessel
