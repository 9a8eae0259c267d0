// T.atomic_add / atomic_max / atomic_min: read-modify-write of a tile or one element, atomic
// across blocks.
#pragma once

#include "core/tile_op.h"

namespace tessel {

class ParallelLoop;
class Analyzer;

enum class AtomicKind : uint8_t { kAdd, kMax, kMin };
const char* atomic_kind_name(AtomicKind kind);  ///< "add", "max", "min"

/// dst (op)= src element-wise, where src is a tile (same shape as dst once unit dimensions are
/// dropped; a point-form dst takes src's extents) or a scalar expression (dst then is one
/// element, written as a point). Elements of dst outside its buffer are skipped.
class AtomicOp : public TileOp {
 public:
  /// Tile form: T.atomic_add(C[by * 64, bx * 64], C_local).
  static TileOpRef make_tile(AtomicKind kind, BufferRegion dst, BufferRegion src, SourceLoc loc);
  /// Scalar form: T.atomic_add(C[i, j], value).
  static TileOpRef make_scalar(AtomicKind kind, BufferRegion dst, Expr value, SourceLoc loc);

  std::string name() const override { return std::string("atomic_") + atomic_kind_name(kind_); }
  std::string to_string() const override;
  std::vector<BufferRegion> reads() const override;
  std::vector<BufferRegion> writes() const override { return {dst_}; }
  void run_reference(TileExec& exec) const override;
  void infer_layout(LayoutInferContext& ctx, InferLevel level) const override;
  Stmt lower(LowerContext& ctx) const override;
  /// The scalar form is an element operator: in a T.Parallel iteration, the atomic itself, by
  /// the iteration's thread.
  bool is_element() const override { return !src_; }
  Stmt lower_element(LowerContext& ctx) const override;
  TileOpRef map_exprs(const std::function<Expr(const Expr&)>& fn) const override;

  AtomicOp(AtomicKind k, BufferRegion d, std::optional<BufferRegion> s, Expr v, SourceLoc loc)
      : TileOp(std::move(loc)),
        kind_(k),
        dst_(std::move(d)),
        src_(std::move(s)),
        value_(std::move(v)) {}

 private:
  /// The tile form as a Parallel loop over the source tile (core/op_atomic_lower.cpp).
  ParallelLoop tile_loop(Analyzer* analyzer) const;

  AtomicKind kind_;
  BufferRegion dst_;
  std::optional<BufferRegion> src_;  ///< tile form
  Expr value_;                       ///< scalar form
};

}  // namespace tessel
