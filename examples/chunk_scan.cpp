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
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/builder.h"
#include "core/builtin_layouts.h"
#include "examples/linear_attention_shapes.h"
#include "examples/reference_math.h"
#include "examples/registry.h"
#include "examples/sampled_product.h"

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

/// The rows `rows` (positions of the chunk, ascending) of one (batch, chunk, head)'s output Y
/// and of its error bound, into |rows| x headdim matrices, in double precision:
/// Y = diag(e^dA) C S^T + (L o CB) diag(dt) X + D[h] X, where L[l][s] = exp(dA[l] - dA[s]) for s <=
/// l and 0 above the diagonal, S the previous state (headdim x dstate), CB the chunk's cb block, X
/// and C the chunk's rows.
///
/// Beside Y it writes a bound on the kernel's rounding error per element (Output:bound). The
/// inputs are fp16 values, exact in the reference; the kernel rounds as follows, taking every
/// fp16 operation to round (relative error <= u = 2^-11; an upper bound where it computes in
/// float), with a = dA * log2e:
/// - a weight W[l][s] = cb * exp2(a_l - a_s) * dt: the two products by log2e, the difference
///   and log2e itself err by u (|a_l| + |a_s| + 2 |a_l - a_s|) in the exponent, which exp2
///   turns into ln 2 times that relative error; exp2 and the two products add 3u. So
///   eps_w(l, s) = ln2 u (|a_l| + |a_s| + 2 |a_l - a_s|) + 3u, and a term W X errs by
///   eps_w |W| |X|.
/// - the decay exp2(a_l): eps_d(l) = 2 ln2 u |a_l| + u, plus 2^-23 for the float product.
/// - the residual x * D rounds once: u |D| |X|.
/// - the float accumulator adds at most dstate + chunk + 2 terms: gamma = (dstate + chunk + 2)
///   2^-24 times M, the sum of the terms' magnitudes.
/// The bound is twice the sum (second-order terms, exp2 within an ulp before rounding). The
/// output's own fp16 rounding (u |y|) is the tolerance's rtol; fp16 subnormals (absolute error
/// up to 2^-25 per rounding, <= 4 roundings on each of <= 256 terms with |x| <= 1) its atol.
/// A real error -- a term dropped or added by a wrong mask, a chunk's state missed -- moves an
/// output by a whole term, |W X| or more, far above eps |W X| ~ 4u |W X|.
///
/// Each core reuses its own matrices: with every row, W and the bound's weights E + gamma |W|
/// are lower triangular (triangular products, half a full product's work),
/// and the bound's terms are gathered as 2 ((E + gamma |W|) |X| + (eps_d + gamma) state_terms +
/// (u + gamma) |D| |X|), the same sum as above. exp(dA[l] - dA[s]) is exp(dA[l]) exp(-dA[s]) where
/// every |dA| of the chunk is at most 300 (both factors and their product are then normal
/// doubles: a relative difference of a few 2^-53, far below u); else each is its own exp.
void chunk_scan_rows(const SsdShape& s, const SsdTensors& in, const HostTensor& cb,
                     const HostTensor& D, int64_t b, int64_t c, int64_t h,
                     const std::vector<int64_t>& rows, MatrixD& Y, MatrixD& bound) {
  const int64_t Q = s.chunk, P = s.headdim, r = static_cast<int64_t>(rows.size());
  const bool all = r == Q;  // rows are then 0..Q-1: W is lower triangular
  const double u = std::ldexp(1.0, -11), ln2 = std::log(2.0), log2e = 1.0 / ln2;
  const double gamma = static_cast<double>(s.dstate + Q + 2) * std::ldexp(1.0, -24);
  const int64_t g = h / s.heads_per_group();
  thread_local MatrixD X, Xa, Xr, Cr, S, W, E, CS;
  thread_local Eigen::VectorXd dA, dt, decay, grow, abs_a, eps_d, decay_r;
  // A row reads the positions up to itself (causal): X up to the last row, C at the rows.
  const int64_t n = r == 0 ? 0 : rows.back() + 1;
  in.x_chunk(b, c, h, X, n);
  in.C_rows(b, c, g, rows, Cr);
  in.state(b, c, h, S);
  in.dA_chunk(b, c, h, dA);
  in.dt_chunk(b, c, h, dt);
  const double Dh = D.at(h), Da = std::fabs(Dh);
  decay = dA.array().exp();
  const bool factor = dA.cwiseAbs().maxCoeff() <= 300;
  if (factor) grow = (-dA.array()).exp();
  abs_a = (dA * log2e).cwiseAbs();
  // Row i of W and E holds position l = rows[i]: its weights on and before l, zero after.
  W.setZero(r, n);
  E.setZero(r, n);
  const int64_t cb_row = ((b * s.nchunks + c) * s.ngroups + g) * Q;
  for (int64_t i = 0; i < r; ++i) {
    const int64_t l = rows[static_cast<size_t>(i)];
    double* w = W.row(i).data();
    double* e = E.row(i).data();
    read_elements(cb, (cb_row + l) * Q, l + 1, w);
    for (int64_t j = 0; j <= l; ++j) {
      const double decay_lj = factor ? decay[l] * grow[j] : std::exp(dA[l] - dA[j]);
      w[j] *= decay_lj * dt[j];
      const double diff = std::fabs((dA[l] - dA[j]) * log2e);
      e[j] = ((ln2 * u * (abs_a[l] + abs_a[j] + 2 * diff) + 3 * u) + gamma) * std::fabs(w[j]);
    }
  }
  Xr = X(rows, Eigen::all);
  decay_r = decay(rows);
  // Y = diag(e^dA) C S^T + W X + D X.
  CS.resize(r, P);
  CS.noalias() = Cr * S.transpose();
  Y.resize(r, P);
  if (all)
    Y.noalias() = W.triangularView<Eigen::Lower>() * X;
  else
    Y.noalias() = W * X;
  Y += decay_r.asDiagonal() * CS + Dh * Xr;
  // The bound, with state_terms = diag(e^dA) |C| |S|^T (CS reused).
  Xa = X.cwiseAbs();
  CS.noalias() = Cr.cwiseAbs() * S.cwiseAbs().transpose();
  eps_d = (2 * ln2 * u) * abs_a(rows).array() + (u + std::ldexp(1.0, -23) + gamma);
  bound.resize(r, P);
  if (all)
    bound.noalias() = E.triangularView<Eigen::Lower>() * Xa;
  else
    bound.noalias() = E * Xa;
  bound += (eps_d.array() * decay_r.array()).matrix().asDiagonal() * CS +
           ((u + gamma) * Da) * Xr.cwiseAbs();
  bound *= 2 * (1 + std::ldexp(1.0, -9));  // rounded to fp16 when written: rounded up first
}

