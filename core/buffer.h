// Buffers (tensors in some memory scope, possibly with symbolic shape) and regions of them.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "core/expr.h"

namespace tessel {

/// Where a buffer lives. The names are TileLang's.
enum class Scope : uint8_t {
  kGlobal,     ///< device memory, a kernel parameter
  kShared,     ///< per-block shared memory (T.alloc_shared)
  kSharedDyn,  ///< dynamically sized shared memory ("shared.dyn")
  kFragment,   ///< a block-wide tile held in registers, distributed over threads (T.alloc_fragment)
  kLocal,      ///< per-thread registers (T.alloc_local, T.alloc_var)
};

/// "global", "shared", "shared.dyn", "local.fragment", "local".
const char* scope_name(Scope scope);
/// True for storage private to each thread (local); fragments are block-wide at tile level.
inline bool is_per_thread(Scope s) { return s == Scope::kLocal; }
/// True for storage in registers (fragments and local buffers), invisible to other threads.
inline bool is_register_scope(Scope s) { return s == Scope::kLocal || s == Scope::kFragment; }

class BufferNode {
 public:
  std::string name;
  std::vector<Expr> shape;  ///< extents; integer expressions, possibly symbolic
  DataType dtype;
  Scope scope;
  SourceLoc loc;  ///< where it was declared

  /// Validates the shape: at least one dimension, integral extents, constant extents positive
  /// (user error otherwise, naming the buffer).
  static Buffer make(std::string name, std::vector<Expr> shape, DataType dtype, Scope scope,
                     SourceLoc loc = {});
  size_t ndim() const { return shape.size(); }
  /// The number of elements when every extent is constant.
  std::optional<int64_t> const_size() const;
};

/// Checks that `indices` has one integral index per dimension of `buffer` (user error naming the
/// buffer and `what` otherwise).
void check_indices(const Buffer& buffer, const std::vector<Expr>& indices, const char* what);

/// A half-open interval [min, min + extent) of one dimension.
struct Range {
  Expr min;
  Expr extent;
};

/// A rectangular region of a buffer. `point_form` records that the user wrote only the region's
/// origin (`A[by * 128, k * 32]`), leaving the extents to be taken from the other operand.
struct BufferRegion {
  Buffer buffer;
  std::vector<Range> ranges;
  bool point_form = false;

  /// The whole buffer.
  static BufferRegion full(const Buffer& buffer);
  /// Extents of the dimensions whose extent is not the constant 1 ("squeezed" shape).
  std::vector<Expr> squeezed_extents() const;
  /// True when the region covers the whole buffer.
  bool is_full() const;
};

}  // namespace tessel
