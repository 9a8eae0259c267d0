// T.fill / T.clear: sets every element of a tile to one value.
#pragma once

#include "core/tile_op.h"

namespace tessel {

/// dst[...] = value for the whole region (T.clear is fill with zero).
class FillOp : public TileOp {
 public:
  static TileOpRef make(BufferRegion dst, Expr value, bool is_clear, SourceLoc loc);

  const BufferRegion& dst() const { return dst_; }
  const Expr& value() const { return value_; }

  std::string name() const override { return is_clear_ ? "clear" : "fill"; }
  std::string to_string() const override;
  std::vector<BufferRegion> reads() const override { return {}; }
  std::vector<BufferRegion> writes() const override { return {dst_}; }
  void run_reference(TileExec& exec) const override;
  void infer_layout(LayoutInferContext& ctx, InferLevel level) const override;
  Stmt lower(LowerContext& ctx) const override;
  TileOpRef map_exprs(const std::function<Expr(const Expr&)>& fn) const override;

  FillOp(BufferRegion d, Expr v, bool c, SourceLoc loc)
      : TileOp(std::move(loc)), dst_(std::move(d)), value_(std::move(v)), is_clear_(c) {}

 private:
  BufferRegion dst_;
  Expr value_;
  bool is_clear_;
};

}  // namespace tessel
