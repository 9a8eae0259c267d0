// FlashAttention forward (the paper's Fig. 1 kernel shape, as in TileLang's example): per head
// and block of block_M queries, stream block_N keys and values through shared memory, keep the
// running row maximum and row sum in registers, rescale the output accumulator (online softmax),
// and multiply the probabilities (cast to fp16, in registers) by V. Both gemms use FullRow so a
// warp owns whole rows, which the row reductions and the rescaling need. With is_causal=1 keys
// after a query are masked.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/builder.h"
#include "examples/reference_math.h"
#include "examples/registry.h"
#include "interp/element_access.h"

namespace tessel {

namespace {

Kernel build_flash_attention(const Params& p) {
  const int64_t H = p.positive("heads"), S = p.positive("seq_len"), D = p.positive("dim");
  const int64_t bM = p.positive("block_M"), bN = p.positive("block_N");
  const bool causal = p.integer("is_causal") != 0;
  const DataType f16 = DataType::f16(), f32 = DataType::f32();
  const double scale = 1.0 / std::sqrt(static_cast<double>(D)) * 1.4426950408889634;  // log2(e)
  const Expr neg_inf = make_const(f32, -std::numeric_limits<double>::infinity());

  KernelBuilder T("flash_attention");
  auto Q = T.tensor("Q", {H, S, D}, f16);
  auto K = T.tensor("K", {H, S, D}, f16);
  auto V = T.tensor("V", {H, S, D}, f16);
  auto O = T.tensor("O", {H, S, D}, f16);
  auto [bx, by] = T.kernel2(ceildiv(S, bM), H, static_cast<int>(p.integer("threads")));
  auto Q_shared = T.alloc_shared("Q_shared", {bM, D}, f16);
  auto K_shared = T.alloc_shared("K_shared", {bN, D}, f16);
  auto V_shared = T.alloc_shared("V_shared", {bN, D}, f16);
  auto acc_s = T.alloc_fragment("acc_s", {bM, bN}, f32);
  auto acc_s_cast = T.alloc_fragment("acc_s_cast", {bM, bN}, f16);
  auto acc_o = T.alloc_fragment("acc_o", {bM, D}, f32);
  auto scores_max = T.alloc_fragment("scores_max", {bM}, f32);
  auto scores_max_prev = T.alloc_fragment("scores_max_prev", {bM}, f32);
  auto scores_scale = T.alloc_fragment("scores_scale", {bM}, f32);
  auto scores_sum = T.alloc_fragment("scores_sum", {bM}, f32);
  auto logsum = T.alloc_fragment("logsum", {bM}, f32);
  GemmOptions qk{false, true, false, GemmWarpPolicy::kFullRow};
  GemmOptions pv{false, false, false, GemmWarpPolicy::kFullRow};

  T.copy(Q(by, bx * bM, 0), Q_shared);
  T.fill(acc_o, make_const(f32, 0));
  T.fill(logsum, make_const(f32, 0));
  T.fill(scores_max, neg_inf);
  T.pipelined(ceildiv(S, bN), static_cast<int>(p.integer("num_stages")), [&](Var k) {
    T.copy(K(by, k * bN, 0), K_shared);
    T.clear(acc_s);
    T.gemm(Q_shared, K_shared, acc_s, qk);
    // Keys past the sequence end (and, causal, after the query) must not count.
    T.parallel(bM, bN, [&](Var i, Var j) {
      Expr masked = k * bN + j >= S;
      if (causal) masked = masked || bx * bM + i < k * bN + j;
      acc_s(i, j) = if_then_else(masked, neg_inf, acc_s(i, j));
    });
    T.copy(scores_max, scores_max_prev);
    T.reduce_max(acc_s, scores_max, 1, /*clear=*/false);
    T.parallel(bM, [&](Var i) {
      scores_scale(i) = exp2(scores_max_prev(i) * scale - scores_max(i) * scale);
    });
    T.parallel(bM, bN, [&](Var i, Var j) {
      acc_s(i, j) = exp2(acc_s(i, j) * scale - scores_max(i) * scale);
    });
    T.reduce_sum(acc_s, scores_sum, 1);
    T.parallel(bM, [&](Var i) { logsum(i) = logsum(i) * scores_scale(i) + scores_sum(i); });
    T.copy(acc_s, acc_s_cast);
    T.parallel(bM, D, [&](Var i, Var j) { acc_o(i, j) = acc_o(i, j) * scores_scale(i); });
    T.copy(V(by, k * bN, 0), V_shared);
    T.gemm(acc_s_cast, V_shared, acc_o, pv);
  });
  T.parallel(bM, D, [&](Var i, Var j) { acc_o(i, j) = acc_o(i, j) / logsum(i); });
  T.copy(acc_o, O(by, bx * bM, 0));
  return T.finish();
}

void attention_reference(const Params& p, TensorMap& t) {
  const int64_t H = p.integer("heads"), S = p.integer("seq_len"), D = p.integer("dim");
  const bool causal = p.integer("is_causal") != 0;
  const HostTensor &Q = t.at("Q"), &K = t.at("K"), &V = t.at("V");
  HostTensor& O = t.at("O");
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  using element_access::elem_kind;
  auto head = [&](const HostTensor& x, int64_t h) {
    const element_access::ElemKind kind = elem_kind(x.dtype());
    MatrixD m(S, D);
    for (int64_t i = 0; i < S * D; ++i)
      m.data()[i] = element_access::load_elem(kind, x, h * S * D + i);
    return m;
  };
  const element_access::ElemKind out_kind = elem_kind(O.dtype());
  // One head at a time in double precision, kRows queries at a time: scores = Q K^T / sqrt(D),
  // masked, row softmax, P V. Causal, the queries [r0, r1) see only the keys [0, r1) (the
  // others weigh exp(-inf) = 0 exactly, so leaving them out of the sums changes nothing).
  constexpr int64_t kRows = 128;
  parallel_for(H, [&](int64_t h) {  // heads write disjoint rows of O
    MatrixD q = head(Q, h), k = head(K, h), v = head(V, h);
    for (int64_t r0 = 0; r0 < S; r0 += kRows) {
      const int64_t rows = std::min(kRows, S - r0), keys = causal ? r0 + rows : S;
      MatrixD w = (q.middleRows(r0, rows) * k.topRows(keys).transpose()) * scale;
      for (int64_t i = 0; i < rows; ++i) {
        if (causal) w.row(i).tail(keys - 1 - (r0 + i)).setConstant(-INFINITY);  // keys after it
        double mx = w.row(i).maxCoeff();
        w.row(i) = (w.row(i).array() - mx).exp().matrix();
        w.row(i) /= w.row(i).sum();
      }
      MatrixD o = w * v.topRows(keys);
      for (int64_t i = 0; i < rows * D; ++i)
        element_access::store_elem(out_kind, O, (h * S + r0) * D + i, o.data()[i]);
    }
  });
}

}  // namespace

Example flash_attention_example() {
  Example e;
  e.name = "flash_attention";
  e.description = "O = softmax(Q K^T / sqrt(dim)) V per head, online softmax (FlashAttention)";
  e.params = {{"heads", "2", "heads (batch folded in)"},
              {"seq_len", "256", "queries = keys"},
              {"dim", "64", "head dimension"},
              {"block_M", "64", "queries per block"},
              {"block_N", "64", "keys per step"},
              {"num_stages", "2", "software-pipeline depth of the key/value loop"},
              {"threads", "128", "threads per block"},
              {"is_causal", "0", "1: a query sees only keys at or before it"}};
  e.outputs = {"O"};
  e.build = build_flash_attention;
  e.reference = attention_reference;
  return e;
}

}  // namespace tessel
