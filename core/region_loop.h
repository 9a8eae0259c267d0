// The element loop of a tile operator over a buffer region (copy, fill, atomic): one variable
// per non-unit dimension, the element index of a region for those variables, and the edge test
// for regions that may hang over a tensor's edge.
#pragma once

#include <vector>

#include "core/analyzer.h"
#include "core/buffer.h"
#include "core/tile_op.h"

namespace tessel {

struct RegionLoop {
  std::vector<Var> vars;         ///< i, j, ... one per non-unit dimension
  std::vector<int64_t> extents;  ///< their constant extents
};

/// The loop over `region`'s non-unit dimensions. User error naming `op` when an extent is not a
/// constant.
RegionLoop region_loop(const BufferRegion& region, const TileOp& op);

/// Tells the analyzer (when given) the range of each loop variable.
void bind_loop(const RegionLoop& loop, Analyzer* analyzer);

/// The element of `region` at loop point `vars` (region.min + var on non-unit dimensions).
std::vector<Expr> region_index(const BufferRegion& region, const std::vector<Var>& vars);

/// `0 <= index < shape` on every dimension the analyzer cannot prove (undefined when it proves
/// them all). With no analyzer, every dimension of a global buffer is tested; shared and
/// register buffers are never tested (their regions were checked when the operator was made).
Expr edge_test(const Buffer& buffer, const std::vector<Expr>& index, Analyzer* analyzer);

/// `if cond: then` (just `then` when cond is undefined).
Stmt guard(const Expr& cond, Stmt then, Stmt otherwise, const SourceLoc& loc);

}  // namespace tessel
