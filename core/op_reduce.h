// T.reduce_sum/max/min/abssum/absmax: reduces one dimension of a tile.
#pragma once

#include "core/tile_op.h"

namespace tessel {

enum class ReduceKind : uint8_t { kSum, kMax, kMin, kAbsSum, kAbsMax };
const char* reduce_kind_name(ReduceKind kind);  ///< "sum", "max", ...

/// dst[...] (op)= reduce over dimension `dim` of src. dst has src's shape without `dim`; with
/// `clear` (the default) dst is overwritten, otherwise the old dst values join the reduction.
/// The reduction runs in double precision and is rounded once to dst's dtype.
class ReduceOp : public TileOp {
 public:
  static TileOpRef make(ReduceKind kind, Buffer src, Buffer dst, int dim, bool clear,
                        SourceLoc loc);

  ReduceKind kind() const { return kind_; }
  const Buffer& src() const { return src_; }
  const Buffer& dst() const { return dst_; }
  int dim() const { return dim_; }
  bool clear() const { return clear_; }

  std::string name() const override { return std::string("reduce_") + reduce_kind_name(kind_); }
  std::string to_string() const override;
  std::vector<BufferRegion> reads() const override;
  std::vector<BufferRegion> writes() const override { return {BufferRegion::full(dst_)}; }
  void run_reference(TileExec& exec) const override;
  void infer_layout(LayoutInferContext& ctx, InferLevel level) const override;
  Stmt lower(LowerContext& ctx) const override;
  TileOpRef map_exprs(const std::function<Expr(const Expr&)>& fn) const override;

  ReduceOp(ReduceKind k, Buffer s, Buffer d, int dim, bool clear, SourceLoc loc)
      : TileOp(std::move(loc)), kind_(k), src_(std::move(s)), dst_(std::move(d)), dim_(dim),
        clear_(clear) {}

 private:
  ReduceKind kind_;
  Buffer src_, dst_;
  int dim_;
  bool clear_;
};

}  // namespace tessel
