// The gemm plan: instruction choice, the warp partition (TileLang's GemmWarpPolicy) and the
// register fragments of C and of operands held in registers.
#include "core/gemm_partition.h"

#include <algorithm>
#include <optional>

#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/instruction_family.h"

namespace tessel {

const char* gemm_path_name(GemmPath path) {
  switch (path) {
    case GemmPath::kMma:
      return "mma";
    case GemmPath::kMfma:
      return "mfma";
    case GemmPath::kSimt:
      return "simt";
  }
  return "?";
}

namespace {

bool fits(int64_t M, int64_t N, int64_t m_warps, int64_t n_warps, int64_t inst_m, int64_t inst_n) {
  return M % (m_warps * inst_m) == 0 && N % (n_warps * inst_n) == 0;
}

/// The split `policy` picks for `num_warps` warps, or nullopt when none fits.
std::optional<WarpPartition> choose_split(int64_t M, int64_t N, int num_warps,
                                          GemmWarpPolicy policy, int64_t inst_m, int64_t inst_n) {
  auto make = [&](int m_warps) {
    int n_warps = num_warps / m_warps;
    return WarpPartition{m_warps, n_warps, M / m_warps, N / n_warps};
  };
  switch (policy) {
    case GemmWarpPolicy::kFullRow:
      if (fits(M, N, num_warps, 1, inst_m, inst_n)) return make(num_warps);
      return std::nullopt;
    case GemmWarpPolicy::kFullCol:
      if (fits(M, N, 1, num_warps, inst_m, inst_n)) return make(1);
      return std::nullopt;
    case GemmWarpPolicy::kSquare:
      break;
  }
  std::optional<WarpPartition> best;
  for (int m_warps = 1; m_warps <= num_warps; ++m_warps) {
    if (num_warps % m_warps != 0 || !fits(M, N, m_warps, num_warps / m_warps, inst_m, inst_n)) {
      continue;
    }
    WarpPartition p = make(m_warps);
    // Longer / shorter side, compared by cross-multiplication; only a strictly squarer split
    // replaces the best so far, so ties keep the one with fewer warps along M.
    auto longer = [](const WarpPartition& w) { return std::max(w.warp_m, w.warp_n); };
    auto shorter = [](const WarpPartition& w) { return std::min(w.warp_m, w.warp_n); };
    if (!best || longer(p) * shorter(*best) < longer(*best) * shorter(p)) best = p;
  }
  return best;
}

std::optional<int64_t> const_extent(const Buffer& b, size_t dim) {
  return as_const_int(b->shape[dim]);
}

}  // namespace

WarpPartition compute_warp_partition(const std::string& who, int64_t M, int64_t N, int threads,
                                     int warp_size, GemmWarpPolicy policy, int64_t inst_m,
                                     int64_t inst_n, const std::string& instruction) {
  internal_check(inst_m >= 1 && inst_n >= 1 && warp_size >= 1, "bad instruction shape");
  if (threads <= 0 || threads % warp_size != 0) {
    user_error(who + ": threads=" + std::to_string(threads) +
               " is not a positive multiple of the warp size " + std::to_string(warp_size) +
               " of this target; the gemm splits C over whole warps, so use a multiple of " +
               std::to_string(warp_size) + " threads");
  }
  int num_warps = threads / warp_size;
  if (auto p = choose_split(M, N, num_warps, policy, inst_m, inst_n)) return *p;

  std::string fix;
  for (int w = num_warps - 1; w >= 1 && fix.empty(); --w) {
    if (choose_split(M, N, w, policy, inst_m, inst_n)) {
      fix = "use threads=" + std::to_string(w * warp_size);
    }
  }
  for (GemmWarpPolicy other :
       {GemmWarpPolicy::kSquare, GemmWarpPolicy::kFullRow, GemmWarpPolicy::kFullCol}) {
    if (other != policy && choose_split(M, N, num_warps, other, inst_m, inst_n)) {
      fix += std::string(fix.empty() ? "use" : ", or") + " policy=T.GemmWarpPolicy." +
             policy_name(other);
      break;
    }
  }
  if (fix.empty()) fix = "use a larger tile";
  user_error(who + ": cannot split the " + std::to_string(M) + " x " + std::to_string(N) +
             " C tile (M=" + std::to_string(M) + ", N=" + std::to_string(N) + ") over " +
             std::to_string(num_warps) + " warps (threads=" + std::to_string(threads) +
             ") with policy " + policy_name(policy) + ": each warp's tile must be a multiple of " +
             std::to_string(inst_m) + " x " + std::to_string(inst_n) + " (" + instruction + "); " +
             fix);
}

GemmPlan plan_gemm(const GemmOp& op, const std::string& kernel, const Target& target, int threads) {
  std::string who = "kernel '" + kernel + "': " + op.describe();
  const Buffer &A = op.A(), &B = op.B(), &C = op.C();
  const GemmOptions& o = op.options();
  for (const Buffer* b : {&A, &B, &C}) {
    for (size_t d = 0; d < 2; ++d) {
      if (!const_extent(*b, d)) {
        user_error(who + ": '" + (*b)->name + "' has a symbolic extent in dimension " +
                   std::to_string(d) + "; gemm tiles must have constant shapes (allocate the " +
                   "tile with constant block sizes and guard the edges of the tensor instead)");
      }
    }
    if ((*b)->scope == Scope::kLocal) {
      user_error(who + ": '" + (*b)->name + "' is a per-thread local buffer; a gemm's " +
                 (b == &C ? "accumulator" : "operands") + " must be block-wide tiles: allocate '" +
                 (*b)->name + "' with T.alloc_fragment" + (b == &C ? "" : " or T.alloc_shared"));
    }
  }
  GemmPlan p;
  p.M = *const_extent(C, 0);
  p.N = *const_extent(C, 1);
  p.K = *const_extent(A, o.transpose_A ? 0 : 1);
  p.threads = threads;
  p.warp_size = target.warp_size;

  DataType in = A->dtype;
  bool half = in == DataType::f16() || in == DataType::bf16();
  if (target.nvidia && target.has(mma_sync_family()) && target.has(ldmatrix_family())) {
    p.path = GemmPath::kMma;
    p.inst_m = 16, p.inst_n = 8, p.inst_k = 16;
  } else if (!target.nvidia && target.has(mfma_family())) {
    p.path = GemmPath::kMfma;
    p.inst_m = 16, p.inst_n = 16, p.inst_k = 16;
  } else {
    p.why_simt = "target " + target.name + " has no matrix instruction";
  }
  if (p.why_simt.empty() && threads % target.warp_size != 0) {
    p.why_simt = "threads=" + std::to_string(threads) + " is not a whole number of " +
                 std::to_string(target.warp_size) +
                 "-lane warps (a matrix instruction needs every lane of its warp)";
  }
  auto not_multiple = [](const char* what, int64_t v, int64_t of) {
    return std::string(what) + " = " + std::to_string(v) + " is not a multiple of " +
           std::to_string(of);
  };
  if (p.why_simt.empty()) {
    if (!half) {
      p.why_simt = in.name() + " inputs (the matrix instructions take float16 or bfloat16)";
    } else if (C->dtype != DataType::f32()) {
      p.why_simt =
          "a " + C->dtype.name() + " accumulator (the matrix instructions accumulate in float32)";
    } else if (p.M % p.inst_m != 0) {
      p.why_simt = not_multiple("M", p.M, p.inst_m);
    } else if (p.N % p.inst_n != 0) {
      p.why_simt = not_multiple("N", p.N, p.inst_n);
    } else if (p.K % p.inst_k != 0) {
      p.why_simt = not_multiple("K", p.K, p.inst_k);
    }
  }
  if (!p.why_simt.empty()) {
    p.path = GemmPath::kSimt;
    p.inst_m = p.inst_n = p.inst_k = 0;
    if (op.variant() != "ss") {
      const Buffer& r = A->scope == Scope::kFragment ? A : B;
      user_error(
          who + ": '" + r->name + "' is a fragment, but this gemm runs as scalar " +
          "multiply-adds (" + p.why_simt + "), which read both operands from shared " +
          "memory; allocate '" + r->name + "' with T.alloc_shared, or use float16/bfloat16 " +
          "inputs, a float32 accumulator and tiles that are multiples of the " + "instruction");
    }
    return p;
  }
  std::optional<IntrinsicId> id =
      find_matrix_intrinsic(target.nvidia, static_cast<int>(p.inst_m), static_cast<int>(p.inst_n),
                            static_cast<int>(p.inst_k), in);
  internal_check(id.has_value(), "no table entry for the gemm's matrix instruction");
  p.instruction = *id;
  p.partition = compute_warp_partition(who, p.M, p.N, threads, target.warp_size, o.policy, p.inst_m,
                                       p.inst_n, intrinsic_info(*id).name);
  return p;
}

Fragment transpose_fragment(const Fragment& frag) {
  internal_check(frag.input_rank() == 2, "transpose_fragment needs a 2-d fragment");
  const std::vector<int64_t>& s = frag.input_shape();
  return Fragment::from_fn(
      {s[1], s[0]},
      [&](const std::vector<Var>& v, const Var& rep) {
        return frag.forward({v[1], v[0]}, rep);
      },
      frag.replicate());
}

Fragment gemm_c_fragment(const GemmPlan& p) {
  if (p.path == GemmPath::kSimt) {
    int64_t threads = p.threads, N = p.N;
    return Fragment::from_fn({p.M, p.N}, [&](const std::vector<Var>& v, const Var&) {
      Expr e = v[0] * make_int(N) + v[1];
      return std::pair(floormod(e, make_int(threads)), floordiv(e, make_int(threads)));
    });
  }
  Fragment base =
      p.path == GemmPath::kMma ? mma_m16n8k16_c(DataType::f32()) : mfma_16x16x16_d(DataType::f32());
  return base.repeat({p.tiles_m(), p.tiles_n()}, /*on_thread=*/false)
      .repeat_on_thread({p.partition.m_warps, p.partition.n_warps});
}

Fragment gemm_a_fragment(const GemmPlan& p, bool transposed, DataType dtype) {
  internal_check(p.path != GemmPath::kSimt, "operand fragments exist on the matrix paths only");
  Fragment base = p.path == GemmPath::kMma ? mma_m16n8k16_a(dtype) : mfma_16x16x16_a(dtype);
  const WarpPartition& w = p.partition;
  if (!transposed) {
    return base.repeat({p.tiles_m(), p.k_steps()}, false)
        .replicate(w.n_warps)
        .repeat_on_thread({w.m_warps, 1});
  }
  return transpose_fragment(base)
      .repeat({p.k_steps(), p.tiles_m()}, false)
      .replicate(w.n_warps)
      .repeat_on_thread({1, w.m_warps});
}

Fragment gemm_b_fragment(const GemmPlan& p, bool transposed, DataType dtype) {
  internal_check(p.path != GemmPath::kSimt, "operand fragments exist on the matrix paths only");
  Fragment base = p.path == GemmPath::kMma ? mma_m16n8k16_b(dtype) : mfma_16x16x16_b(dtype);
  const WarpPartition& w = p.partition;
  if (!transposed) {
    return base.repeat({p.k_steps(), p.tiles_n()}, false)
        .repeat_on_thread({1, w.n_warps})
        .replicate(w.m_warps);
  }
  return transpose_fragment(base)
      .repeat({p.tiles_n(), p.k_steps()}, false)
      .repeat_on_thread({w.n_warps, 1})
      .replicate(w.m_warps);
}

}  // namespace tessel