void chunk_scan_reference(const Params& p, TensorMap& t) {
  const SsdShape s = SsdShape::from(p, "chunk_scan");
  const SsdTensors in(s, t);
  const HostTensor &cb = t.at("cb"), &D = t.at("D");
  HostTensor& out = t.at("Output");
  HostTensor& bound_out =
      t.insert_or_assign(error_bound_name("Output"), HostTensor(out.dtype(), out.shape()))
          .first->second;
  const int64_t Q = s.chunk, P = s.headdim;
  std::vector<int64_t> every(static_cast<size_t>(Q));
  std::iota(every.begin(), every.end(), 0);
  // Each (batch, chunk, head) writes its own rows of Output: spread over the cores.
  parallel_for(s.batch * s.nchunks * s.nheads, [&](int64_t bch) {
    const int64_t b = bch / (s.nchunks * s.nheads), c = bch / s.nheads % s.nchunks,
                  h = bch % s.nheads;
    thread_local MatrixD Y, bound;
    chunk_scan_rows(s, in, cb, D, b, c, h, every, Y, bound);
    for (int64_t l = 0; l < Q && c * Q + l < s.seq_len; ++l) {
      const int64_t flat = ((b * s.seq_len + c * Q + l) * s.nheads + h) * P;
      write_elements(out, flat, P, Y.row(l).data());
      write_elements(bound_out, flat, P, bound.row(l).data());
    }
  });
}

