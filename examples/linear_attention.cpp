// Causal linear attention, chunked and fused into one kernel:
//   O[b, t, h, :] = scale * sum_{s <= t} (Q[b, t, h, :] . K[b, s, h, :]) V[b, s, h, :].
// A block walks the sequence of one (batch, head, block_V columns of V) chunk by chunk with the
// running state S = sum over earlier chunks of K^T V (dim_k x block_V, fp32) in registers: the
// chunk's output is Q S plus the causal Q K^T V within the chunk, then S += K^T V. The masked
// scores go to the second gemm through a shared fp16 tile (P_shared): on gfx942 a register copy
// between the two MFMA layouts would need a 16 KiB fp32 scratch tile, over 64 KiB in all.
// examples/kernels/linear_attention.py is the same kernel in TileLang syntax.
#include <cmath>

#include "core/builder.h"
#include "examples/reference_math.h"
#include "examples/registry.h"

namespace tessel {

namespace {

Kernel build_linear_attention(const Params& p) {
  const int64_t batch = p.positive("batch"), H = p.positive("heads"), L = p.positive("seq_len");
  const int64_t dk = p.positive("dim_k"), dv = p.positive("dim_v");
  const int64_t Cs = p.positive("chunk_size"), bV = p.positive("block_V");
  const DataType f16 = DataType::f16(), f32 = DataType::f32();
  const double scale = std::pow(static_cast<double>(dk), -0.5);

  KernelBuilder T("linear_attention");
  auto Q = T.tensor("Q", {batch, L, H, dk}, f16);
  auto K = T.tensor("K", {batch, L, H, dk}, f16);
  auto V = T.tensor("V", {batch, L, H, dv}, f16);
  auto O = T.tensor("O", {batch, L, H, dv}, f16);
  std::vector<Var> blk =
      T.kernel({ceildiv(dv, bV), H, batch}, static_cast<int>(p.integer("threads")));
  Var bx = blk[0], by = blk[1], bz = blk[2];
  auto Q_shared = T.alloc_shared("Q_shared", {Cs, dk}, f16);
  auto K_shared = T.alloc_shared("K_shared", {Cs, dk}, f16);
  auto V_shared = T.alloc_shared("V_shared", {Cs, bV}, f16);
  auto S_shared = T.alloc_shared("S_shared", {dk, bV}, f16);
  auto P_shared = T.alloc_shared("P_shared", {Cs, Cs}, f16);
  auto scores = T.alloc_fragment("scores", {Cs, Cs}, f32);
  auto S = T.alloc_fragment("S", {dk, bV}, f32);
  auto acc_o = T.alloc_fragment("acc_o", {Cs, bV}, f32);
  auto rows = [&](Var c) { return Index::slice(c * Cs, (c + 1) * Cs); };
  const Index v_cols = Index::slice(bx * bV, (bx + 1) * bV);

  T.clear(S);
  T.pipelined(
      ceildiv(L, Cs), static_cast<int>(p.integer("num_stages")),
      [&](Var c) {
        T.copy(Q.at({bz, rows(c), by, Index::slice(0, dk)}), Q_shared);
        T.copy(K.at({bz, rows(c), by, Index::slice(0, dk)}), K_shared);
        T.copy(V.at({bz, rows(c), by, v_cols}), V_shared);
        T.clear(scores);
        T.gemm(Q_shared, K_shared, scores, GemmOptions{.transpose_B = true});
        T.parallel(Cs, Cs, [&](Var i, Var j) {
          scores(i, j) = if_then_else(i >= j, scores(i, j), make_int(0));
        });
        T.copy(scores, P_shared);
        T.copy(S, S_shared);
        T.clear(acc_o);
        T.gemm(Q_shared, S_shared, acc_o);
        T.gemm(P_shared, V_shared, acc_o);
        T.parallel(Cs, bV, [&](Var i, Var j) { acc_o(i, j) *= scale; });
        T.copy(acc_o, O.at({bz, rows(c), by, v_cols}));
        T.gemm(K_shared, V_shared, S, GemmOptions{.transpose_A = true});
      },
      {}, "c");
  return T.finish();
}

/// Per (batch, head), in double precision and without chunks: O = scale * tril(Q K^T) V.
void linear_attention_reference(const Params& p, TensorMap& t) {
  const int64_t batch = p.integer("batch"), H = p.integer("heads"), L = p.integer("seq_len");
  const int64_t dk = p.integer("dim_k"), dv = p.integer("dim_v");
  const double scale = std::pow(static_cast<double>(dk), -0.5);
  auto rows_of = [&](const HostTensor& x, int64_t b, int64_t h, int64_t d) {
    MatrixD m(L, d);
    for (int64_t s = 0; s < L; ++s) {
      for (int64_t i = 0; i < d; ++i) m(s, i) = x.at(((b * L + s) * H + h) * d + i);
    }
    return m;
  };
  HostTensor& O = t.at("O");
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      MatrixD Qm = rows_of(t.at("Q"), b, h, dk), Km = rows_of(t.at("K"), b, h, dk);
      MatrixD Vm = rows_of(t.at("V"), b, h, dv);
      MatrixD A = (Qm * Km.transpose()).triangularView<Eigen::Lower>();
      MatrixD Om = scale * A * Vm;
      for (int64_t s = 0; s < L; ++s) {
        for (int64_t i = 0; i < dv; ++i) O.set(((b * L + s) * H + h) * dv + i, Om(s, i));
      }
    }
  }
}

}  // namespace

Example linear_attention_example() {
  Example e;
  e.name = "linear_attention";
  e.description =
      "causal linear attention O = scale * tril(Q K^T) V, chunked with the state in registers";
  e.params = {{"batch", "1", "sequences"},
              {"heads", "2", "heads"},
              {"seq_len", "256", "positions per sequence"},
              {"dim_k", "64", "query/key dimension"},
              {"dim_v", "64", "value dimension"},
              {"chunk_size", "64", "positions per chunk (one step of the sequence loop)"},
              {"block_V", "64", "value columns per block"},
              {"num_stages", "2", "software-pipeline depth of the chunk loop"},
              {"threads", "128", "threads per block"}};
  e.outputs = {"O"};
  e.build = build_linear_attention;
  e.reference = linear_attention_reference;
  return e;
}

}  // namespace tessel
