// SVG rendering of fragments (thread/register grid, like the paper's Fig. 6(c)) and of shared
// layouts (bank maps).
#include "core/layout_svg.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"

namespace tessel {

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// "T5", "R2": a one-letter prefix and a number.
std::string label(char prefix, int64_t value) {
  std::string s(1, prefix);
  s += std::to_string(value);
  return s;
}

/// A light, distinct colour for key `k` of `n` (hues spread by the golden angle).
std::string colour(int64_t k) {
  double hue = std::fmod(static_cast<double>(k) * 137.508, 360.0);
  int light = 72 + static_cast<int>(k % 3) * 7;
  std::ostringstream os;
  os << "hsl(" << static_cast<int>(hue) << "," << 70 << "%," << light << "%)";
  return os.str();
}

/// Rows x cols view of an n-d shape: the last dimension is the columns.
std::pair<int64_t, int64_t> grid_of(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return {1, shape[0]};
  int64_t rows = 1;
  for (size_t k = 0; k + 1 < shape.size(); ++k) rows *= shape[k];
  return {rows, shape.back()};
}

std::vector<int64_t> index_of(int64_t row, int64_t col, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  idx.back() = col;
  for (size_t k = shape.size() - 1; k-- > 0;) {
    idx[k] = row % shape[k];
    row /= shape[k];
  }
  return idx;
}

constexpr int64_t kMaxCells = 1 << 16;

class SvgGrid {
 public:
  SvgGrid(int64_t rows, int64_t cols, const SvgOptions& opt, const std::string& title) : opt_(opt) {
    int width = std::max(kMargin + static_cast<int>(cols) * opt.cell_width + 10,
                         kMargin + static_cast<int>(title.size()) * 7 + 10);
    int height = kTop + static_cast<int>(rows) * opt.cell_height + 10;
    os_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
        << "\" font-family=\"monospace\" font-size=\"10\">\n";
    os_ << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    os_ << "<text x=\"" << kMargin << "\" y=\"16\" font-size=\"12\">" << xml_escape(title)
        << "</text>\n";
    for (int64_t c = 0; c < cols; ++c) {
      os_ << "<text x=\"" << x(c) + opt.cell_width / 2 << "\" y=\"" << kTop - 4
          << "\" text-anchor=\"middle\" fill=\"#555\">" << c << "</text>\n";
    }
    for (int64_t r = 0; r < rows; ++r) {
      os_ << "<text x=\"" << kMargin - 4 << "\" y=\"" << y(r) + opt.cell_height / 2 + 4
          << "\" text-anchor=\"end\" fill=\"#555\">" << r << "</text>\n";
    }
  }

  void cell(int64_t r, int64_t c, const std::string& fill, const std::string& line1,
            const std::string& line2) {
    os_ << "<rect x=\"" << x(c) << "\" y=\"" << y(r) << "\" width=\"" << opt_.cell_width
        << "\" height=\"" << opt_.cell_height << "\" fill=\"" << fill
        << "\" stroke=\"#333\" stroke-width=\"0.5\"/>\n";
    int cx = x(c) + opt_.cell_width / 2;
    if (line2.empty()) {
      os_ << "<text x=\"" << cx << "\" y=\"" << y(r) + opt_.cell_height / 2 + 4
          << "\" text-anchor=\"middle\">" << xml_escape(line1) << "</text>\n";
      return;
    }
    os_ << "<text x=\"" << cx << "\" y=\"" << y(r) + opt_.cell_height / 2 - 2
        << "\" text-anchor=\"middle\">" << xml_escape(line1) << "</text>\n";
    os_ << "<text x=\"" << cx << "\" y=\"" << y(r) + opt_.cell_height / 2 + 10
        << "\" text-anchor=\"middle\">" << xml_escape(line2) << "</text>\n";
  }

  std::string finish() {
    os_ << "</svg>\n";
    return os_.str();
  }

 private:
  static constexpr int kMargin = 40;
  static constexpr int kTop = 38;
  int x(int64_t c) const { return kMargin + static_cast<int>(c) * opt_.cell_width; }
  int y(int64_t r) const { return kTop + static_cast<int>(r) * opt_.cell_height; }

  const SvgOptions& opt_;
  std::ostringstream os_;
};

void require_drawable(const std::string& what, int64_t rows, int64_t cols) {
  if (rows * cols > kMaxCells) {
    user_error("cannot draw " + what + ": " + std::to_string(rows * cols) +
               " cells exceed the limit of " + std::to_string(kMaxCells));
  }
}

/// The rows and columns drawn: the grid's, cut to options' maxima.
std::pair<int64_t, int64_t> drawn(std::pair<int64_t, int64_t> grid, const SvgOptions& options) {
  if (options.max_rows > 0) grid.first = std::min(grid.first, options.max_rows);
  if (options.max_cols > 0) grid.second = std::min(grid.second, options.max_cols);
  return grid;
}

}  // namespace

std::string fragment_svg(const Fragment& fragment, const SvgOptions& options) {
  auto [rows, cols] = drawn(grid_of(fragment.input_shape()), options);
  require_drawable(fragment.to_string(), rows, cols);
  std::string title =
      options.title.empty()
          ? fragment.to_string() + "  threads=" + std::to_string(fragment.thread_extent())
          : options.title;
  SvgGrid grid(rows, cols, options, title);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::vector<int64_t> idx = index_of(r, c, fragment.input_shape());
      auto [thread, local] = fragment.map_fragment(idx, 0);
      std::string threads = label('T', thread);
      if (fragment.replicate() == 2) {
        threads += '/';
        threads += label('T', fragment.map_fragment(idx, 1).first);
      } else if (fragment.replicate() > 2) {
        threads += label('+', fragment.replicate() - 1);
      }
      grid.cell(r, c, colour(thread), threads, label('R', local));
    }
  }
  return grid.finish();
}

std::string bank_map_svg(const Layout& layout, DataType dtype, const SvgOptions& options) {
  auto [rows, cols] = drawn(grid_of(layout.input_shape()), options);
  require_drawable(layout.to_string(), rows, cols);
  std::string title =
      options.title.empty() ? layout.to_string() + "  banks for " + dtype.name() : options.title;
  SvgGrid grid(rows, cols, options, title);
  const std::vector<int64_t>& out_shape = layout.output_shape();
  int64_t bits = dtype.storage_bits() * dtype.lanes;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::vector<int64_t> out = layout.map(index_of(r, c, layout.input_shape()));
      int64_t offset = 0;
      for (size_t d = 0; d < out.size(); ++d) offset = offset * out_shape[d] + out[d];
      int64_t bank = (offset * bits / 8 / 4) % 32;
      grid.cell(r, c, colour(bank), label('B', bank), "");
    }
  }
  return grid.finish();
}

}  // namespace tessel
