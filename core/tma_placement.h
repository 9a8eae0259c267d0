// Where a TMA copy puts its box in shared memory, against where the shared tile's layout says
// each element lives: the lowering's choice of a tensor map's swizzle mode (flatten_buffers)
// and the check behind it. `tessel verify` proves the same equation for every origin
// (verify/tma_proofs.cpp); this file checks the box the origin's constant part names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/layout.h"
#include "core/stmt.h"

namespace tessel {

/// Where element `idx` of shared `buffer` is stored (a flat element offset): `layout` linearised
/// row-major over its output shape, or row-major over the buffer's shape without a layout.
int64_t shared_flat(const BufferNode& buffer, const Layout* layout,
                    const std::vector<int64_t>& idx);

/// Why a TMA box with shared origin `origin` (the shared operand's indices), extents `box`
/// (outermost first) and swizzle `swizzle` (bytes) does not land where the layout stores the
/// box's elements: the first element that differs, or a shared address not 128-byte aligned.
/// nullopt when every element agrees.
std::optional<std::string> tma_box_mismatch(const BufferNode& buffer, const Layout* layout,
                                            const std::vector<int64_t>& origin,
                                            const std::vector<int64_t>& box, int swizzle);

/// `call` (a TMA load or store of the tile-level IR) with the swizzle mode whose placement agrees
/// with `layout` (the shared operand's, or null: row-major) for the box at the origin's
/// constant part (every variable 0): the call's own mode if it agrees, else 0, 32, 64, 128 in
/// that order. When none does and the tile is stored in column panels of a swizzle's span
/// (TileLang's swizzles of wide tiles), one call per panel (a SeqNode), each with that mode. User
/// error naming the kernel, the call, the buffer, the box and the first element that lands
/// elsewhere otherwise.
Stmt with_tma_swizzle(const IntrinsicCallNode& call, const Layout* layout,
                      const std::string& kernel);

}  // namespace tessel
