// T.fill / T.clear: validation, printing and reference semantics.
#include "core/op_fill.h"

#include <algorithm>
#include <cstring>

#include "core/expr_printer.h"

namespace tessel {

TileOpRef FillOp::make(BufferRegion dst, Expr value, bool is_clear, SourceLoc loc) {
  if (dst.point_form) {
    user_error(std::string(is_clear ? "T.clear" : "T.fill") +
               (loc.known() ? " at " + loc.str() : "") + ": '" + dst.buffer->name +
               "' is given as a single point; pass the whole buffer or a sliced region");
  }
  return std::make_shared<FillOp>(std::move(dst), std::move(value), is_clear, std::move(loc));
}

std::string FillOp::to_string() const {
  if (is_clear_) return "T.clear(" + region_to_string(dst_) + ")";
  return "T.fill(" + region_to_string(dst_) + ", " + tessel::to_string(value_) + ")";
}

TileOpRef FillOp::map_exprs(const std::function<Expr(const Expr&)>& fn) const {
  return std::make_shared<FillOp>(map_region(dst_, fn), fn(value_), is_clear_, loc());
}

void FillOp::run_reference(TileExec& exec) const {
  ConcreteRegion r = evaluate_region(dst_, exec, *this);
  TensorView v = exec.view(dst_.buffer);
  uint64_t bits = encode(v.dtype, exec.eval_value(value_));
  // The whole buffer (T.clear(acc) in a k loop) in whole bytes per element: the element's bytes,
  // as store_raw writes them, copied to every element.
  const int width = v.dtype.storage_bits();
  if (r.min == std::vector<int64_t>(r.min.size(), 0) && r.extent == v.shape && width % 8 == 0 &&
      v.dtype.lanes == 1) {
    uint8_t pattern[8] = {};
    store_bits(v.dtype, pattern, 0, bits);
    const size_t bytes = static_cast<size_t>(width / 8);
    const int64_t count = r.size();
    if (std::all_of(pattern, pattern + bytes, [](uint8_t b) { return b == 0; })) {
      std::memset(v.data, 0, static_cast<size_t>(count) * bytes);  // T.clear
      return;
    }
    for (int64_t n = 0; n < count; ++n) std::memcpy(v.data + n * bytes, pattern, bytes);
    return;
  }
  std::vector<int64_t> idx = r.min;
  const int64_t count = r.size();
  for (int64_t n = 0; n < count; ++n) {
    if (v.in_bounds(idx)) v.store_raw(v.flat(idx), bits);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < r.min[d] + r.extent[d]) break;
      idx[d] = r.min[d];
    }
  }
}

}  // namespace tessel
