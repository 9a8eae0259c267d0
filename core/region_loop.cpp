// Region loops of tile operators.
#include "core/region_loop.h"

#include "core/error.h"
#include "core/layout.h"

namespace tessel {

RegionLoop region_loop(const BufferRegion& region, const TileOp& op) {
  RegionLoop loop;
  for (const Range& r : region.ranges) {
    auto extent = as_const_int(r.extent);
    if (!extent) {
      user_error(op.describe() + ": the tile of '" + region.buffer->name +
                 "' has a symbolic extent; tile extents must be constants to be lowered to "
                 "threads (make the tile a fixed size and let edge tests handle the remainder)");
    }
    if (*extent == 1) continue;
    loop.vars.emplace_back(default_iter_var_names(region.ranges.size())[loop.vars.size()]);
    loop.extents.push_back(*extent);
  }
  if (loop.vars.empty()) {  // a single element
    loop.vars.emplace_back("i");
    loop.extents.push_back(1);
  }
  return loop;
}

void bind_loop(const RegionLoop& loop, Analyzer* analyzer) {
  if (!analyzer) return;
  for (size_t k = 0; k < loop.vars.size(); ++k) analyzer->bind(loop.vars[k], 0, loop.extents[k]);
}

std::vector<Expr> region_index(const BufferRegion& region, const std::vector<Var>& vars) {
  std::vector<Expr> index;
  size_t k = 0;
  for (const Range& r : region.ranges) {
    if (as_const_int(r.extent) == std::optional<int64_t>(1)) {
      index.push_back(r.min);
      continue;
    }
    const Var& v = vars.at(k++);
    index.push_back(as_const_int(r.min) == std::optional<int64_t>(0) ? Expr(v) : r.min + v);
  }
  return index;
}

Expr edge_test(const Buffer& buffer, const std::vector<Expr>& index, Analyzer* analyzer) {
  if (buffer->scope != Scope::kGlobal) return Expr();
  Expr test;
  auto add = [&](Expr c) {
    if (analyzer && analyzer->can_prove(c)) return;
    test = test.defined() ? (test && c) : c;
  };
  for (size_t d = 0; d < index.size(); ++d) {
    add(index[d] >= make_int(0));
    add(index[d] < buffer->shape[d]);
  }
  return test;
}

Stmt guard(const Expr& cond, Stmt then, Stmt otherwise, const SourceLoc& loc) {
  if (!cond.defined()) return then;
  return IfNode::make(cond, std::move(then), std::move(otherwise), loc);
}

}  // namespace tessel
