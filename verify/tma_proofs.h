// `tessel verify`'s TMA proofs: every TMA copy's box lands in shared memory exactly where the
// tile's layout stores its elements, for every origin the kernel can give it (every thread,
// block and iteration), and at a 128-byte aligned shared address.
#pragma once

#include <vector>

#include "core/passes.h"
#include "verify/kernel_proofs.h"

namespace tessel {

/// One check per TMA copy of `lowered.before_flatten` (the IR flatten_buffers received, where the
/// copies, the lowering's own included, name their shared tile's logical element; `kernel`, the
/// tile-level form, when it is not set), with the swizzle mode and layout `lowered` gave it: for
/// every box element b and every value of the kernel's variables under the copy's loops and
/// conditions with the box inside the tile,
///   layout(origin + b) == swizzle((layout(origin) + dense(b)) * esize) / esize
/// and layout(origin) * esize is a multiple of 128 (core/tma_map.h, core/tma_placement.h).
/// A failed check names the element, the two storage positions and the variables' values.
std::vector<KernelCheck> prove_tma_boxes(const Kernel& kernel, const LoweredKernel& lowered,
                                         unsigned timeout_ms);

}  // namespace tessel
