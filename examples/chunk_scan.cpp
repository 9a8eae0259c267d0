// Mamba-2 chunk_scan (the SSD output within each chunk): for batch b, chunk c of Q = chunk_size
// positions, head h and position l of the chunk (dA = dA_cumsum[b, h, c, :], dt = dt[b, h, c, :],
// g = h / (nheads / ngroups)),
//   y[b, cQ+l, h, p] = exp(dA[l]) * sum_n C[b, cQ+l, g, n] * prev_states[b, c, h, p, n]
//                    + sum_{s <= l} cb[b, c, g, l, s] * exp(dA[l] - dA[s]) * dt[s] * x[b, cQ+s, h,
//                    p]
//                    + D[h] * x[b, cQ+l, h, p].
// A block owns block_M positions x block_N head dimensions: one gemm against the previous
// state, then a causal, pipelined loop over the chunk's positions up to its last row, and the
// skip connection. examples/kernels/chunk_scan.py is the same kernel in TileLang syntax.
#include <cmath>

#include "core/builder.h"
#include "core/builtin_layouts.h"
#include "examples/linear_attention_shapes.h"
#include "examples/registry.h"

namespace tessel {

namespace {

Kernel build_chunk_scan(const Params& p) {
  const SsdShape s = SsdShape::from(p, "chunk_scan");
  const int64_t bM = p.positive("block_M"), bN = p.positive("block_N"), bK = p.positive("block_K");
  for (auto [name, v] : {std::pair{"block_M", bM}, std::pair{"block_K", bK}}) {
    if (s.chunk % v != 0) {
      throw ParamError("kernel 'chunk_scan': chunk_size=" + std::to_string(s.chunk) +
                       " is not a multiple of " + name + "=" + std::to_string(v) +
                       "; a tile must not cross into the next chunk");
    }
  }
  const DataType f16 = DataType::f16(), f32 = DataType::f32();
  const double log2e = 1.44269504;
  const int64_t Q = s.chunk, N = s.dstate;

  KernelBuilder T("chunk_scan");
  auto cb = T.tensor("cb", {s.batch, s.nchunks, s.ngroups, Q, Q}, f16);
  auto x = T.tensor("x", {s.batch, s.seq_len, s.nheads, s.headdim}, f16);
  auto dt = T.tensor("dt", {s.batch, s.nheads, s.nchunks, Q}, f16);
  auto dA_cumsum = T.tensor("dA_cumsum", {s.batch, s.nheads, s.nchunks, Q}, f16);
  auto C = T.tensor("C", {s.batch, s.seq_len, s.ngroups, N}, f16);
  auto prev_states = T.tensor("prev_states", {s.batch, s.nchunks, s.nheads, s.headdim, N}, f16);
  auto D = T.tensor("D", {s.nheads}, f16);
  auto Output = T.tensor("Output", {s.batch, s.seq_len, s.nheads, s.headdim}, f16);
  std::vector<Var> blk =
      T.kernel({ceildiv(s.headdim, bN), ceildiv(Q, bM), s.batch * s.nchunks * s.nheads},
               static_cast<int>(p.integer("threads")));
  Var bx = blk[0], by = blk[1], bz = blk[2];
  auto C_shared = T.alloc_shared("C_shared", {bM, N}, f16);
  auto state_shared = T.alloc_shared("state_shared", {bN, N}, f16);
  auto cb_shared = T.alloc_shared("cb_shared", {bM, bK}, f16);
  auto x_shared = T.alloc_shared("x_shared", {bK, bN}, f16);
  auto x_residual_shared = T.alloc_shared("x_residual_shared", {bM, bN}, f16);
  auto dA_m_shared = T.alloc_shared("dA_m_shared", {bM}, f16);
  auto dA_k_shared = T.alloc_shared("dA_k_shared", {bK}, f16);
  auto dt_shared = T.alloc_shared("dt_shared", {bK}, f16);
  auto cb_local = T.alloc_fragment("cb_local", {bM, bK}, f16);
  auto acc = T.alloc_fragment("acc", {bM, bN}, f32);
  Var b = T.let("b", bz / (s.nchunks * s.nheads));
  Var c = T.let("c", bz / s.nheads % s.nchunks);
  Var h = T.let("h", bz % s.nheads);
  Var row = T.let("row", c * Q + by * bM);
  const Expr g = h / s.heads_per_group();
  // cb_local reads cb_shared in the gemm's operand order and the residual loop reads
  // x_residual_shared in the accumulator's: swizzled, each warp access is conflict-free.
  T.annotate_layout({{cb_shared, gemm_operand_layout(bM, bK, f16)},
                     {x_residual_shared, gemm_operand_layout(bM, bN, f16)}});

  T.copy(dA_cumsum.at({b, h, c, Index::slice(by * bM, (by + 1) * bM)}), dA_m_shared);
  T.copy(C.at({b, Index::slice(row, row + bM), g, Index::slice(0, N)}), C_shared);
  T.copy(prev_states.at({b, c, h, Index::slice(bx * bN, (bx + 1) * bN), Index::slice(0, N)}),
         state_shared);
  T.clear(acc);
  T.gemm(C_shared, state_shared, acc, GemmOptions{.transpose_B = true});
  T.parallel(bM, bN, [&](Var i, Var j) { acc(i, j) *= exp2(dA_m_shared(i) * log2e); });

  T.pipelined(ceildiv((by + 1) * bM, bK), static_cast<int>(p.integer("num_stages")), [&](Var k) {
    T.copy(
        cb.at({b, c, g, Index::slice(by * bM, (by + 1) * bM), Index::slice(k * bK, (k + 1) * bK)}),
        cb_shared);
    T.copy(dA_cumsum.at({b, h, c, Index::slice(k * bK, (k + 1) * bK)}), dA_k_shared);
    T.copy(dt.at({b, h, c, Index::slice(k * bK, (k + 1) * bK)}), dt_shared);
    T.copy(x.at({b, Index::slice(c * Q + k * bK, c * Q + (k + 1) * bK), h,
                 Index::slice(bx * bN, (bx + 1) * bN)}),
           x_shared);
    // cb into registers first (as TileLang's example): one vector load a lane in the gemm
    // operand's order; masked element loads of cb_shared would be 2-way on gfx942
    // (docs/layouts.md).
    T.copy(cb_shared, cb_local);
    T.parallel(bM, bK, [&](Var i, Var j) {
      cb_local(i, j) = if_then_else(
          by * bM + i >= k * bK + j,
          cb_local(i, j) * exp2(dA_m_shared(i) * log2e - dA_k_shared(j) * log2e) * dt_shared(j),
          make_int(0));
    });
    T.gemm(cb_local, x_shared, acc);
  });

  T.copy(x.at({b, Index::slice(row, row + bM), h, Index::slice(bx * bN, (bx + 1) * bN)}),
         x_residual_shared);
  T.parallel(bM, bN, [&](Var i, Var j) { acc(i, j) += x_residual_shared(i, j) * D(h); });
  T.copy(acc, Output.at({b, Index::slice(row, row + bM), h, Index::slice(bx * bN, (bx + 1) * bN)}));
  return T.finish();
}

/// Per (batch, chunk, head), in double precision: Y = diag(e^dA) C S^T + (L o CB) diag(dt) X
/// + D[h] X, where L[l][s] = exp(dA[l] - dA[s]) for s <= l and 0 above the diagonal, S the
/// previous state (headdim x dstate), CB the chunk's cb block, X and C the chunk's rows.
void chunk_scan_reference(const Params& p, TensorMap& t) {
  const SsdShape s = SsdShape::from(p, "chunk_scan");
  const SsdTensors in(s, t);
  const HostTensor &cb = t.at("cb"), &prev = t.at("prev_states"), &D = t.at("D");
  HostTensor& out = t.at("Output");
  const int64_t Q = s.chunk;
  // Each (batch, chunk, head) writes its own rows of Output: spread over the cores.
  parallel_for(s.batch * s.nchunks * s.nheads, [&](int64_t bch) {
    const int64_t b = bch / (s.nchunks * s.nheads), c = bch / s.nheads % s.nchunks,
                  h = bch % s.nheads;
    const int64_t g = h / s.heads_per_group();
    MatrixD X = in.x_chunk(b, c, h), Cm = in.C_chunk(b, c, g);
    Eigen::VectorXd dA = in.dA_chunk(b, c, h);
    MatrixD S(s.headdim, s.dstate), W = MatrixD::Zero(Q, Q);
    for (int64_t i = 0; i < s.headdim; ++i) {
      for (int64_t n = 0; n < s.dstate; ++n) {
        S(i, n) = prev.at((((b * s.nchunks + c) * s.nheads + h) * s.headdim + i) * s.dstate + n);
      }
    }
    for (int64_t l = 0; l < Q; ++l) {
      for (int64_t j = 0; j <= l; ++j) {
        W(l, j) = cb.at((((b * s.nchunks + c) * s.ngroups + g) * Q + l) * Q + j) *
                  std::exp(dA[l] - dA[j]) * in.dt_at(b, c, h, j);
      }
    }
    Eigen::VectorXd decay = dA.array().exp();
    MatrixD Y = decay.asDiagonal() * (Cm * S.transpose()) + W * X + D.at(h) * X;
    for (int64_t l = 0; l < Q && c * Q + l < s.seq_len; ++l) {
      for (int64_t i = 0; i < s.headdim; ++i) {
        out.set(((b * s.seq_len + c * Q + l) * s.nheads + h) * s.headdim + i, Y(l, i));
      }
    }
  });
}

}  // namespace

Example chunk_scan_example() {
  Example e;
  e.name = "chunk_scan";
  e.description =
      "Mamba-2 chunk_scan: y = exp(dA) C prev_state + causal (cb o decay) dt x + D x (the paper's "
      "CC0-5)";
  e.params = ssd_params({{"block_M", "64", "chunk positions (rows) per block"},
                         {"block_N", "64", "head dimensions (columns) per block"},
                         {"block_K", "64", "chunk positions per k-step (divides chunk_size)"},
                         {"num_stages", "2", "software-pipeline depth of the position loop"},
                         {"threads", "128", "threads per block"}});
  e.outputs = {"Output"};
  // Each weight cb * exp(dA[l] - dA[s]) * dt is rounded to fp16 for the tensor-core gemm (as in
  // TileLang's kernel). With the random inputs (uniform in [-1, 1), so dA is not the decreasing
  // running sum real models give) the decay reaches e^2: a weight's rounding error is up to
  // e^2 * 2^-11 = 3.6e-3, and over a chunk of 64 positions they add like a random walk to
  // ~8e-3 typical, 2.5e-2 at three standard deviations. fp16's default 1e-2 absolute fails about
  // one output in 10^5 on values near zero.
  e.tolerance = Tolerance{2.5e-2, 1e-2};
  e.build = build_chunk_scan;
  e.reference = chunk_scan_reference;
  return e;
}

}  // namespace tessel
