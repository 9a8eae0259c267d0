// DeepSeek Multi-head Latent Attention decode (one query token per sequence, many query heads
// over one shared latent KV head, as in TileLang's deepseek_mla example), in two forms:
//   - mla_decode: one launch; each block takes block_H heads of one sequence and streams the
//     whole KV through shared memory with an online softmax;
//   - mla_decode_split: split-KV (FlashDecoding); launch 1 gives each of num_split blocks per
//     (sequence, head block) a slice of the keys and writes its normalised partial output and
//     log-sum-exp (base 2) into T.alloc_global scratch; launch 2 combines the partials.
// Scores are Q·KV^T + Q_pe·K_pe^T over dim + pe_dim; the values are the latent KV itself.
#include <cmath>
#include <limits>

#include "core/builder.h"
#include "examples/reference_math.h"
#include "examples/registry.h"
#include "interp/element_access.h"

namespace tessel {

namespace {

struct MlaSizes {
  int64_t batch, heads, seqlen, dim, pe_dim, bH, bN, splits;
  int threads;
  double scale;  ///< 1/sqrt(dim + pe_dim) * log2(e): scores in the exp2 domain
};

MlaSizes mla_sizes(const Params& p, bool split) {
  MlaSizes s{p.positive("batch"),
             p.positive("heads"),
             p.positive("seqlen_kv"),
             p.positive("dim"),
             p.positive("pe_dim"),
             p.positive("block_H"),
             p.positive("block_N"),
             split ? p.positive("num_split") : 1,
             static_cast<int>(p.positive("threads")),
             0};
  s.scale = 1.0 / std::sqrt(static_cast<double>(s.dim + s.pe_dim)) * 1.4426950408889634;
  const std::string k = split ? "mla_decode_split" : "mla_decode";
  if (s.heads % s.bH != 0) {
    throw ParamError(k + ": heads=" + std::to_string(s.heads) +
                     " must be a multiple of block_H=" + std::to_string(s.bH));
  }
  if (s.seqlen % (s.splits * s.bN) != 0) {
    throw ParamError(
        k + ": seqlen_kv=" + std::to_string(s.seqlen) +
        " must be a multiple of num_split * block_N = " + std::to_string(s.splits * s.bN));
  }
  return s;
}

/// The attention of one block over keys [first, first + count): leaves acc_o (unnormalised),
/// logsum and scores_max as FlashAttention's online softmax does.
struct MlaBlock {
  BufferRef acc_o, logsum, scores_max;
};

MlaBlock mla_attend(KernelBuilder& T, const MlaSizes& s, const BufferRef& Q, const BufferRef& Q_pe,
                    const BufferRef& KV, const BufferRef& K_pe, const Expr& b, const Expr& h0,
                    const Expr& first, int64_t steps) {
  const DataType f16 = DataType::f16(), f32 = DataType::f32();
  const Expr neg_inf = make_const(f32, -std::numeric_limits<double>::infinity());
  auto Q_shared = T.alloc_shared("Q_shared", {s.bH, s.dim}, f16);
  auto Q_pe_shared = T.alloc_shared("Q_pe_shared", {s.bH, s.pe_dim}, f16);
  auto KV_shared = T.alloc_shared("KV_shared", {s.bN, s.dim}, f16);
  auto K_pe_shared = T.alloc_shared("K_pe_shared", {s.bN, s.pe_dim}, f16);
  auto S_shared = T.alloc_shared("S_shared", {s.bH, s.bN}, f16);
  auto acc_s = T.alloc_fragment("acc_s", {s.bH, s.bN}, f32);
  auto acc_o = T.alloc_fragment("acc_o", {s.bH, s.dim}, f32);
  auto scores_max = T.alloc_fragment("scores_max", {s.bH}, f32);
  auto scores_max_prev = T.alloc_fragment("scores_max_prev", {s.bH}, f32);
  auto scores_scale = T.alloc_fragment("scores_scale", {s.bH}, f32);
  auto scores_sum = T.alloc_fragment("scores_sum", {s.bH}, f32);
  auto logsum = T.alloc_fragment("logsum", {s.bH}, f32);
  // block_H heads are few rows: the warps split the columns (TileLang's MLA uses FullCol).
  GemmOptions qk{false, true, true, GemmWarpPolicy::kFullCol};
  GemmOptions qk_pe{false, true, false, GemmWarpPolicy::kFullCol};
  GemmOptions pv{false, false, false, GemmWarpPolicy::kFullCol};

  T.copy(Q(b, h0, 0), Q_shared);
  T.copy(Q_pe(b, h0, 0), Q_pe_shared);
  T.fill(acc_o, make_const(f32, 0));
  T.fill(logsum, make_const(f32, 0));
  T.fill(scores_max, neg_inf);
  T.pipelined(make_int(steps), 2, [&](Var k) {
    // The block_N keys of the one KV head (TileLang's cur_kv_head, 0 here).
    const Expr key = first + k * s.bN;
    T.copy(KV.at({b, span(key, key + s.bN), 0, all()}), KV_shared);
    T.copy(K_pe.at({b, span(key, key + s.bN), 0, all()}), K_pe_shared);
    T.gemm(Q_shared, KV_shared, acc_s, qk);
    T.gemm(Q_pe_shared, K_pe_shared, acc_s, qk_pe);
    T.copy(scores_max, scores_max_prev);
    T.reduce_max(acc_s, scores_max, 1, /*clear=*/false);
    T.parallel(s.bH, [&](Var i) {
      scores_scale(i) = exp2(scores_max_prev(i) * s.scale - scores_max(i) * s.scale);
    });
    T.parallel(s.bH, s.bN, [&](Var i, Var j) {
      acc_s(i, j) = exp2(acc_s(i, j) * s.scale - scores_max(i) * s.scale);
    });
    T.reduce_sum(acc_s, scores_sum, 1);
    T.copy(acc_s, S_shared);
    T.parallel(s.bH, [&](Var i) { logsum(i) = logsum(i) * scores_scale(i) + scores_sum(i); });
    T.parallel(s.bH, s.dim, [&](Var i, Var j) { acc_o(i, j) = acc_o(i, j) * scores_scale(i); });
    T.gemm(S_shared, KV_shared, acc_o, pv);
  });
  return {acc_o, logsum, scores_max};
}

struct MlaTensors {
  BufferRef Q, Q_pe, KV, K_pe, Output;
};

MlaTensors mla_tensors(KernelBuilder& T, const MlaSizes& s) {
  const DataType f16 = DataType::f16();
  return {T.tensor("Q", {s.batch, s.heads, s.dim}, f16),
          T.tensor("Q_pe", {s.batch, s.heads, s.pe_dim}, f16),
          T.tensor("KV", {s.batch, s.seqlen, 1, s.dim}, f16),  // one KV head
          T.tensor("K_pe", {s.batch, s.seqlen, 1, s.pe_dim}, f16),
          T.tensor("Output", {s.batch, s.heads, s.dim}, f16)};
}

Kernel build_mla_decode(const Params& p) {
  const MlaSizes s = mla_sizes(p, false);
  KernelBuilder T("mla_decode");
  MlaTensors t = mla_tensors(T, s);
  auto [bx, by] = T.kernel2(s.batch, s.heads / s.bH, s.threads);
  MlaBlock r =
      mla_attend(T, s, t.Q, t.Q_pe, t.KV, t.K_pe, bx, by * s.bH, make_int(0), s.seqlen / s.bN);
  T.parallel(s.bH, s.dim, [&](Var i, Var j) { r.acc_o(i, j) = r.acc_o(i, j) / r.logsum(i); });
  T.copy(r.acc_o, t.Output(bx, by * s.bH, 0));
  return T.finish();
}

Kernel build_mla_decode_split(const Params& p) {
  const MlaSizes s = mla_sizes(p, true);
  const DataType f32 = DataType::f32();
  KernelBuilder T("mla_decode_split");
  MlaTensors t = mla_tensors(T, s);
  // Per (sequence, split, head): the partial output and its log2-sum-exp.
  auto glse = T.alloc_global("glse", {s.batch, s.splits, s.heads}, f32);
  auto O_partial = T.alloc_global("Output_partial", {s.batch, s.splits, s.heads, s.dim}, f32);

  // Launch 1: each block attends to one slice of seqlen_kv / num_split keys.
  const int64_t per_split = s.seqlen / s.splits;
  auto split_idx =
      T.kernel({make_int(s.batch), make_int(s.heads / s.bH), make_int(s.splits)}, s.threads);
  const Var bx = split_idx[0], by = split_idx[1], bz = split_idx[2];
  MlaBlock r =
      mla_attend(T, s, t.Q, t.Q_pe, t.KV, t.K_pe, bx, by * s.bH, bz * per_split, per_split / s.bN);
  T.parallel(s.bH, s.dim, [&](Var i, Var j) { r.acc_o(i, j) = r.acc_o(i, j) / r.logsum(i); });
  T.parallel(s.bH, [&](Var i) {
    glse(bx, bz, by * s.bH + i) = call(Builtin::kLog2, {r.logsum(i)}) + r.scores_max(i) * s.scale;
  });
  T.copy(r.acc_o, O_partial(bx, bz, by * s.bH, 0));

  // Launch 2: per (sequence, head block), weights 2^(lse_k - lse) of the splits, then the sum.
  auto [cx, cy] = T.kernel2(s.heads / s.bH, s.batch, s.threads);
  auto lse = T.alloc_fragment("lse", {s.bH, s.splits}, f32);
  auto lse_max = T.alloc_fragment("lse_max", {s.bH}, f32);
  auto lse_sum = T.alloc_fragment("lse_sum", {s.bH}, f32);
  auto weight = T.alloc_shared("weight", {s.bH, s.splits}, f32);
  auto acc = T.alloc_fragment("o_accum", {s.bH, s.dim}, f32);
  T.parallel(s.bH, s.splits, [&](Var i, Var k) { lse(i, k) = glse(cy, k, cx * s.bH + i); });
  T.reduce_max(lse, lse_max, 1);
  T.parallel(s.bH, s.splits, [&](Var i, Var k) { lse(i, k) = exp2(lse(i, k) - lse_max(i)); });
  T.reduce_sum(lse, lse_sum, 1);
  T.parallel(s.bH, s.splits, [&](Var i, Var k) { lse(i, k) = lse(i, k) / lse_sum(i); });
  T.copy(lse, weight);
  T.clear(acc);
  T.serial(
      make_int(s.splits),
      [&](Var k) {
        T.parallel(s.bH, s.dim, [&](Var i, Var j) {
          acc(i, j) = acc(i, j) + O_partial(cy, k, cx * s.bH + i, j) * weight(i, k);
        });
      },
      "k");
  T.copy(acc, t.Output(cy, cx * s.bH, 0));
  return T.finish();
}

/// Output[b, h] = softmax_k((Q·KV_k + Q_pe·K_pe_k) / sqrt(dim + pe_dim)) · KV, in double.
void mla_reference(const Params& p, TensorMap& t) {
  const int64_t B = p.integer("batch"), H = p.integer("heads"), S = p.integer("seqlen_kv");
  const int64_t D = p.integer("dim"), P = p.integer("pe_dim");
  const HostTensor &Q = t.at("Q"), &Q_pe = t.at("Q_pe"), &KV = t.at("KV"), &K_pe = t.at("K_pe");
  HostTensor& O = t.at("Output");
  const double scale = 1.0 / std::sqrt(static_cast<double>(D + P));
  auto rows = [](const HostTensor& x, int64_t b, int64_t n, int64_t d) {
    const element_access::ElemKind kind = element_access::elem_kind(x.dtype());
    MatrixD m(n, d);
    for (int64_t i = 0; i < n * d; ++i)
      m.data()[i] = element_access::load_elem(kind, x, b * n * d + i);
    return m;
  };
  const element_access::ElemKind out_kind = element_access::elem_kind(O.dtype());
  parallel_for(B, [&](int64_t b) {   // sequences write disjoint rows of Output
    MatrixD kv = rows(KV, b, S, D);  // KV and K_pe have one head: [batch, seqlen, 1, dim]
    MatrixD scores = (rows(Q, b, H, D) * kv.transpose() +
                      rows(Q_pe, b, H, P) * rows(K_pe, b, S, P).transpose()) *
                     scale;
    for (int64_t h = 0; h < H; ++h) {
      const double mx = scores.row(h).maxCoeff();
      scores.row(h) = (scores.row(h).array() - mx).exp().matrix();
      scores.row(h) /= scores.row(h).sum();
    }
    MatrixD out = scores * kv;
    for (int64_t i = 0; i < H * D; ++i)
      element_access::store_elem(out_kind, O, b * H * D + i, out.data()[i]);
  });
}

std::vector<ParamSpec> mla_params(bool split) {
  std::vector<ParamSpec> ps = {
      {"batch", "2", "sequences decoded at once (paper: 64)"},
      {"heads", "32", "query heads sharing the one latent KV head (paper: 128)"},
      {"seqlen_kv", "256", "cached tokens per sequence"},
      {"dim", "64", "latent (KV) dimension (paper: 512)"},
      {"pe_dim", "32", "rotary (RoPE) dimension (paper: 64)"},
      {"block_H", "16", "query heads per block"},
      {"block_N", "32", "keys per pipeline step"},
      {"threads", "128", "threads per block"}};
  if (split) ps.push_back({"num_split", "4", "KV splits, each a block of launch 1"});
  return ps;
}

}  // namespace

Example mla_decode_example() {
  Example e;
  e.name = "mla_decode";
  e.description = "DeepSeek MLA decode: heads of one query token over one latent KV head";
  e.params = mla_params(false);
  e.outputs = {"Output"};
  e.build = build_mla_decode;
  e.reference = mla_reference;
  return e;
}

Example mla_decode_split_example() {
  Example e;
  e.name = "mla_decode_split";
  e.description =
      "MLA decode, split-KV: partials + log-sum-exp into T.alloc_global, then a combine launch";
  e.params = mla_params(true);
  e.outputs = {"Output"};
  e.build = build_mla_decode_split;
  e.reference = mla_reference;
  return e;
}

}  // namespace tessel
