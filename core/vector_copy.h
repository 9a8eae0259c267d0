// The vector copies codegen issues as one wide load and store, recognised in one place so that
// `tessel verify` proves the alignment of exactly the accesses the generated code makes:
//
//   for v in T.vectorized(V):
//       dst[a + v] = src[b + v]
//
// with one dtype on both sides, V elements of 4, 8 or 16 bytes, and both runs contiguous in v
// and starting at a multiple of V elements — each fact proved by an Analyzer that knows the
// ranges of the kernel's variables and of the enclosing loops, bound as codegen binds them.
#pragma once

#include <cstdint>
#include <optional>

#include "core/analyzer.h"
#include "core/kernel.h"

namespace tessel {

struct VectorCopy {
  const StoreNode* store = nullptr;
  const BufferLoadNode* load = nullptr;
  int64_t bytes = 0;  ///< per lane: 4, 8 or 16
  Expr dst_first;     ///< flat element offset of the destination run (v = 0), simplified
  Expr src_first;     ///< flat element offset of the source run (v = 0), simplified
};

/// The row-major element offset of `idx` in `b`, as generated code computes it: in int64 when
/// `b` may hold 2^31 elements or more (a symbolic or large shape), so that the offset of a large
/// tensor never wraps around in int32.
Expr flat_offset(const Buffer& b, const std::vector<Expr>& idx);

/// `loop` as a vector copy, or nullopt when it is anything else or a fact cannot be proved.
std::optional<VectorCopy> match_vector_copy(const ForNode& loop, Analyzer& analyzer);

/// The thread index over [0, threads), block indices over the grid (unbounded above when
/// symbolic), symbolic sizes >= 0.
void bind_kernel_vars(Analyzer& analyzer, const Kernel& kernel);
/// A loop's variable over its range when constant (from a constant minimum up when only that is;
/// between the bounds of its first and last values when the minimum is symbolic).
void bind_loop(Analyzer& analyzer, const ForNode& loop);
/// A loop's variable between the bounds of its first and last values (the whole dtype when
/// those are unknown), replacing whatever range an earlier loop over the same variable left.
void bind_symbolic_loop(Analyzer& analyzer, const ForNode& loop);

}  // namespace tessel
