// T.gemm layout inference (strict level): the swizzled shared layouts of the operands it reads
// from shared memory, and the register fragments of C and of operands held in registers, all
// following the gemm's plan (core/gemm_partition.h).
#include "core/builtin_layouts.h"
#include "core/gemm_partition.h"
#include "core/lowering.h"
#include "core/op_gemm.h"

namespace tessel {

namespace {

bool in_shared(const Buffer& b) {
  return b->scope == Scope::kShared || b->scope == Scope::kSharedDyn;
}

/// The operand's storage layout: rows are the strided dimension, columns the contiguous one of
/// the tile as stored; `k_inner` when the contiguous dimension is the reduction. The MFMA path
/// (AMD) has its own rule for the LDS phases of ds_read_b64.
Layout operand_layout(const GemmPlan& plan, const Buffer& b, bool k_inner) {
  const int64_t rows = *as_const_int(b->shape[0]), cols = *as_const_int(b->shape[1]);
  if (plan.path == GemmPath::kMfma) return mfma_operand_layout(rows, cols, b->dtype, k_inner);
  return gemm_operand_layout(rows, cols, b->dtype, k_inner);
}

}  // namespace

void GemmOp::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  if (level != InferLevel::kStrict) return;
  GemmPlan plan = plan_gemm(*this, ctx.kernel()->name, ctx.target(), ctx.threads());
  std::string origin = describe() + " (strict)";
  // A stored (M, K) has K contiguous; stored (K, M) it has M. B is the other way round.
  if (plan.path == GemmPath::kWgmma) {
    // wgmma reads both operands through descriptors: their canonical swizzled layouts.
    if (in_shared(A_)) {
      ctx.set_shared_layout(A_, wgmma_operand_layout(plan.wgmma_a, A_->dtype), origin);
    }
    ctx.set_shared_layout(B_, wgmma_operand_layout(plan.wgmma_b, B_->dtype), origin);
  } else {
    if (in_shared(A_))
      ctx.set_shared_layout(A_, operand_layout(plan, A_, !options_.transpose_A), origin);
    if (in_shared(B_))
      ctx.set_shared_layout(B_, operand_layout(plan, B_, options_.transpose_B), origin);
  }
  ctx.set_fragment(C_, gemm_c_fragment(plan), origin);
  if (A_->scope == Scope::kFragment) {
    ctx.set_fragment(A_, gemm_a_fragment(plan, options_.transpose_A, A_->dtype), origin);
  }
  if (B_->scope == Scope::kFragment) {
    ctx.set_fragment(B_, gemm_b_fragment(plan, options_.transpose_B, B_->dtype), origin);
  }
}

}  // namespace tessel
