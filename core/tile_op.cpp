// Helpers shared by tile operators: region printing, mapping and evaluation.
#include "core/tile_op.h"

#include <sstream>

#include "core/analyzer.h"
#include "core/expr_printer.h"

namespace tessel {

std::string TileOp::describe() const {
  std::string s = "T." + name();
  if (loc_.known()) s += " at " + loc_.str();
  return s;
}

Stmt TileOp::lower_element(LowerContext&) const {
  internal_error(describe() + " is not an element operator");
}

std::string region_to_string(const BufferRegion& region) {
  if (!region.point_form && region.is_full()) return region.buffer->name;
  std::ostringstream os;
  os << region.buffer->name << "[";
  for (size_t d = 0; d < region.ranges.size(); ++d) {
    if (d) os << ", ";
    const Range& r = region.ranges[d];
    if (region.point_form) {
      os << r.min;
    } else if (as_const_int(r.min) == 0 && structural_equal(r.extent, region.buffer->shape[d])) {
      os << ":";
    } else if (as_const_int(r.extent) == 1) {
      os << r.min;
    } else {
      Analyzer analyzer;
      os << r.min << ":" << analyzer.simplify(r.min + r.extent);
    }
  }
  os << "]";
  return os.str();
}

BufferRegion map_region(const BufferRegion& region, const std::function<Expr(const Expr&)>& fn) {
  BufferRegion out = region;
  for (Range& r : out.ranges) {
    r.min = fn(r.min);
    r.extent = fn(r.extent);
  }
  return out;
}

int64_t ConcreteRegion::size() const {
  int64_t n = 1;
  for (int64_t e : extent) n *= e;
  return n;
}

ConcreteRegion evaluate_region(const BufferRegion& region, TileExec& exec, const TileOp& op) {
  ConcreteRegion c;
  evaluate_region_into(region, exec, op, c);
  return c;
}

void evaluate_region_into(const BufferRegion& region, TileExec& exec, const TileOp& op,
                          ConcreteRegion& out) {
  out.min.clear();
  out.extent.clear();
  for (size_t d = 0; d < region.ranges.size(); ++d) {
    out.min.push_back(exec.eval_int(region.ranges[d].min));
    int64_t extent = exec.eval_int(region.ranges[d].extent);
    if (extent <= 0) {
      user_error(op.describe() + ": region of '" + region.buffer->name + "' has extent " +
                 std::to_string(extent) + " in dimension " + std::to_string(d) +
                 "; extents must be positive");
    }
    out.extent.push_back(extent);
  }
}

int64_t TensorView::size() const {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

int64_t TensorView::flat(const std::vector<int64_t>& index) const {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + index[d];
  return f;
}

bool TensorView::in_bounds(const std::vector<int64_t>& index) const {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (index[d] < 0 || index[d] >= shape[d]) return false;
  }
  return true;
}

}  // namespace tessel