/// Output and its bound on the rows (positions, every head and head dimension) of the tiles of
/// the simulated blocks and on `per_tile` seeded positions of every chunk: each (batch, chunk,
/// head) computes only those rows (chunk_scan_rows).
std::vector<SampledOutput> chunk_scan_sampled_reference(const Params& p, const TensorMap& t,
                                                        const ReferenceSampleRequest& req) {
  const SsdShape s = SsdShape::from(p, "chunk_scan");
  const SsdTensors in(s, t);
  const HostTensor &cb = t.at("cb"), &D = t.at("D");
  const int64_t Q = s.chunk, P = s.headdim, H = s.nheads, chunks = s.batch * s.nchunks;
  const int64_t bM = p.positive("block_M"), bN = p.positive("block_N");
  // Block (bx, by, bz) writes positions by*bM.. of chunk bz / nheads (every (b, c) pair).
  const std::vector<int64_t> grid = {(P + bN - 1) / bN, Q / bM, chunks * H};
  std::vector<std::vector<int64_t>> rows = sample_per_unit(chunks, Q, req.per_tile, req.seed);
  std::string where = "no tile of a simulated block in full (the grid is not the kernel's)";
  if (req.grid == grid) {
    for (int64_t id : req.simulated) {
      const int64_t by = id / grid[0] % grid[1], bc = id / (grid[0] * grid[1]) / H;
      add_span(rows[static_cast<size_t>(bc)], by * bM, (by + 1) * bM);
    }
    where = "the positions of the " + std::to_string(req.simulated.size()) +
            " simulated blocks' tiles (every head)";
  }
  // Chunk bc's elements start at offset[bc]: its positions in order, each with every head and
  // head dimension, so the indices ascend.
  std::vector<int64_t> offset(static_cast<size_t>(chunks + 1), 0);
  for (int64_t bc = 0; bc < chunks; ++bc) {
    std::vector<int64_t>& r = rows[static_cast<size_t>(bc)];
    const int64_t c = bc % s.nchunks;
    r.erase(std::remove_if(r.begin(), r.end(), [&](int64_t l) { return c * Q + l >= s.seq_len; }),
            r.end());
    offset[bc + 1] = offset[bc] + static_cast<int64_t>(r.size()) * H * P;
  }
  SampledOutput o;
  o.name = "Output";
  o.indices.resize(static_cast<size_t>(offset.back()));
  o.expected.resize(o.indices.size());
  o.bound.resize(o.indices.size());
  parallel_for(chunks * H, [&](int64_t bch) {
    const int64_t bc = bch / H, b = bc / s.nchunks, c = bc % s.nchunks, h = bch % H;
    const std::vector<int64_t>& r = rows[static_cast<size_t>(bc)];
    if (r.empty()) return;
    thread_local MatrixD Y, bound;
    chunk_scan_rows(s, in, cb, D, b, c, h, r, Y, bound);
    for (size_t i = 0; i < r.size(); ++i) {
      const int64_t at = offset[bc] + (static_cast<int64_t>(i) * H + h) * P;
      const int64_t flat = ((b * s.seq_len + c * Q + r[i]) * H + h) * P;
      for (int64_t q = 0; q < P; ++q) {
        o.indices[at + q] = flat + q;
        o.expected[at + q] = Y(static_cast<int64_t>(i), q);
        o.bound[at + q] = bound(static_cast<int64_t>(i), q);
      }
    }
  });
  o.description = where + "; elsewhere " + std::to_string(req.per_tile) +
                  " positions of every chunk, every head (drawn with seed " +
                  std::to_string(req.seed) + ")";
  return {std::move(o)};
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
  // TileLang's kernel): the error of an output is a sum of its terms' rounding errors, which the
  // reference bounds per element (Output:bound, derived at chunk_scan_reference). A fixed
  // tolerance, statistical or not, fails somewhere once the outputs are many (CC2's 33.5M at a
  // three-sigma 2.5e-2 did). Beside the bound: rtol 2u = 2^-10 for the output's own fp16
  // rounding, atol 2^-14 for fp16 subnormals.
  e.tolerance = Tolerance{std::ldexp(1.0, -14), std::ldexp(1.0, -10)};
  e.bounded_outputs = {"Output"};
  e.build = build_chunk_scan;
  e.reference = chunk_scan_reference;
  // Per (batch, chunk, head): W X and the bound's E |X| (triangular, chunk^2 headdim / 2 each)
  // and C S^T twice (chunk headdim dstate each).
  e.reference_macs = [](const Params& p) {
    const SsdShape s = SsdShape::from(p, "chunk_scan");
    return static_cast<double>(s.batch * s.nchunks * s.nheads) *
           static_cast<double>(s.chunk * s.headdim) * static_cast<double>(s.chunk + 2 * s.dstate);
  };
  e.sampled_reference = chunk_scan_sampled_reference;
  return e;
}

}  // namespace tessel
