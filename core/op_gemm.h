// T.gemm: C (+)= op(A) · op(B) on tiles in shared memory or registers, fp32 (or int32) accumulate.
#pragma once

#include "core/tile_op.h"

namespace tessel {

/// How the block's warps split the C tile (TileLang's GemmWarpPolicy).
enum class GemmWarpPolicy : uint8_t { kSquare, kFullRow, kFullCol };
const char* policy_name(GemmWarpPolicy policy);

struct GemmOptions {
  bool transpose_A = false;
  bool transpose_B = false;
  bool clear_accum = false;
  GemmWarpPolicy policy = GemmWarpPolicy::kSquare;
};

/// C[M, N] (+)= op(A)[M, K] · op(B)[K, N], where op transposes when asked: A is stored (M, K) or,
/// with transpose_A, (K, M); B is (K, N) or, with transpose_B, (N, K). A and B live in shared
/// memory or fragments (the `ss`, `rs`, `sr`, `rr` variants), C in a fragment. Products are exact
/// in the inputs' precision and accumulate in C's type (fp32 for float inputs, int32 for int8).
class GemmOp : public TileOp {
 public:
  /// Validates ranks, scopes, dtypes and that M, N, K agree; user error naming the buffers.
  static TileOpRef make(Buffer A, Buffer B, Buffer C, GemmOptions options, SourceLoc loc);

  const Buffer& A() const { return A_; }
  const Buffer& B() const { return B_; }
  const Buffer& C() const { return C_; }
  const GemmOptions& options() const { return options_; }
  /// "ss", "rs", "sr" or "rr": where A and B live (shared or registers).
  std::string variant() const;

  std::string name() const override { return "gemm"; }
  std::string to_string() const override;
  std::vector<BufferRegion> reads() const override;
  std::vector<BufferRegion> writes() const override;
  void run_reference(TileExec& exec) const override;
  void infer_layout(LayoutInferContext& ctx, InferLevel level) const override;
  Stmt lower(LowerContext& ctx) const override;
  TileOpRef map_exprs(const std::function<Expr(const Expr&)>& fn) const override;

  GemmOp(Buffer A, Buffer B, Buffer C, GemmOptions o, SourceLoc loc)
      : TileOp(std::move(loc)), A_(std::move(A)), B_(std::move(B)), C_(std::move(C)), options_(o) {}

 private:
  Buffer A_, B_, C_;
  GemmOptions options_;
};

}  // namespace tessel
