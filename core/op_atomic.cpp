// T.atomic_*: validation, printing and reference semantics.
#include "core/op_atomic.h"

#include <algorithm>

#include "core/expr_printer.h"
#include "core/op_copy.h"

namespace tessel {

const char* atomic_kind_name(AtomicKind kind) {
  switch (kind) {
    case AtomicKind::kAdd: return "add";
    case AtomicKind::kMax: return "max";
    case AtomicKind::kMin: return "min";
  }
  return "?";
}

namespace {

double apply(AtomicKind k, double old, double x) {
  switch (k) {
    case AtomicKind::kAdd: return old + x;
    case AtomicKind::kMax: return std::max(old, x);
    case AtomicKind::kMin: return std::min(old, x);
  }
  return old;
}

std::string op_label(AtomicKind k, const SourceLoc& loc) {
  return std::string("T.atomic_") + atomic_kind_name(k) + (loc.known() ? " at " + loc.str() : "");
}

void check_dst_scope(AtomicKind k, const BufferRegion& dst, const SourceLoc& loc) {
  Scope s = dst.buffer->scope;
  if (s != Scope::kGlobal && s != Scope::kShared && s != Scope::kSharedDyn) {
    user_error(op_label(k, loc) + ": '" + dst.buffer->name + "' is in " + scope_name(s) +
               " memory; atomics update global or shared memory (a fragment or local buffer "
               "belongs to one block or thread: update it with a plain store)");
  }
}

}  // namespace

TileOpRef AtomicOp::make_tile(AtomicKind kind, BufferRegion dst, BufferRegion src, SourceLoc loc) {
  check_dst_scope(kind, dst, loc);
  std::string op = op_label(kind, loc);
  if (src.point_form && dst.point_form) {
    user_error(op + ": both '" + src.buffer->name + "' and '" + dst.buffer->name +
               "' are single points; pass the source tile as a whole buffer or slice");
  }
  src = resolve_point_region(src, dst, op);
  dst = resolve_point_region(dst, src, op);
  check_same_tile_shape(src, dst, op);
  return std::make_shared<AtomicOp>(kind, std::move(dst), std::move(src), Expr(), std::move(loc));
}

TileOpRef AtomicOp::make_scalar(AtomicKind kind, BufferRegion dst, Expr value, SourceLoc loc) {
  check_dst_scope(kind, dst, loc);
  for (Range& r : dst.ranges) {
    if (as_const_int(r.extent) != 1) {
      user_error(op_label(kind, loc) + ": a scalar value updates one element, but the region of '" +
                 dst.buffer->name + "' spans more; index a single element, or pass a tile");
    }
  }
  return std::make_shared<AtomicOp>(kind, std::move(dst), std::nullopt, std::move(value),
                                    std::move(loc));
}

std::string AtomicOp::to_string() const {
  std::string rhs = src_ ? region_to_string(*src_) : tessel::to_string(value_);
  return "T." + name() + "(" + region_to_string(dst_) + ", " + rhs + ")";
}

std::vector<BufferRegion> AtomicOp::reads() const {
  std::vector<BufferRegion> r{dst_};
  if (src_) r.push_back(*src_);
  return r;
}

TileOpRef AtomicOp::map_exprs(const std::function<Expr(const Expr&)>& fn) const {
  std::optional<BufferRegion> src;
  if (src_) src = map_region(*src_, fn);
  return std::make_shared<AtomicOp>(kind_, map_region(dst_, fn), src,
                                    value_.defined() ? fn(value_) : value_, loc());
}

void AtomicOp::run_reference(TileExec& exec) const {
  ConcreteRegion d = evaluate_region(dst_, exec, *this);
  TensorView dv = exec.view(dst_.buffer);
  if (!src_) {
    double x = exec.eval_value(value_);
    auto lock = exec.lock_atomics();
    if (dv.in_bounds(d.min)) {
      int64_t f = dv.flat(d.min);
      dv.store(f, apply(kind_, dv.load(f), x));
    }
    return;
  }
  ConcreteRegion s = evaluate_region(*src_, exec, *this);
  TensorView sv = exec.view(src_->buffer);
  std::vector<int> sd, dd;
  for (size_t i = 0; i < s.extent.size(); ++i) if (s.extent[i] != 1) sd.push_back(static_cast<int>(i));
  for (size_t i = 0; i < d.extent.size(); ++i) if (d.extent[i] != 1) dd.push_back(static_cast<int>(i));
  if (sd.size() != dd.size()) {
    user_error(describe() + ": at run time the tiles of '" + src_->buffer->name + "' and '" +
               dst_.buffer->name + "' differ in shape; make them the same shape");
  }
  std::vector<int64_t> pos(sd.size(), 0), si = s.min, di = d.min;
  auto lock = exec.lock_atomics();
  for (int64_t n = 0; n < s.size(); ++n) {
    for (size_t k = 0; k < pos.size(); ++k) {
      si[sd[k]] = s.min[sd[k]] + pos[k];
      di[dd[k]] = d.min[dd[k]] + pos[k];
    }
    if (dv.in_bounds(di) && sv.in_bounds(si)) {
      int64_t f = dv.flat(di);
      dv.store(f, apply(kind_, dv.load(f), sv.load(sv.flat(si))));
    }
    for (size_t k = pos.size(); k-- > 0;) {
      if (++pos[k] < s.extent[sd[k]]) break;
      pos[k] = 0;
    }
  }
}

}  // namespace tessel
