// What the pieces of T.gemm's lowering share (internal to op_gemm_lower.cpp and
// op_gemm_loads.cpp): the calling thread's warp coordinates, loop and intrinsic helpers, and
// the loads that bring one k step of an operand from shared memory into registers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/gemm_partition.h"
#include "core/lowering.h"
#include "core/stmt.h"

namespace tessel {

/// One gemm being lowered for the calling thread.
struct GemmLowering {
  const GemmOp& op;
  LowerContext& ctx;
  GemmPlan plan;
  Expr lane;  ///< thread % warp_size
  Expr wm;    ///< the warp's row in the warp grid
  Expr wn;    ///< the warp's column

  GemmLowering(const GemmOp& op, LowerContext& ctx, GemmPlan plan);
  /// `for v in <kind>(extent): body(v)`, or body(0) alone when extent is 1.
  Stmt loop(const std::string& name, int64_t extent, ForKind kind,
            const std::function<Stmt(const Expr&)>& body) const;
  /// A call of `id` at the gemm's source location.
  Stmt call(IntrinsicId id, std::vector<IntrinsicArg> args) const;
};

/// The register operand `buffer[index]` (a lane's first register of an instruction operand).
IntrinsicArg register_arg(const Buffer& buffer, Expr index);
/// The memory operand `buffer[indices]`.
IntrinsicArg element_arg(const Buffer& buffer, std::vector<Expr> indices);

/// One operand of the matrix instruction for one k step: the statements that bring it into
/// registers (undefined when it already lives in a fragment) and the register argument for the
/// warp's instruction tile `tile` (its row tile for A, its column tile for B).
struct StepOperand {
  Stmt load;
  std::function<IntrinsicArg(const Expr& tile)> arg;
};

/// Loads k step `ko` of A (`is_a`) or B from shared memory: ldmatrix on the mma path, plain
/// (vectorised where contiguous) loads on the MFMA path.
StepOperand load_shared_operand(GemmLowering& g, bool is_a, const Expr& ko);

}  // namespace tessel
