// How far the CUDA printer asks nvcc to unroll a warp-specialised consumer loop (`#pragma unroll
// N`): over the period of its stage and phase indices, where the unrolled body stays small.
#pragma once

#include <cstdint>

#include "core/stmt.h"

namespace tessel::codegen {

/// The smallest P such that every `k % c` and `(k / a) % c` (k plus a constant) in `body`
/// repeats after P iterations of loop variable `k`: the lcm of the c and of the a c. 1 when the
/// body has none. Other uses of k (affine ones) do not make a period.
int64_t index_period(const Stmt& body, const Var& k);

/// Statements one iteration of `body` executes, inner loops of constant extent counted that
/// many times (nvcc unrolls them), others 16 times, both branches of an `if`.
int64_t executed_statements(const Stmt& body);

/// The unroll factor for the loop `f` (CUDA), or 0 for none: only for a serial loop holding a
/// wgmma (the printer asks for an sm90 consumer's main loop) with a period P > 1
/// (index_period): the largest divisor d >= 2 of P, at most a constant trip count, with
/// d * executed_statements(body) <= kUnrollBudget. With a whole period in one iteration the stage
/// offsets and mbarrier phases are constants. Unrolling never changes what the loop computes, only
/// the code nvcc makes.
int64_t consumer_unroll(const ForNode& f);

/// The budget of consumer_unroll, in executed statements of the unrolled body. Measured
/// (nvcc 13.0, sm_90a, main-loop SASS per HGMMA): the GEMM bodies execute 9 statements and get
/// their whole period (Fig. 16, 2 stages: 4, 6.38 -> 5.12; M0, 3 stages: 6, 10.4 -> 6.9);
/// FlashAttention's 262-298 get 2 (FA1 26.4 -> 24.4, 4 gave 25.1).
inline constexpr int64_t kUnrollBudget = 640;

}  // namespace tessel::codegen
