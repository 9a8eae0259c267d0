// What a tile operator's reference semantics may use: views of buffer storage and evaluation of
// expressions in the current block's context. The tile-level interpreter (interp/) implements it.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "core/buffer.h"
#include "core/dtype.h"
#include "core/expr.h"

namespace tessel {

/// A non-owning, row-major view of one buffer's elements in their true storage format.
struct TensorView {
  const BufferNode* buffer = nullptr;  ///< for error messages
  DataType dtype;
  std::vector<int64_t> shape;
  uint8_t* data = nullptr;

  int64_t size() const;
  /// The row-major flat position of `index`; requires in_bounds(index).
  int64_t flat(const std::vector<int64_t>& index) const;
  bool in_bounds(const std::vector<int64_t>& index) const;
  /// The element's value (integers exact up to 2^53).
  double load(int64_t flat_index) const { return decode(dtype, load_bits(dtype, data, flat_index)); }
  /// Rounds `value` to the dtype and writes it.
  void store(int64_t flat_index, double value) {
    store_bits(dtype, data, flat_index, encode(dtype, value));
  }
  uint64_t load_raw(int64_t flat_index) const { return load_bits(dtype, data, flat_index); }
  void store_raw(int64_t flat_index, uint64_t bits) { store_bits(dtype, data, flat_index, bits); }
};

/// The interpreter's services for tile operators.
class TileExec {
 public:
  virtual ~TileExec() = default;
  /// Evaluates an integer expression in the block's context (block indices, loop variables).
  virtual int64_t eval_int(const Expr& e) = 0;
  /// Evaluates a scalar expression (any dtype) as a double.
  virtual double eval_value(const Expr& e) = 0;
  /// The storage of `buffer` as seen by this block.
  virtual TensorView view(const Buffer& buffer) = 0;
  /// A lock held while an atomic read-modify-write touches global memory shared by blocks.
  virtual std::unique_lock<std::mutex> lock_atomics() = 0;
};

}  // namespace tessel
