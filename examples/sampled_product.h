// The matrix product C = A·B on a sample of C's elements (rows, columns, whole tiles), for the
// GEMM examples' sampled references (examples/reference_sample.h).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "examples/reference_math.h"
#include "examples/reference_sample.h"

namespace tessel {

/// A rectangle of a matrix: rows [row0, row1), columns [col0, col1).
struct MatrixTile {
  int64_t row0, row1, col0, col1;
};

/// Fills `out` with the rows `index` of A (|index| × K) or the columns `index` of B (K × |index|).
using MatrixPart = std::function<void(const std::vector<int64_t>& index, MatrixD& out)>;

/// C = A·B (M × K times K × N) on the elements of C in the rows `rows`, in the columns `cols`
/// (each ascending) and in the `full_tiles` (disjoint); `a_rows` and `b_cols` give the operands
/// in double. The products run with Eigen in panels spread over the cores (parallel_for), so
/// they cost (|rows| · N + M · |cols| + the tiles' area) · K multiply-adds. Returns the elements'
/// flat indices (row-major, ascending, each once) and values.
SampledOutput sampled_product(int64_t M, int64_t N, int64_t K, const MatrixPart& a_rows,
                              const MatrixPart& b_cols, const std::vector<int64_t>& rows,
                              const std::vector<int64_t>& cols,
                              const std::vector<MatrixTile>& full_tiles);

/// `per_tile` distinct indices of every span [t * tile, min((t + 1) * tile, extent)) of
/// [0, extent) (all of a shorter span), drawn with `seed`; ascending.
std::vector<int64_t> sample_per_tile(int64_t extent, int64_t tile, int64_t per_tile, uint64_t seed);

}  // namespace tessel
