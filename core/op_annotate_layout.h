// T.annotate_layout: fixes the storage layout of shared buffers (or the thread partition of
// fragments) instead of leaving the choice to layout inference.
#pragma once

#include <variant>
#include <vector>

#include "core/layout.h"
#include "core/tile_op.h"

namespace tessel {

/// `T.annotate_layout({A_shared: Layout(...), ...})`. It changes where elements live, never
/// their values, so its reference semantics do nothing; layout inference treats each entry as a
/// strict constraint.
class AnnotateLayoutOp : public TileOp {
 public:
  using Entry = std::pair<Buffer, std::variant<Layout, Fragment>>;
  /// Validates each entry: a Layout annotates a shared buffer, a Fragment a fragment buffer, and
  /// the layout's input shape equals the buffer's shape (user error naming the buffer otherwise).
  static TileOpRef make(std::vector<Entry> entries, SourceLoc loc);

  const std::vector<Entry>& entries() const { return entries_; }

  std::string name() const override { return "annotate_layout"; }
  std::string to_string() const override;
  std::vector<BufferRegion> reads() const override { return {}; }
  std::vector<BufferRegion> writes() const override { return {}; }
  void run_reference(TileExec&) const override {}
  void infer_layout(LayoutInferContext& ctx, InferLevel level) const override;
  Stmt lower(LowerContext& ctx) const override;
  TileOpRef map_exprs(const std::function<Expr(const Expr&)>&) const override {
    return std::make_shared<AnnotateLayoutOp>(*this);
  }

  AnnotateLayoutOp(std::vector<Entry> entries, SourceLoc loc)
      : TileOp(std::move(loc)), entries_(std::move(entries)) {}

 private:
  std::vector<Entry> entries_;
};

}  // namespace tessel
