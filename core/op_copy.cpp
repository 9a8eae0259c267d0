// T.copy: validation, printing and reference semantics.
#include "core/op_copy.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>

#include "core/expr_printer.h"
#include "core/half_decode.h"

namespace tessel {

namespace {

std::string extents_string(const std::vector<Expr>& extents) {
  std::string s = "(";
  for (size_t i = 0; i < extents.size(); ++i) s += (i ? ", " : "") + to_string(extents[i]);
  return s + (extents.size() == 1 ? ",)" : ")");
}

/// Walks every index of a row-major box of `extent`, calling fn(offsets).
template <typename Fn>
void for_each_index(const std::vector<int64_t>& extent, Fn&& fn) {
  std::vector<int64_t> idx(extent.size(), 0);
  int64_t total = 1;
  for (int64_t e : extent) total *= e;
  for (int64_t n = 0; n < total; ++n) {
    fn(idx);
    for (size_t d = extent.size(); d-- > 0;) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
  }
}

/// The dimensions of `extent` other than 1 into `dims`: maps positions in the squeezed box to
/// full indices of a region.
void non_unit_dims(const std::vector<int64_t>& extent, std::vector<int>& dims) {
  dims.clear();
  for (size_t d = 0; d < extent.size(); ++d) {
    if (extent[d] != 1) dims.push_back(static_cast<int>(d));
  }
}

/// What one copy works in, kept by each worker thread from one copy to the next: a block's k
/// loop copies its tiles thousands of times, and allocating these each time cost a tenth of
/// dequant_gemm_int2's tile level (three copies of small tiles a k step).
struct CopyScratch {
  ConcreteRegion s, d;
  std::vector<int> sdims, ddims;
  std::vector<int64_t> sq_s, sq_d, si, di, sstrides, dstrides, idx;
};

}  // namespace

BufferRegion resolve_point_region(const BufferRegion& region, const BufferRegion& other,
                                  const std::string& op_name) {
  if (!region.point_form || other.point_form) return region;
  // The other tile's full extents, unit dimensions included (a (32, 1) column stays a column),
  // aligned to the last dimensions: leading dimensions of the point take extent 1, leading unit
  // dimensions of the tile are dropped when the point has fewer indices.
  std::vector<Expr> extents;
  for (const Range& r : other.ranges) extents.push_back(r.extent);
  size_t n = region.ranges.size();
  while (extents.size() > n && as_const_int(extents.front()) == 1) extents.erase(extents.begin());
  if (extents.size() > n) {
    user_error(op_name + ": '" + region.buffer->name + "' is indexed at a single point with " +
               std::to_string(n) + " index(es), but the tile of '" + other.buffer->name + "' has " +
               std::to_string(extents.size()) + " dimensions " + extents_string(extents) +
               "; write the region with slices, e.g. " + region.buffer->name + "[a:a+n, ...]");
  }
  BufferRegion out = region;
  for (size_t d = 0; d < n; ++d) {
    size_t from_end = n - 1 - d;
    out.ranges[d].extent =
        from_end < extents.size() ? extents[extents.size() - 1 - from_end] : make_int(1);
  }
  return out;
}

void check_same_tile_shape(const BufferRegion& a, const BufferRegion& b, const std::string& op) {
  std::vector<Expr> ea = a.squeezed_extents(), eb = b.squeezed_extents();
  bool same = ea.size() == eb.size();
  for (size_t i = 0; same && i < ea.size(); ++i) {
    auto ca = as_const_int(ea[i]), cb = as_const_int(eb[i]);
    if (ca && cb) same = *ca == *cb;
  }
  if (!same) {
    user_error(op + ": the tile of '" + a.buffer->name + "' has shape " + extents_string(ea) +
               " but the tile of '" + b.buffer->name + "' has shape " + extents_string(eb) +
               " (unit dimensions dropped); make the two regions the same shape");
  }
}

TileOpRef CopyOp::make(BufferRegion src, BufferRegion dst, SourceLoc loc) {
  std::string op = "T.copy" + (loc.known() ? " at " + loc.str() : "");
  if (src.point_form && dst.point_form) {
    user_error(op + ": both '" + src.buffer->name + "' and '" + dst.buffer->name +
               "' are given as single points, so the tile's shape is unknown; pass one of them "
               "as a whole buffer or with slices");
  }
  src = resolve_point_region(src, dst, op);
  dst = resolve_point_region(dst, src, op);
  check_same_tile_shape(src, dst, op);
  return std::make_shared<CopyOp>(std::move(src), std::move(dst), std::move(loc));
}

std::string CopyOp::to_string() const {
  return "T.copy(" + region_to_string(src_) + ", " + region_to_string(dst_) + ")";
}

TileOpRef CopyOp::map_exprs(const std::function<Expr(const Expr&)>& fn) const {
  return std::make_shared<CopyOp>(map_region(src_, fn), map_region(dst_, fn), loc());
}

namespace {

/// Copies one contiguous run of `n` elements along the last dimension of both buffers, when
/// both store whole bytes per element: in-bounds source elements are copied (as bytes when the
/// dtypes agree, else each loaded and stored with the destination's rounding, as the generic
/// path does), source elements past the edge are zero (zero bits in every format), and
/// destination elements past the edge are skipped.
void copy_run(const TensorView& sv, TensorView& dv, const std::vector<int64_t>& si,
              const std::vector<int64_t>& di, int64_t n) {
  auto valid = [](const TensorView& v, const std::vector<int64_t>& start, int64_t len) {
    // The sub-interval [lo, hi) of positions 0..len whose index lies inside the buffer.
    for (size_t d = 0; d + 1 < start.size(); ++d) {
      if (start[d] < 0 || start[d] >= v.shape[d]) return std::pair<int64_t, int64_t>{0, 0};
    }
    int64_t first = start.back(), extent = v.shape.back();
    int64_t lo = std::clamp<int64_t>(-first, 0, len),
            hi = std::clamp<int64_t>(extent - first, 0, len);
    return std::pair<int64_t, int64_t>{lo, std::max(lo, hi)};
  };
  auto [slo, shi] = valid(sv, si, n);
  auto [dlo, dhi] = valid(dv, di, n);
  if (dlo >= dhi) return;
  int64_t bytes = dv.dtype.storage_bits() / 8;
  auto offset = [&](const TensorView& v, const std::vector<int64_t>& start, int64_t p) {
    int64_t f = 0;
    for (size_t d = 0; d < start.size(); ++d)
      f = f * v.shape[d] + (d + 1 == start.size() ? start[d] + p : start[d]);
    return f * bytes;
  };
  int64_t clo = std::max(slo, dlo), chi = std::min(shi, dhi);
  if (sv.dtype == DataType::f32() && dv.dtype == DataType::f16()) {
    // An fp32 accumulator into an fp16 tensor: encode's rounding of a float (to odd in float,
    // which keeps a float as it is, then to nearest even) is Eigen::half's of the float itself.
    // The CPU's conversion gives the same bits where it has one (core/half_decode.h).
    const int64_t s0 = offset(sv, si, 0) / bytes, d0 = offset(dv, di, 0) / bytes;
    const float* src = reinterpret_cast<const float*>(sv.data) + s0;
    uint16_t* dst = reinterpret_cast<uint16_t*>(dv.data) + d0;
    const int64_t lo = std::clamp(clo, dlo, dhi), hi = std::clamp(chi, lo, dhi);
    std::fill(dst + dlo, dst + lo, uint16_t{0});  // +0.0 where the source is past its edge
    std::fill(dst + hi, dst + dhi, uint16_t{0});
    const int64_t done = lo + floats_to_halves_in_hardware(src + lo, dst + lo, hi - lo);
    for (int64_t p = done; p < hi; ++p)
      dst[p] = Eigen::numext::bit_cast<uint16_t>(Eigen::half(src[p]));
    return;
  }
  if (sv.dtype != dv.dtype) {
    const int64_t s0 = offset(sv, si, 0) / bytes, d0 = offset(dv, di, 0) / bytes;
    for (int64_t p = dlo; p < dhi; ++p)
      dv.store(d0 + p, p >= clo && p < chi ? sv.load(s0 + p) : 0.0);
    return;
  }
  uint8_t* dst = dv.data;
  if (clo < chi)
    std::memcpy(dst + offset(dv, di, clo), sv.data + offset(sv, si, clo), (chi - clo) * bytes);
  if (dlo < std::min(clo, dhi))
    std::memset(dst + offset(dv, di, dlo), 0, (std::min(clo, dhi) - dlo) * bytes);
  int64_t zlo = std::max(dlo, clo < chi ? chi : dlo);
  if (zlo < dhi) std::memset(dst + offset(dv, di, zlo), 0, (dhi - zlo) * bytes);
}

/// Whether every index of region `r` lies inside `v`.
bool inside(const ConcreteRegion& r, const TensorView& v) {
  if (r.min.size() != v.shape.size()) return false;
  for (size_t d = 0; d < r.min.size(); ++d) {
    if (r.min[d] < 0 || r.min[d] + r.extent[d] > v.shape[d]) return false;
  }
  return true;
}

/// The row-major strides of `shape`, in elements, into `strides`.
void strides_of(const std::vector<int64_t>& shape, std::vector<int64_t>& strides) {
  strides.assign(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
}

/// Copies the box c.sq_s (the regions' extents without unit dimensions; c.sdims and c.ddims:
/// which dimension of each buffer each of its dimensions is) from region c.s of sv to c.d of dv, of
/// one byte-sized dtype, both wholly inside their buffers, which do not overlap: a memcpy per
/// run of elements that lie one after another in both buffers (a row, or several rows when
/// they follow each other in both), at offsets stepped by the buffers' strides.
void copy_box(const TensorView& sv, TensorView& dv, CopyScratch& c) {
  const ConcreteRegion &s = c.s, &d = c.d;
  const std::vector<int>&sdims = c.sdims, &ddims = c.ddims;
  const std::vector<int64_t>& box = c.sq_s;
  if (std::find(box.begin(), box.end(), 0) != box.end()) return;  // an empty box
  const int64_t bytes = sv.dtype.storage_bits() / 8;
  strides_of(sv.shape, c.sstrides);
  strides_of(dv.shape, c.dstrides);
  const std::vector<int64_t>&ss = c.sstrides, &ds = c.dstrides;
  int64_t soff = 0, doff = 0;
  for (size_t k = 0; k < s.min.size(); ++k) soff += s.min[k] * ss[k];
  for (size_t k = 0; k < d.min.size(); ++k) doff += d.min[k] * ds[k];
  size_t outer = box.size() - 1;  // box dims [0, outer) are stepped; the rest is one run
  int64_t run = box.back();
  while (outer > 0 && ss[sdims[outer - 1]] == run && ds[ddims[outer - 1]] == run)
    run *= box[--outer];
  std::vector<int64_t>& idx = c.idx;
  idx.assign(outer, 0);
  // The source run kAhead steps of the innermost stepped dimension on, asked of the memory
  // early: a tile's rows lie a whole row of a large tensor apart, too far for the CPU to guess.
  constexpr int64_t kAhead = 8;
  const int64_t ahead = outer > 0 ? kAhead * ss[sdims[outer - 1]] * bytes : 0;
  while (true) {
    if (ahead) __builtin_prefetch(sv.data + soff * bytes + ahead);
    std::memcpy(dv.data + doff * bytes, sv.data + soff * bytes, static_cast<size_t>(run * bytes));
    size_t k = outer;
    for (; k-- > 0;) {  // the next run: an odometer over the stepped dims
      soff += ss[sdims[k]];
      doff += ds[ddims[k]];
      if (++idx[k] < box[k]) break;
      soff -= box[k] * ss[sdims[k]];
      doff -= box[k] * ds[ddims[k]];
      idx[k] = 0;
    }
    if (k == static_cast<size_t>(-1)) return;
  }
}

}  // namespace

void CopyOp::run_reference(TileExec& exec) const {
  thread_local CopyScratch c;
  evaluate_region_into(src_, exec, *this, c.s);
  evaluate_region_into(dst_, exec, *this, c.d);
  const ConcreteRegion &s = c.s, &d = c.d;
  non_unit_dims(s.extent, c.sdims);
  non_unit_dims(d.extent, c.ddims);
  const std::vector<int>&sdims = c.sdims, &ddims = c.ddims;
  std::vector<int64_t>&sq_s = c.sq_s, &sq_d = c.sq_d;
  sq_s.clear();
  sq_d.clear();
  for (int i : sdims) sq_s.push_back(s.extent[i]);
  for (int i : ddims) sq_d.push_back(d.extent[i]);
  if (sq_s != sq_d) {
    user_error(describe() + ": at run time the tile of '" + src_.buffer->name +
               "' and the tile of '" + dst_.buffer->name + "' differ in shape; make the two " +
               "regions the same shape");
  }
  TensorView sv = exec.view(src_.buffer), dv = exec.view(dst_.buffer);
  bool same_type = sv.dtype == dv.dtype;
  std::vector<int64_t>&si = c.si, &di = c.di;
  si = s.min;
  di = d.min;
  auto place = [&](const std::vector<int64_t>& pos) {
    for (size_t k = 0; k < pos.size(); ++k) {
      si[sdims[k]] = s.min[sdims[k]] + pos[k];
      di[ddims[k]] = d.min[ddims[k]] + pos[k];
    }
  };
  // Fast path: rows contiguous in both buffers, byte-sized dtypes.
  bool rows = !sq_s.empty() && sv.dtype.storage_bits() % 8 == 0 &&
              dv.dtype.storage_bits() % 8 == 0 &&
              sdims.back() == static_cast<int>(sv.shape.size()) - 1 &&
              ddims.back() == static_cast<int>(dv.shape.size()) - 1;
  if (rows && same_type && sv.data != dv.data && inside(s, sv) && inside(d, dv)) {
    copy_box(sv, dv, c);
    return;
  }
  if (rows) {
    std::vector<int64_t> outer(sq_s.begin(), sq_s.end() - 1), full(sq_s.size(), 0);
    for_each_index(outer, [&](const std::vector<int64_t>& pos) {
      std::copy(pos.begin(), pos.end(), full.begin());  // the row's last index stays 0
      place(full);
      copy_run(sv, dv, si, di, sq_s.back());
    });
    return;
  }
  for_each_index(sq_s, [&](const std::vector<int64_t>& pos) {
    place(pos);
    if (!dv.in_bounds(di)) return;  // stores past the tensor's edge are dropped
    int64_t dflat = dv.flat(di);
    if (!sv.in_bounds(si)) {
      dv.store(dflat, 0.0);  // loads past the edge read zero
    } else if (same_type) {
      dv.store_raw(dflat, sv.load_raw(sv.flat(si)));
    } else {
      dv.store(dflat, sv.load(sv.flat(si)));
    }
  });
}

}  // namespace tessel
