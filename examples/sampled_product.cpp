// The matrix product on a sample of C's elements: rows, columns and whole tiles.
#include "examples/sampled_product.h"

#include <algorithm>
#include <string>
#include <utility>

namespace tessel {

namespace {

constexpr int64_t kPanel = 256;  // rows of A or columns of B converted and multiplied at once

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<int64_t> iota_range(int64_t begin, int64_t end) {
  std::vector<int64_t> v;
  for (int64_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

}  // namespace

MatrixD all_rows(const MatrixPart& a_rows, int64_t rows, int64_t K) {
  constexpr int64_t kSlice = 64;
  MatrixD all(rows, K);
  parallel_for((rows + kSlice - 1) / kSlice, [&](int64_t s) {
    const int64_t r0 = s * kSlice, r1 = std::min(rows, r0 + kSlice);
    MatrixD slice;
    a_rows(iota_range(r0, r1), slice);
    all.middleRows(r0, r1 - r0) = slice;
  });
  return all;
}

MatrixPart tensor_rows(const HostTensor& t) {
  return [&t](const std::vector<int64_t>& index, MatrixD& out) {
    const int64_t K = t.shape()[1];
    out.resize(static_cast<int64_t>(index.size()), K);
    for (size_t i = 0; i < index.size(); ++i) {
      for (int64_t k = 0; k < K; ++k) out(static_cast<int64_t>(i), k) = t.at(index[i] * K + k);
    }
  };
}

MatrixPart tensor_rows_as_columns(const HostTensor& t) {
  return [&t](const std::vector<int64_t>& index, MatrixD& out) {
    const int64_t K = t.shape()[1];
    out.resize(K, static_cast<int64_t>(index.size()));
    thread_local std::vector<double> row;
    row.resize(static_cast<size_t>(K));
    for (size_t j = 0; j < index.size(); ++j) {
      read_elements(t, index[j] * K, K, row.data());
      for (int64_t k = 0; k < K; ++k) out(k, static_cast<int64_t>(j)) = row[static_cast<size_t>(k)];
    }
  };
}

SampledOutput sampled_tiled_product(const TiledProduct& c, const MatrixPart& a_rows,
                                    const MatrixPart& b_cols, const ReferenceSampleRequest& req) {
  const int64_t tr = c.tile_rows, tc = c.tile_cols;
  const int64_t row_tiles = (c.rows + tr - 1) / tr, col_tiles = (c.cols + tc - 1) / tc;
  const std::vector<int64_t> grid = c.rows_on_x ? std::vector<int64_t>{row_tiles, col_tiles}
                                                : std::vector<int64_t>{col_tiles, row_tiles};
  std::vector<MatrixTile> tiles;
  std::string where;
  if (req.grid == grid) {
    for (int64_t id : req.simulated) {
      const int64_t x = id % grid[0], y = id / grid[0];
      const int64_t r = c.rows_on_x ? x : y, q = c.rows_on_x ? y : x;
      tiles.push_back(
          {r * tr, std::min(c.rows, (r + 1) * tr), q * tc, std::min(c.cols, (q + 1) * tc)});
    }
    const std::string row_block = c.rows_on_x ? "bx" : "by", col_block = c.rows_on_x ? "by" : "bx";
    where = "the tiles " + c.output + "[" + row_block + "*" + std::to_string(tr) + ", " +
            col_block + "*" + std::to_string(tc) + "] of the " + std::to_string(tiles.size()) +
            " simulated blocks in full";
  } else {
    where = "no tile of a simulated block in full (the grid is not " + c.grid_words +
            ", so its blocks' tiles are not known)";
  }
  std::vector<int64_t> rows = sample_per_tile(c.rows, tr, req.per_tile, req.seed);
  std::vector<int64_t> cols = sample_per_tile(c.cols, tc, req.per_tile, req.seed + 1);
  SampledOutput out = sampled_product(c.rows, c.cols, c.depth, a_rows, b_cols, rows, cols, tiles);
  out.name = c.output;
  out.description = where + "; elsewhere " + std::to_string(req.per_tile) + " rows of every " +
                    std::to_string(tr) + " and " + std::to_string(req.per_tile) +
                    " columns of every " + std::to_string(tc) + " (" + std::to_string(rows.size()) +
                    " rows, " + std::to_string(cols.size()) + " columns, drawn with seed " +
                    std::to_string(req.seed) + ")";
  return out;
}

double gemm_shape_macs(const Params& p) {
  return static_cast<double>(p.integer("M")) * static_cast<double>(p.integer("N")) *
         static_cast<double>(p.integer("K"));
}

std::vector<int64_t> sample_per_tile(int64_t extent, int64_t tile, int64_t per_tile,
                                     uint64_t seed) {
  std::vector<int64_t> picked;
  uint64_t state = seed ^ 0x5eed5a3b1e7a11edULL;
  for (int64_t begin = 0; begin < extent; begin += tile) {
    const int64_t len = std::min(tile, extent - begin);
    std::vector<int64_t> span;
    if (len <= per_tile) {
      span = iota_range(begin, begin + len);
    } else {
      while (static_cast<int64_t>(span.size()) < per_tile) {
        int64_t i = begin + static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(len));
        if (std::find(span.begin(), span.end(), i) == span.end()) span.push_back(i);
      }
      std::sort(span.begin(), span.end());
    }
    picked.insert(picked.end(), span.begin(), span.end());
  }
  return picked;
}

SampledOutput sampled_product(int64_t M, int64_t N, int64_t K, const MatrixPart& a_rows,
                              const MatrixPart& b_cols, const std::vector<int64_t>& rows,
                              const std::vector<int64_t>& cols,
                              const std::vector<MatrixTile>& full_tiles) {
  // The sampled rows of C: A's rows times B, one panel of B's columns at a time.
  MatrixD a_sampled, c_rows(rows.size(), N);
  a_rows(rows, a_sampled);
  parallel_for((N + kPanel - 1) / kPanel, [&](int64_t p) {
    const int64_t j0 = p * kPanel, j1 = std::min(N, j0 + kPanel);
    MatrixD b_panel;
    b_cols(iota_range(j0, j1), b_panel);
    c_rows.middleCols(j0, j1 - j0).noalias() = a_sampled * b_panel;
  });
  // The sampled columns: A times B's columns, one panel of A's rows at a time.
  MatrixD b_sampled, c_cols(M, cols.size());
  b_cols(cols, b_sampled);
  parallel_for((M + kPanel - 1) / kPanel, [&](int64_t p) {
    const int64_t i0 = p * kPanel, i1 = std::min(M, i0 + kPanel);
    MatrixD a_panel;
    a_rows(iota_range(i0, i1), a_panel);
    c_cols.middleRows(i0, i1 - i0).noalias() = a_panel * b_sampled;
  });
  std::vector<MatrixD> c_tiles(full_tiles.size());
  parallel_for(static_cast<int64_t>(full_tiles.size()), [&](int64_t t) {
    const MatrixTile& tile = full_tiles[static_cast<size_t>(t)];
    MatrixD a, b;
    a_rows(iota_range(tile.row0, tile.row1), a);
    b_cols(iota_range(tile.col0, tile.col1), b);
    c_tiles[static_cast<size_t>(t)].noalias() = a * b;
  });

  // The elements row by row, each once, in flat order.
  std::vector<int64_t> row_at(M, -1);
  for (size_t i = 0; i < rows.size(); ++i) row_at[rows[i]] = static_cast<int64_t>(i);
  SampledOutput out;
  std::vector<std::pair<int64_t, double>> line;
  for (int64_t r = 0; r < M; ++r) {
    if (row_at[r] >= 0) {
      for (int64_t c = 0; c < N; ++c) {
        out.indices.push_back(r * N + c);
        out.expected.push_back(c_rows(row_at[r], c));
      }
      continue;
    }
    line.clear();
    for (size_t s = 0; s < cols.size(); ++s) line.emplace_back(cols[s], c_cols(r, s));
    for (size_t t = 0; t < full_tiles.size(); ++t) {
      const MatrixTile& tile = full_tiles[t];
      if (r < tile.row0 || r >= tile.row1) continue;
      for (int64_t c = tile.col0; c < tile.col1; ++c)
        line.emplace_back(c, c_tiles[t](r - tile.row0, c - tile.col0));
    }
    std::stable_sort(line.begin(), line.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t i = 0; i < line.size(); ++i) {
      if (i > 0 && line[i].first == line[i - 1].first) continue;  // a column also in a tile
      out.indices.push_back(r * N + line[i].first);
      out.expected.push_back(line[i].second);
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> sample_per_unit(int64_t units, int64_t extent, int64_t per_unit,
                                                  uint64_t seed) {
  std::vector<std::vector<int64_t>> picked(static_cast<size_t>(units));
  for (int64_t u = 0; u < units; ++u) {
    picked[static_cast<size_t>(u)] =
        sample_per_tile(extent, extent, per_unit, seed * 0x9e3779b97f4a7c15ULL + u);
  }
  return picked;
}

void add_span(std::vector<int64_t>& indices, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) indices.push_back(i);
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
}

}  // namespace tessel
