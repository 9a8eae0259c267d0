// Host tensors: owned storage in a dtype's true format, seeded random fill, and comparison with
// tolerances that fit the dtype.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/tile_exec.h"
#include "interp/tensor_storage.h"

namespace tessel {

class HostTensor {
 public:
  HostTensor() = default;
  /// Requires: every extent >= 0. Elements start as `fill_byte` in every byte.
  HostTensor(DataType dtype, std::vector<int64_t> shape, uint8_t fill_byte = 0);
  /// A copy; a large tensor's bytes are copied on every core (its pages first touched there).
  HostTensor(const HostTensor& other);
  /// A copy to compare with later: equal to the copy constructor's, but a tensor of
  /// TensorStorage::kMappedBytes and more not copied before shares its pages with the copy until
  /// one of the two writes them (TensorStorage::share). data() of this tensor may move.
  HostTensor snapshot();
  HostTensor& operator=(const HostTensor& other);
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size() const { return size_; }
  uint8_t* data() { return bytes_.data(); }
  const uint8_t* data() const { return bytes_.data(); }

  double at(int64_t flat) const { return decode(dtype_, load_bits(dtype_, data(), flat)); }
  void set(int64_t flat, double value) { store_bits(dtype_, data(), flat, encode(dtype_, value)); }
  /// A view for tile operators (`buffer` names it in errors).
  TensorView view(const BufferNode* buffer = nullptr);

  /// Deterministic values from `seed`: floats uniform in [-1, 1) rounded to the dtype, integers
  /// uniform over a small range that fits the type ([-8, 8) signed, [0, 16) unsigned), except
  /// uint8, the storage of packed low-bit weights, uniform over every byte [0, 256).
  /// The elements are drawn in chunks of kRandomChunk, each from its own generator (the first
  /// chunk's seeded with `seed`, chunk c's with a mix of `seed` and c), so `workers` threads
  /// (0: one per core) fill chunks side by side and every worker count gives the same bytes.
  void fill_random(uint64_t seed, int workers = 0);
  /// A tensor of fill_random(seed)'s values whose bytes are written once, by the fill (a
  /// sub-byte or vector dtype's are zeroed first: the fill may leave part of a byte or element).
  static HostTensor random(DataType dtype, std::vector<int64_t> shape, uint64_t seed);

  /// Elements per independently seeded chunk of fill_random (a multiple of 8, so chunks of
  /// sub-byte dtypes never share a byte).
  static constexpr int64_t kRandomChunk = int64_t{1} << 20;

 private:
  struct Unfilled {};
  /// The storage allocated, its bytes not yet written.
  HostTensor(DataType dtype, std::vector<int64_t> shape, Unfilled);

  DataType dtype_;
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  TensorStorage bytes_;
};

/// The most bytes of host memory one run's tensors and their copies may take: three quarters
/// of this machine's physical memory (the rest is the system's and the run's own working memory;
/// tools/host_data.h counts each copy a run keeps).
int64_t host_memory_budget();

/// Absolute and relative tolerance: |actual - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double atol;
  double rtol;
  /// Tolerances that fit results stored in `dtype` (exact for integers).
  static Tolerance for_dtype(DataType dtype);
};

struct Comparison {
  bool passed = true;
  double max_abs_err = 0;
  double max_rel_err = 0;
  int64_t mismatches = 0;
  int64_t first_mismatch = -1;  ///< flat index, or -1
  double first_actual = 0, first_expected = 0;
};

/// Compares two tensors of one shape element by element. Values that are not finite are equal
/// only to themselves: NaN to NaN, +inf to +inf, -inf to -inf; against anything else they differ.
/// With `bound` (a tensor of the same shape), element i may differ by bound[i] more: a bound on
/// the kernel's rounding error that the reference derived for that element.
Comparison compare(const HostTensor& actual, const HostTensor& expected, Tolerance tol,
                   const HostTensor* bound = nullptr);

/// "[3, 17]" for a flat index into `shape`.
std::string index_string(const std::vector<int64_t>& shape, int64_t flat);

}  // namespace tessel
