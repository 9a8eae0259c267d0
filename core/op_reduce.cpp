// T.reduce_*: validation, printing and reference semantics.
#include "core/op_reduce.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/expr_printer.h"

namespace tessel {

const char* reduce_kind_name(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum:
      return "sum";
    case ReduceKind::kMax:
      return "max";
    case ReduceKind::kMin:
      return "min";
    case ReduceKind::kAbsSum:
      return "abssum";
    case ReduceKind::kAbsMax:
      return "absmax";
  }
  return "?";
}

namespace {

double identity(ReduceKind k) {
  switch (k) {
    case ReduceKind::kMax:
      return -std::numeric_limits<double>::infinity();
    case ReduceKind::kMin:
      return std::numeric_limits<double>::infinity();
    default:
      return 0.0;
  }
}

double combine(ReduceKind k, double acc, double x) {
  switch (k) {
    case ReduceKind::kSum:
      return acc + x;
    case ReduceKind::kMax:
      return std::max(acc, x);
    case ReduceKind::kMin:
      return std::min(acc, x);
    case ReduceKind::kAbsSum:
      return acc + std::fabs(x);
    case ReduceKind::kAbsMax:
      return std::max(acc, std::fabs(x));
  }
  return acc;
}

}  // namespace

TileOpRef ReduceOp::make(ReduceKind kind, Buffer src, Buffer dst, int dim, bool clear,
                         SourceLoc loc) {
  std::string op =
      "T.reduce_" + std::string(reduce_kind_name(kind)) + (loc.known() ? " at " + loc.str() : "");
  // Both levels run only what the thread level can lower: reductions of fragments.
  for (const Buffer* b : {&src, &dst}) {
    if ((*b)->scope != Scope::kFragment) {
      user_error(op + ": '" + (*b)->name + "' is in " + scope_name((*b)->scope) +
                 " memory; at thread level reductions run on fragments — copy it into a "
                 "T.alloc_fragment buffer first");
    }
  }
  int nd = static_cast<int>(src->ndim());
  const int given = dim;
  if (dim < 0) dim += nd;  // Python-style negative dims
  if (dim < 0 || dim >= nd) {
    user_error(op + ": dim=" + std::to_string(given) + " but '" + src->name + "' has " +
               std::to_string(nd) + " dimension(s); pick a dim in [-" + std::to_string(nd) + ", " +
               std::to_string(nd) + ")");
  }
  std::vector<Expr> want;
  for (int d = 0; d < nd; ++d) {
    if (d != dim) want.push_back(src->shape[d]);
  }
  if (want.empty()) want.push_back(make_int(1));
  bool ok = dst->ndim() == want.size();
  for (size_t d = 0; ok && d < want.size(); ++d) {
    auto a = as_const_int(want[d]), b = as_const_int(dst->shape[d]);
    if (a && b) ok = *a == *b;
  }
  if (!ok) {
    std::string shape = "(";
    for (size_t d = 0; d < want.size(); ++d) shape += (d ? ", " : "") + tessel::to_string(want[d]);
    shape += want.size() == 1 ? ",)" : ")";
    user_error(op + ": reducing dim " + std::to_string(dim) + " of '" + src->name +
               "' gives shape " + shape + ", but '" + dst->name + "' has " +
               std::to_string(dst->ndim()) + " dimension(s) of another shape; allocate '" +
               dst->name + "' with shape " + shape);
  }
  return std::make_shared<ReduceOp>(kind, std::move(src), std::move(dst), dim, clear,
                                    std::move(loc));
}

std::string ReduceOp::to_string() const {
  std::string s =
      "T." + name() + "(" + src_->name + ", " + dst_->name + ", dim=" + std::to_string(dim_);
  if (!clear_) s += ", clear=False";
  return s + ")";
}

std::vector<BufferRegion> ReduceOp::reads() const {
  std::vector<BufferRegion> r{BufferRegion::full(src_)};
  if (!clear_) r.push_back(BufferRegion::full(dst_));
  return r;
}

TileOpRef ReduceOp::map_exprs(const std::function<Expr(const Expr&)>&) const {
  return std::make_shared<ReduceOp>(*this);
}

namespace {

/// s.load(i), with the float32 and int32 accumulators read straight from their bytes (the same
/// value as decode gives: the float or integer widened to double).
struct SourceReader {
  const TensorView& s;
  const bool f32 = s.dtype == DataType::f32(), i32 = s.dtype == DataType::i32();
  double operator()(int64_t i) const {
    if (f32) {
      float x;
      std::memcpy(&x, s.data + i * 4, 4);
      return x;
    }
    if (i32) {
      int32_t x;
      std::memcpy(&x, s.data + i * 4, 4);
      return x;
    }
    return s.load(i);
  }
};

}  // namespace

void ReduceOp::run_reference(TileExec& exec) const {
  TensorView s = exec.view(src_), d = exec.view(dst_);
  const SourceReader load{s};
  // View src as (outer, extent, inner) around `dim`.
  int64_t outer = 1, inner = 1, extent = s.shape[dim_];
  for (int i = 0; i < dim_; ++i) outer *= s.shape[i];
  for (size_t i = dim_ + 1; i < s.shape.size(); ++i) inner *= s.shape[i];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      int64_t out = o * inner + in;
      double acc = clear_ ? identity(kind_) : d.load(out);
      for (int64_t r = 0; r < extent; ++r)
        acc = combine(kind_, acc, load((o * extent + r) * inner + in));
      d.store(out, acc);
    }
  }
}

}  // namespace tessel
