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
    case GemmPath::kWgmma:
      return "wgmma";
  }
  return "?";
}

namespace {

/// The int8 MFMA instruction of an AMD target (one of its families declares it), or nullopt.
std::optional<IntrinsicId> int8_mfma(const Target& target) {
  for (const IntrinsicInfo& info : intrinsic_table()) {
    if (info.family == IntrinsicFamily::kMma && !info.nvidia && info.home &&
        target.has(*info.home) && info.operands[1].dtypes[0] == DataType::i8()) {
      return info.id;
    }
  }
  return std::nullopt;
}

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

/// The widest wgmma swizzle (128, 64 or 32 bytes) that divides a row of `bytes`; 0 when none.
int wgmma_swizzle_for(int64_t bytes) {
  for (int w : {128, 64, 32}) {
    if (bytes % w == 0) return w;
  }
  return 0;
}

/// The descriptor of a shared operand stored rows x cols whose columns run along K (`k_major`).
WgmmaOperand wgmma_operand(int64_t rows, int64_t cols, bool k_major, DataType dtype) {
  WgmmaOperand o;
  o.rows = rows;
  o.cols = cols;
  o.mn_major = !k_major;
  o.swizzle = wgmma_swizzle_for(dtype.storage_bytes(cols));
  // K-major: LBO unused by swizzled layouts ("assumed 1", i.e. 16 bytes), SBO between 8-row
  // groups. MN-major: LBO between panels of swizzle-wide columns, SBO between 8-row groups.
  o.lbo = k_major ? 16 : rows * o.swizzle;
  o.sbo = 8 * int64_t{o.swizzle};
  return o;
}

/// Plans `p` (a kMma plan on a target with wgmma) as kWgmma; or says why it cannot.
std::string plan_wgmma(const GemmOp& op, GemmPlan& p, int threads) {
  const GemmOptions& o = op.options();
  const bool rs = op.variant() == "rs";
  const DataType in = op.A()->dtype;
  if (in != DataType::f16() && in != DataType::bf16()) {
    return in.name() + " inputs (Tessel's wgmma takes float16 or bfloat16; int8 uses mma.sync)";
  }
  if (!rs && op.variant() != "ss") {
    return "B is a fragment (wgmma reads B from shared memory only)";
  }
  if (rs && o.transpose_A) return "A is a transposed fragment (wgmma takes A's registers (M, K))";
  if (op.B()->dtype != op.A()->dtype) return "A and B have different element types";
  if (threads % 128 != 0) {
    return "threads=" + std::to_string(threads) + " is not a whole number of warpgroups (128)";
  }
  const int groups = threads / 128;
  if (p.M % (64 * groups) != 0) {
    return "M = " + std::to_string(p.M) + " is not a multiple of 64 rows per warpgroup (" +
           std::to_string(groups) + " warpgroups)";
  }
  if (p.N % 8 != 0 || p.N > 256) {
    return "N = " + std::to_string(p.N) + " is not a multiple of 8 from 8 to 256";
  }
  const DataType t = op.A()->dtype;
  WgmmaOperand a =
      o.transpose_A ? wgmma_operand(p.K, p.M, false, t) : wgmma_operand(p.M, p.K, true, t);
  WgmmaOperand b =
      o.transpose_B ? wgmma_operand(p.N, p.K, true, t) : wgmma_operand(p.K, p.N, false, t);
  for (const WgmmaOperand* x : {&a, &b}) {
    if (x->swizzle == 0) {
      return std::string(x == &a ? "A" : "B") + "'s rows of " +
             std::to_string(t.storage_bytes(x->cols)) +
             " bytes are no multiple of a 32-byte swizzle row";
    }
    if (x->lbo >= (int64_t{1} << 18)) return "a shared operand too large for one descriptor";
  }
  p.path = GemmPath::kWgmma;
  p.inst_m = 64, p.inst_n = p.N, p.inst_k = 16;
  p.warpgroups = groups;
  p.partition = WarpPartition{groups, 1, p.M / groups, p.N};
  p.wgmma_a = a;
  p.wgmma_b = b;
  if (rs) {
    p.instruction = t == DataType::f16() ? IntrinsicId::kWgmmaRsF16 : IntrinsicId::kWgmmaRsBF16;
  } else {
    p.instruction = t == DataType::f16() ? IntrinsicId::kWgmmaSsF16 : IntrinsicId::kWgmmaSsBF16;
  }
  return "";
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
    // int8 operands: mma.m16n8k32 (32 int8 along k per instruction).
    p.inst_m = 16, p.inst_n = 8, p.inst_k = in == DataType::i8() ? 32 : 16;
  } else if (!target.nvidia && target.has(mfma_family())) {
    p.path = GemmPath::kMfma;
    p.inst_m = 16, p.inst_n = 16, p.inst_k = 16;
    if (in == DataType::i8()) {
      // int8 operands: the target's int8 MFMA (16x16x16i8 on CDNA2, 16x16x32_i8 on CDNA3).
      if (std::optional<IntrinsicId> id = int8_mfma(target)) {
        p.inst_k = intrinsic_info(*id).k;
      } else {
        p.why_simt = "target " + target.name + " has no int8 matrix instruction";
      }
    }
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
  const bool int8_mma = p.path != GemmPath::kSimt && in == DataType::i8();
  if (p.why_simt.empty() && int8_mma) {
    if (B->dtype != in || C->dtype != DataType::i32()) {
      p.why_simt = "int8 A with " + B->dtype.name() + " B and a " + C->dtype.name() +
                   " accumulator (" +
                   (p.path == GemmPath::kMma ? "mma.m16n8k32" : "the int8 MFMA") +
                   " multiplies int8 by int8 into int32)";
    } else if (p.M % p.inst_m != 0) {
      p.why_simt = not_multiple("M", p.M, p.inst_m);
    } else if (p.N % p.inst_n != 0) {
      p.why_simt = not_multiple("N", p.N, p.inst_n);
    } else if (p.K % p.inst_k != 0) {
      p.why_simt = not_multiple("K", p.K, p.inst_k);
    }
  } else if (p.why_simt.empty()) {
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
  if (p.path == GemmPath::kMma && target.has(wgmma_family())) {
    p.why_not_wgmma = plan_wgmma(op, p, threads);
    if (p.why_not_wgmma.empty()) return p;
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

Layout wgmma_operand_layout(const WgmmaOperand& o, DataType dtype) {
  const int64_t eb = dtype.storage_bytes(1), w = o.swizzle, per_row = w / eb;
  const int64_t mask = w == 128 ? 7 : w == 64 ? 3 : 1;
  const int64_t rows = o.rows;
  return Layout::from_fn({o.rows, o.cols}, [&](const std::vector<Var>& v) {
    // Byte of (r, c) before the swizzle: panel c / per_row, row r, column c % per_row.
    Expr byte = floordiv(v[1], make_int(per_row)) * make_int(rows * w) + v[0] * make_int(w) +
                floormod(v[1], make_int(per_row)) * make_int(eb);
    Expr swizzled = byte ^ (((byte >> 7) & make_int(mask)) << 4);
    return std::vector<Expr>{floordiv(swizzled, make_int(eb))};
  });
}

Fragment gemm_c_fragment(const GemmPlan& p) {
  if (p.path == GemmPath::kWgmma) {
    // PTX ISA Figure 149 (wgmma .m64nNk16 D): warp w % 4 of a warpgroup holds rows 16 (w % 4)
    // .. +15, lane l register i row l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2:
    // mma.m16n8k16's C fragment repeated N / 8 times along the registers, over the 4 warps on
    // threads; then the warpgroup's 64-row tiles on registers and the warpgroups on threads.
    return mma_m16n8k16_c(DataType::f32())
        .repeat({1, p.N / 8}, /*on_thread=*/false)
        .repeat_on_thread({4, 1})
        .repeat({p.tiles_m(), 1}, /*on_thread=*/false)
        .repeat_on_thread({p.warpgroups, 1});
  }
  if (p.path == GemmPath::kSimt) {
    int64_t threads = p.threads, N = p.N;
    return Fragment::from_fn({p.M, p.N}, [&](const std::vector<Var>& v, const Var&) {
      Expr e = v[0] * make_int(N) + v[1];
      return std::pair(floormod(e, make_int(threads)), floordiv(e, make_int(threads)));
    });
  }
  Fragment base = intrinsic_info(p.instruction).operands[0].layout;
  return base.repeat({p.tiles_m(), p.tiles_n()}, /*on_thread=*/false)
      .repeat_on_thread({p.partition.m_warps, p.partition.n_warps});
}

Fragment gemm_a_fragment(const GemmPlan& p, bool transposed, DataType dtype) {
  internal_check(p.path != GemmPath::kSimt, "operand fragments exist on the matrix paths only");
  if (p.path == GemmPath::kWgmma) {
    // wgmma's A in registers (PTX ISA Figure 148): warp w % 4 holds rows 16 (w % 4) .. +15 of
    // each 64 x 16 tile as mma.m16n8k16's A fragment; tile (ti, tk) at registers
    // (ti * k_steps + tk) * 8; the warpgroups on threads.
    internal_check(!transposed, "wgmma takes A's registers untransposed");
    return mma_m16n8k16_a(dtype)
        .repeat_on_thread({4, 1})
        .repeat({p.tiles_m(), p.k_steps()}, /*on_thread=*/false)
        .repeat_on_thread({p.warpgroups, 1});
  }
  Fragment base = intrinsic_info(p.instruction).operands[1].layout;
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
  Fragment base = intrinsic_info(p.instruction).operands[2].layout;
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
