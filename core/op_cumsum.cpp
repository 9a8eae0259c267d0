// T.cumsum / T.cummax: validation, printing, reference semantics and the thread-level scan.
#include "core/op_cumsum.h"

#include <algorithm>

#include "core/expr_printer.h"
#include "core/lowering.h"

namespace tessel {

namespace {

/// The constant extents of `r` (user error naming `op` otherwise).
std::vector<int64_t> constant_extents(const BufferRegion& r, const std::string& op) {
  std::vector<int64_t> out;
  for (const Range& range : r.ranges) {
    auto c = as_const_int(range.extent);
    if (!c || *c < 1) {
      user_error(op + ": the region of '" + r.buffer->name +
                 "' needs constant, positive extents, got " + to_string(range.extent));
    }
    out.push_back(*c);
  }
  return out;
}

double combine(ScanKind kind, double acc, double x) {
  return kind == ScanKind::kSum ? acc + x : std::max(acc, x);
}

}  // namespace

TileOpRef ScanOp::make(ScanKind kind, BufferRegion src, BufferRegion dst, int dim, bool reverse,
                       SourceLoc loc) {
  std::string op = std::string(kind == ScanKind::kSum ? "T.cumsum" : "T.cummax") +
                   (loc.known() ? " at " + loc.str() : "");
  for (const BufferRegion* r : {&src, &dst}) {
    Scope s = r->buffer->scope;
    if (s != Scope::kShared && s != Scope::kSharedDyn && s != Scope::kGlobal) {
      user_error(op + ": '" + r->buffer->name + "' is a " + scope_name(s) +
                 " buffer; the scan runs on shared or global memory (copy a fragment to a shared "
                 "tile with T.copy, scan it there and copy it back)");
    }
  }
  if (src.point_form && dst.point_form) {
    user_error(op + ": both '" + src.buffer->name + "' and '" + dst.buffer->name +
               "' are single points; pass a whole buffer or a slice");
  }
  if (src.point_form) src.ranges = dst.ranges, src.point_form = false;
  if (dst.point_form) {
    std::vector<Range> ranges = src.ranges;
    for (size_t d = 0; d < ranges.size() && d < dst.ranges.size(); ++d) {
      ranges[d].min = dst.ranges[d].min;
    }
    dst.ranges = ranges;
    dst.point_form = false;
  }
  if (src.ranges.size() != dst.ranges.size()) {
    user_error(op + ": '" + src.buffer->name + "' and '" + dst.buffer->name +
               "' have different numbers of dimensions");
  }
  std::vector<int64_t> se = constant_extents(src, op), de = constant_extents(dst, op);
  if (se != de) {
    user_error(op + ": the regions of '" + src.buffer->name + "' and '" + dst.buffer->name +
               "' differ in shape; dst must have src's shape");
  }
  int rank = static_cast<int>(se.size());
  if (dim < 0 || dim >= rank) {
    user_error(op + ": dim " + std::to_string(dim) + " is out of range for " +
               std::to_string(rank) + " dimension(s)");
  }
  return std::make_shared<ScanOp>(kind, std::move(src), std::move(dst), dim, reverse,
                                  std::move(loc));
}

std::string ScanOp::to_string() const {
  return "T." + name() + "(" + region_to_string(src_) + ", " + region_to_string(dst_) +
         ", dim=" + std::to_string(dim_) + (reverse_ ? ", reverse=True" : "") + ")";
}

TileOpRef ScanOp::map_exprs(const std::function<Expr(const Expr&)>& fn) const {
  return std::make_shared<ScanOp>(kind_, map_region(src_, fn), map_region(dst_, fn), dim_, reverse_,
                                  loc());
}

void ScanOp::run_reference(TileExec& exec) const {
  ConcreteRegion s = evaluate_region(src_, exec, *this), d = evaluate_region(dst_, exec, *this);
  TensorView sv = exec.view(src_.buffer), dv = exec.view(dst_.buffer);
  const int64_t n = s.extent[dim_];
  // Every line: one index of the other dimensions (dim's index fixed at 0).
  std::vector<int64_t> line(s.extent.size(), 0);
  while (true) {
    double acc = 0;
    for (int64_t k = 0; k < n; ++k) {
      std::vector<int64_t> si = line, di = line;
      int64_t at = reverse_ ? n - 1 - k : k;
      for (size_t x = 0; x < si.size(); ++x) si[x] += s.min[x], di[x] += d.min[x];
      si[dim_] = s.min[dim_] + at;
      di[dim_] = d.min[dim_] + at;
      if (!sv.in_bounds(si) || !dv.in_bounds(di)) {
        user_error(describe() + ": element " + std::to_string(at) + " of the scan lies outside '" +
                   (!sv.in_bounds(si) ? src_.buffer->name : dst_.buffer->name) + "'");
      }
      double x = sv.load(sv.flat(si));
      acc = k == 0 ? x : combine(kind_, acc, x);
      dv.store(dv.flat(di), acc);
      acc = dv.load(dv.flat(di));  // the partial result as dst's dtype holds it
    }
    size_t x = line.size();
    while (x-- > 0) {
      if (static_cast<int>(x) == dim_) continue;
      if (++line[x] < s.extent[x]) break;
      line[x] = 0;
    }
    if (x == static_cast<size_t>(-1)) break;
  }
}

Stmt ScanOp::lower(LowerContext& ctx) const {
  std::vector<int64_t> ext = constant_extents(src_, describe());
  const int64_t n = ext[dim_];
  int64_t lines = 1;
  for (size_t x = 0; x < ext.size(); ++x) {
    if (static_cast<int>(x) != dim_) lines *= ext[x];
  }
  const int64_t threads = ctx.threads();
  const int64_t rounds = (lines + threads - 1) / threads;
  Var round = ctx.fresh_var("r"), k = ctx.fresh_var("k");
  Expr line = round * make_int(threads) + ctx.thread();
  // The line's index in the other dimensions, the last fastest; `at` along dim.
  auto element = [&](const BufferRegion& r, const Expr& at) {
    std::vector<Expr> idx(ext.size());
    Expr rest = line;
    for (size_t x = ext.size(); x-- > 0;) {
      if (static_cast<int>(x) == dim_) {
        idx[x] = r.ranges[x].min + at;
        continue;
      }
      idx[x] = r.ranges[x].min + floormod(rest, make_int(ext[x]));
      rest = floordiv(rest, make_int(ext[x]));
    }
    return idx;
  };
  const Buffer& dst = dst_.buffer;
  auto load = [&](const BufferRegion& r, const Expr& at) {
    Expr v = BufferLoadNode::make(r.buffer, element(r, at));
    return v.dtype() == dst->dtype ? v : cast(dst->dtype, v);
  };
  Expr first = make_int(reverse_ ? n - 1 : 0);
  Expr at = reverse_ ? make_int(n - 1) - k : Expr(k);
  Expr prev = reverse_ ? make_int(n) - k : k - make_int(1);
  Expr acc = load(dst_, prev), x = load(src_, at);
  Expr next = kind_ == ScanKind::kSum ? acc + x : tessel::max(acc, x);
  Stmt scan =
      SeqNode::make({StoreNode::make(dst, element(dst_, first), load(src_, first), loc()),
                     ForNode::make(k, make_int(1), make_int(n - 1), ForKind::kSerial,
                                   StoreNode::make(dst, element(dst_, at), next, loc()), loc())});
  Stmt body =
      lines % threads == 0 ? scan : IfNode::make(line < make_int(lines), scan, Stmt(), loc());
  return ForNode::make(round, make_int(0), make_int(rounds), ForKind::kSerial, body, loc());
}

}  // namespace tessel
