// The tile-operator interface of the paper's Fig. 4. Every operator (copy, gemm, reduce, atomic,
// fill) is one class that owns its validation, printing, reference semantics and — added by the
// lowering pass — its layout inference and lowering. No pass switches over operator kinds.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/error.h"
#include "core/stmt.h"
#include "core/tile_exec.h"

namespace tessel {

class LayoutInferContext;
class LowerContext;
enum class InferLevel : uint8_t;

class TileOp {
 public:
  explicit TileOp(SourceLoc loc) : loc_(std::move(loc)) {}
  virtual ~TileOp() = default;

  /// The operator's name as written after `T.` ("copy", "gemm", "reduce_max").
  virtual std::string name() const = 0;
  /// The call as the printer writes it: `T.copy(A[by * 128, k * 32], A_shared)`.
  virtual std::string to_string() const = 0;
  /// Buffer regions read and written (for dependency analysis and reports).
  virtual std::vector<BufferRegion> reads() const = 0;
  virtual std::vector<BufferRegion> writes() const = 0;
  /// The reference (tile-level) semantics: performs the operation on the block's storage.
  virtual void run_reference(TileExec& exec) const = 0;
  /// A copy with every expression replaced by `fn(expr)` (for substitution passes).
  virtual std::shared_ptr<const TileOp> map_exprs(
      const std::function<Expr(const Expr&)>& fn) const = 0;

  /// Layout inference (the paper's Fig. 4): at `level`, records the layouts this operator
  /// constrains or can derive from what is already known (core/lowering.h). Default: none.
  virtual void infer_layout(LayoutInferContext& ctx, InferLevel level) const {}
  /// Lowering: the thread-level statements that perform the operator for the calling thread,
  /// using the inferred layouts. Fragment buffers may be accessed with logical indices (the
  /// flattening pass maps them to registers) or through ctx.registers().
  virtual Stmt lower(LowerContext& ctx) const = 0;
  /// True for element operators (a scalar T.atomic_add(C[i, j], v)), which may sit in a
  /// T.Parallel body: each iteration performs its own. Tile operators work on whole tiles and
  /// may not (ForNode::make refuses them there).
  virtual bool is_element() const { return false; }
  /// For an element operator, the statements one T.Parallel iteration runs to perform it.
  virtual Stmt lower_element(LowerContext& ctx) const;

  const SourceLoc& loc() const { return loc_; }
  /// "T.copy at gemm.cpp:42:5" — the operator as error messages name it.
  std::string describe() const;

 private:
  SourceLoc loc_;
};

using TileOpRef = std::shared_ptr<const TileOp>;

// ---- Helpers shared by operators -------------------------------------------------------------

/// Prints a region the way it was written: the bare buffer name for a whole buffer, the origin
/// (`A[by * 128, k * 32]`) for a point-form region, else slices (`A[0:64, k * 32:k * 32 + 32]`).
std::string region_to_string(const BufferRegion& region);

/// Applies `fn` to every expression of a region.
BufferRegion map_region(const BufferRegion& region, const std::function<Expr(const Expr&)>& fn);

/// The region's origin and extents evaluated in the block's context. Extents must be positive.
struct ConcreteRegion {
  std::vector<int64_t> min;
  std::vector<int64_t> extent;
  int64_t size() const;
};
ConcreteRegion evaluate_region(const BufferRegion& region, TileExec& exec, const TileOp& op);
/// The same into `out`, whose vectors keep their storage (an operator run thousands of times a
/// block reuses one).
void evaluate_region_into(const BufferRegion& region, TileExec& exec, const TileOp& op,
                          ConcreteRegion& out);

}  // namespace tessel
