// T.cumsum (and Tessel's T.cummax): an inclusive scan of a tile along one dimension, in shared or
// global memory.
#pragma once

#include "core/tile_op.h"

namespace tessel {

enum class ScanKind : uint8_t { kSum, kMax };

/// dst[..., k, ...] = src[..., 0, ...] (+ or max) ... (+ or max) src[..., k, ...] along `dim`
/// (from the end when `reverse`), each partial result rounded to dst's dtype as it is stored.
/// src and dst have the same extents; they may be the same region (the scan runs in place).
class ScanOp : public TileOp {
 public:
  /// Requires: src and dst in shared or global memory with equal constant extents,
  /// 0 <= dim < rank (user error naming the operator otherwise).
  static TileOpRef make(ScanKind kind, BufferRegion src, BufferRegion dst, int dim, bool reverse,
                        SourceLoc loc);

  std::string name() const override { return kind_ == ScanKind::kSum ? "cumsum" : "cummax"; }
  std::string to_string() const override;
  std::vector<BufferRegion> reads() const override { return {src_}; }
  std::vector<BufferRegion> writes() const override { return {dst_}; }
  void run_reference(TileExec& exec) const override;
  /// Each thread scans whole lines (one index of the other dimensions), lines dealt out to the
  /// threads in turn; a line is a serial loop along `dim`.
  Stmt lower(LowerContext& ctx) const override;
  TileOpRef map_exprs(const std::function<Expr(const Expr&)>& fn) const override;

  ScanOp(ScanKind k, BufferRegion s, BufferRegion d, int dim, bool reverse, SourceLoc loc)
      : TileOp(std::move(loc)),
        kind_(k),
        src_(std::move(s)),
        dst_(std::move(d)),
        dim_(dim),
        reverse_(reverse) {}

 private:
  ScanKind kind_;
  BufferRegion src_;
  BufferRegion dst_;
  int dim_;
  bool reverse_;
};

}  // namespace tessel
