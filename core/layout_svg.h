// SVG pictures of layouts: a fragment as a grid coloured by thread with register numbers (like the
// paper's Fig. 6(c)), and a shared-memory layout as a bank map.
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/layout.h"

namespace tessel {

struct SvgOptions {
  int cell_width = 44;  ///< pixels per cell
  int cell_height = 30;
  std::string title;     ///< drawn above the grid; defaults to the layout's printed form
  int64_t max_rows = 0;  ///< draw only the first rows of the grid (0: all)
  int64_t max_cols = 0;  ///< draw only the first columns (0: all)
};

/// A 2-D fragment (rank 1 is drawn as one row; higher ranks fold leading dimensions into rows) as
/// a grid: cell (i, j) is coloured by its thread (replica 0) and labelled "T{thread}" over
/// "R{local}"; with replicate > 1 the label lists the threads of every replica.
std::string fragment_svg(const Fragment& fragment, const SvgOptions& options = {});

/// A shared-memory layout as a bank map: cell (i, j) is coloured and labelled by the bank of the
/// element's storage offset, bank = (offset * bits / 8 / 4) % 32, where the offset is the
/// row-major linearisation of the layout's output index over its output shape.
std::string bank_map_svg(const Layout& layout, DataType dtype, const SvgOptions& options = {});

}  // namespace tessel
