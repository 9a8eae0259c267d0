// T.copy: moves a tile between any two scopes, casting to the destination's dtype.
#pragma once

#include "core/tile_op.h"

namespace tessel {

/// Copies `src` to `dst` element by element. Both regions have the same shape once unit
/// dimensions are dropped; a point-form region takes its extents from the other operand (aligned
/// to its last dimensions). Where the tile hangs over the edge of a buffer, reads there give zero
/// and writes there are dropped (the tensor's logical shape bounds it, not the tile).
class CopyOp : public TileOp {
 public:
  /// Validates and resolves point-form regions; user error naming both buffers otherwise.
  static TileOpRef make(BufferRegion src, BufferRegion dst, SourceLoc loc);

  const BufferRegion& src() const { return src_; }
  const BufferRegion& dst() const { return dst_; }

  std::string name() const override { return "copy"; }
  std::string to_string() const override;
  std::vector<BufferRegion> reads() const override { return {src_}; }
  std::vector<BufferRegion> writes() const override { return {dst_}; }
  void run_reference(TileExec& exec) const override;
  void infer_layout(LayoutInferContext& ctx, InferLevel level) const override;
  Stmt lower(LowerContext& ctx) const override;
  TileOpRef map_exprs(const std::function<Expr(const Expr&)>& fn) const override;

  CopyOp(BufferRegion src, BufferRegion dst, SourceLoc loc)
      : TileOp(std::move(loc)), src_(std::move(src)), dst_(std::move(dst)) {}

 private:
  BufferRegion src_, dst_;
};

/// Gives a point-form region the full extents of `other`, unit dimensions included, aligned to
/// its last dimensions (leading dimensions extent 1; leading unit dimensions of `other` dropped
/// when `region` has fewer). User error when `region` has fewer dimensions than `other` needs.
BufferRegion resolve_point_region(const BufferRegion& region, const BufferRegion& other,
                                  const std::string& op_name);

/// Checks that two regions have equal shapes once unit dimensions are dropped (where the extents
/// are constants), naming both buffers in the error.
void check_same_tile_shape(const BufferRegion& a, const BufferRegion& b, const std::string& op);

}  // namespace tessel
