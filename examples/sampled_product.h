// The matrix product C = A·B on a sample of C's elements (rows, columns, whole tiles), for the
// sampled references of the GEMM and dequantised GEMM examples (examples/reference_sample.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "examples/reference_math.h"
#include "examples/reference_sample.h"
#include "examples/registry.h"

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

/// A's rows `index` from the 2-d tensor `t` itself (A = t): a MatrixPart holding a reference to t.
MatrixPart tensor_rows(const HostTensor& t);
/// B's columns `index` from the 2-d tensor `t` holding B transposed (B = t^T, so column j of B is
/// row j of t): a MatrixPart holding a reference to t.
MatrixPart tensor_rows_as_columns(const HostTensor& t);

/// The whole A (rows × K) that `a_rows` gives, asked for in slices of 64 rows spread over the
/// cores (parallel_for): the full references decode their operands with the same MatrixPart
/// as the sampled ones.
MatrixD all_rows(const MatrixPart& a_rows, int64_t rows, int64_t K);

/// How a kernel's blocks write C = A·B (rows × cols, `depth` deep): one tile_rows × tile_cols
/// tile per block, block (x, y) of a 2-d grid writing the tile at row x (rows_on_x, the
/// dequantised GEMMs' Ct[bx * block_N, by * block_M]) or at row y (the GEMMs'
/// C[by * block_M, bx * block_N]).
struct TiledProduct {
  std::string output;  ///< the output's name, "C" or "Ct"
  int64_t rows, cols, depth;
  int64_t tile_rows, tile_cols;
  bool rows_on_x;
  /// The grid this tiling has, in the kernel's words, for the description when the run's grid
  /// is another: "(ceildiv(N, block_N), ceildiv(M, block_M))".
  std::string grid_words;
};

/// The sampled reference of one tiled product (Example::sampled_reference): C = A·B
/// (sampled_product) on the simulated blocks' tiles in full, when the request's grid is the
/// tiling's, and on `req.per_tile` seeded rows of every tile row (seed req.seed) and columns of
/// every tile column (seed req.seed + 1), with a description of those elements in words.
SampledOutput sampled_tiled_product(const TiledProduct& c, const MatrixPart& a_rows,
                                    const MatrixPart& b_cols, const ReferenceSampleRequest& req);

/// M · N · K of an example with parameters M, N and K: the multiply-adds of a GEMM-shaped full
/// reference (Example::reference_macs).
double gemm_shape_macs(const Params& p);

/// `per_tile` distinct indices of every span [t * tile, min((t + 1) * tile, extent)) of
/// [0, extent) (all of a shorter span), drawn with `seed`; ascending.
std::vector<int64_t> sample_per_tile(int64_t extent, int64_t tile, int64_t per_tile, uint64_t seed);

/// For each of `units` (a chunk, a state): `per_unit` distinct indices of [0, extent), ascending,
/// each unit's drawn with its own seed from `seed`.
std::vector<std::vector<int64_t>> sample_per_unit(int64_t units, int64_t extent, int64_t per_unit,
                                                  uint64_t seed);

/// Adds [begin, end) to the ascending, distinct `indices`, which stay so.
void add_span(std::vector<int64_t>& indices, int64_t begin, int64_t end);

}  // namespace tessel
