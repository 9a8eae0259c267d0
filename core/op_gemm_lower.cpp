// T.gemm at thread level. The matrix paths loop over k steps of the instruction's k (16; 32 for
// int8); in each, every warp brings
// its A and B instruction tiles into registers (core/op_gemm_loads.cpp; operands already in
// fragments are used in place) and issues one mma.sync / MFMA per tile of its part of C. The
// scalar path lets every thread accumulate its own C elements over K from shared memory.
#include "core/op_gemm_lower.h"

#include "core/op_gemm.h"

namespace tessel {

GemmLowering::GemmLowering(const GemmOp& o, LowerContext& c, GemmPlan p)
    : op(o), ctx(c), plan(std::move(p)) {
  Expr t = ctx.thread();
  int64_t ws = plan.warp_size;
  lane = floormod(t, make_int(ws));
  Expr warp = floordiv(t, make_int(ws));
  // Warp w = wm * n_warps + wn; the simplify pass folds the divisions by 1.
  const WarpPartition& w = plan.partition;
  wm = w.m_warps == 1 ? Expr(0) : floordiv(warp, make_int(w.n_warps));
  wn = w.n_warps == 1 ? Expr(0) : floormod(warp, make_int(w.n_warps));
}

Stmt GemmLowering::loop(const std::string& name, int64_t extent, ForKind kind,
                        const std::function<Stmt(const Expr&)>& body) const {
  if (extent == 1) return body(Expr(0));
  Var v = ctx.fresh_var(name);
  return ForNode::make(v, 0, make_int(extent), kind, body(v), op.loc());
}

Stmt GemmLowering::call(IntrinsicId id, std::vector<IntrinsicArg> args) const {
  return IntrinsicCallNode::make(id, std::move(args), op.loc());
}

IntrinsicArg register_arg(const Buffer& buffer, Expr index) {
  return {buffer, {std::move(index)}, Expr()};
}

IntrinsicArg element_arg(const Buffer& buffer, std::vector<Expr> indices) {
  return {buffer, std::move(indices), Expr()};
}

namespace {

/// The fragment inference recorded for `b` must be the one the plan addresses.
void require_fragment(GemmLowering& g, const Buffer& b, const Fragment& expected) {
  const Fragment* f = g.ctx.layouts().fragment(b);
  internal_check(f != nullptr, "gemm fragment without a layout after inference");
  if (*f == expected || equal_by_evaluation(*f, expected)) return;
  user_error("kernel '" + g.ctx.kernel()->name + "': " + g.op.describe() + ": '" + b->name +
             "' has the layout\n    " + f->to_string() + "\n  but this gemm computes it as\n    " +
             expected.to_string() + "\n  fix: remove the T.annotate_layout of '" + b->name +
             "' or copy it into a fragment of its own before the gemm");
}

/// k step `ko` of an operand held in a fragment: its registers, in the order of
/// gemm_a_fragment / gemm_b_fragment.
StepOperand fragment_operand(GemmLowering& g, bool is_a, const Expr& ko) {
  const GemmPlan& p = g.plan;
  const Buffer& b = is_a ? g.op.A() : g.op.B();
  bool transposed = is_a ? g.op.options().transpose_A : g.op.options().transpose_B;
  Fragment expected =
      is_a ? gemm_a_fragment(p, transposed, b->dtype) : gemm_b_fragment(p, transposed, b->dtype);
  require_fragment(g, b, expected);
  Buffer regs = g.ctx.registers(b);
  int64_t per_tile = intrinsic_info(p.instruction).operands[is_a ? 1 : 2].elements;
  int64_t tiles = is_a ? p.tiles_m() : p.tiles_n(), steps = p.k_steps();
  // A (M, K): tile (ti, tk) is copy ti * k_steps + tk; (K, M): tk * tiles_m + ti. B (K, N):
  // tk * tiles_n + tj; (N, K): tj * k_steps + tk.
  bool tile_major = is_a != transposed;
  return {Stmt(), [=](const Expr& t) {
            Expr copy = tile_major ? t * make_int(steps) + ko : ko * make_int(tiles) + t;
            return register_arg(regs, copy * make_int(per_tile));
          }};
}

Stmt lower_matrix(GemmLowering& g) {
  const GemmPlan& p = g.plan;
  Buffer c = g.ctx.registers(g.op.C());
  std::vector<Stmt> body;
  if (g.op.options().clear_accum) {
    int64_t regs = p.tiles_m() * p.tiles_n() * 4;
    body.push_back(g.loop("r", regs, ForKind::kUnrolled, [&](const Expr& r) {
      return StoreNode::make(c, {r}, make_const(c->dtype, 0), g.op.loc());
    }));
  }
  auto operand = [&](bool is_a, const Expr& ko) {
    return (is_a ? g.op.A() : g.op.B())->scope == Scope::kFragment
               ? fragment_operand(g, is_a, ko)
               : load_shared_operand(g, is_a, ko);
  };
  body.push_back(g.loop("ko", p.k_steps(), ForKind::kSerial, [&](const Expr& ko) {
    StepOperand a = operand(true, ko), b = operand(false, ko);
    std::vector<Stmt> step;
    if (a.load.defined()) step.push_back(a.load);
    if (b.load.defined()) step.push_back(b.load);
    step.push_back(g.loop("i", p.tiles_m(), ForKind::kUnrolled, [&](const Expr& i) {
      return g.loop("j", p.tiles_n(), ForKind::kUnrolled, [&](const Expr& j) {
        Expr acc = (i * make_int(p.tiles_n()) + j) * 4;
        return g.call(p.instruction,
                      {register_arg(c, acc), a.arg(i), b.arg(j), register_arg(c, acc)});
      });
    }));
    return SeqNode::make(std::move(step));
  }));
  return SeqNode::make(std::move(body));
}

/// The shared layout inference recorded for a wgmma operand must be its descriptor's.
void require_wgmma_layout(GemmLowering& g, const Buffer& b, const WgmmaOperand& o) {
  const Layout* l = g.ctx.layouts().shared_layout(b);
  Layout expected = wgmma_operand_layout(o, b->dtype);
  // The same storage offsets suffice: TileLang's make_swizzled_layout of a 64-byte row is the
  // 64-byte swizzle, written over (j // 32, i // 8, chunk) where the descriptor's is flat.
  if (l != nullptr && (*l == expected || equal_offsets_by_evaluation(*l, expected))) return;
  user_error("kernel '" + g.ctx.kernel()->name + "': " + g.op.describe() + ": '" + b->name +
             "' has the layout\n    " + (l ? l->to_string() : std::string("(none)")) +
             "\n  but the wgmma this gemm lowers to reads it through a descriptor as\n    " +
             expected.to_string() + "\n  fix: remove the T.annotate_layout of '" + b->name +
             "', or lower for --target sm80 (mma.sync)");
}

/// wgmma.mma_async (sm90): warpgroup g takes rows [g M / G, (g + 1) M / G); per k step of 16 it
/// issues one m64nNk16 per 64-row tile, A and B read from shared memory through descriptors
/// whose start is the tile's first element. Before: each thread's fence.proxy.async (the shared
/// writes it has seen become visible to the async proxy wgmma reads through; the barrier that
/// publishes other threads' writes is insert_barriers' or the pipeline's, so the gemm holds no
/// block barrier of its own and can run inside a warp-specialised consumer branch); after: one
/// commit and wait_group 0, so C is complete and the operands free when the gemm ends, as
/// T.gemm promises.
Stmt lower_wgmma(GemmLowering& g) {
  const GemmPlan& p = g.plan;
  const GemmOp& op = g.op;
  const bool rs = op.A()->scope == Scope::kFragment;
  Buffer a_regs;
  if (rs) {
    require_fragment(g, op.A(), gemm_a_fragment(p, false, op.A()->dtype));
    a_regs = g.ctx.registers(op.A());
  } else {
    require_wgmma_layout(g, op.A(), p.wgmma_a);
  }
  require_wgmma_layout(g, op.B(), p.wgmma_b);
  Buffer c = g.ctx.registers(op.C());
  const int64_t regs = p.N / 2;
  std::vector<Stmt> body;
  if (op.options().clear_accum) {
    body.push_back(g.loop("r", p.tiles_m() * regs, ForKind::kUnrolled, [&](const Expr& r) {
      return StoreNode::make(c, {r}, make_const(c->dtype, 0), op.loc());
    }));
  }
  body.push_back(g.call(IntrinsicId::kFenceProxyAsync, {}));
  body.push_back(g.call(IntrinsicId::kWgmmaFence, {}));
  Expr group_row = floordiv(g.ctx.thread(), make_int(128)) * make_int(p.M / p.warpgroups);
  auto imm = [](int64_t v) { return IntrinsicArg{Buffer(), {}, make_int(v)}; };
  auto desc = [&](std::vector<IntrinsicArg>& args, const WgmmaOperand& o) {
    args.push_back(imm(o.swizzle));
    args.push_back(imm(o.lbo));
    args.push_back(imm(o.sbo));
    args.push_back(imm(o.mn_major ? 1 : 0));
  };
  body.push_back(g.loop("ko", p.k_steps(), ForKind::kSerial, [&](const Expr& ko) {
    return g.loop("i", p.tiles_m(), ForKind::kUnrolled, [&](const Expr& i) {
      Expr m0 = group_row + i * make_int(64), k0 = ko * make_int(16);
      std::vector<IntrinsicArg> args = {register_arg(c, i * make_int(regs))};
      if (rs) {
        // A tile (i, ko) of this warpgroup's registers (gemm_a_fragment).
        args.push_back(register_arg(a_regs, (i * make_int(p.k_steps()) + ko) * make_int(8)));
      } else {
        args.push_back(op.options().transpose_A ? element_arg(op.A(), {k0, m0})
                                                : element_arg(op.A(), {m0, k0}));
      }
      args.push_back(op.options().transpose_B ? element_arg(op.B(), {make_int(0), k0})
                                              : element_arg(op.B(), {k0, make_int(0)}));
      args.push_back(imm(p.N));
      if (!rs) desc(args, p.wgmma_a);
      desc(args, p.wgmma_b);
      args.push_back(imm(1));  // scale_d: D = A B + D
      return g.call(p.instruction, std::move(args));
    });
  }));
  body.push_back(g.call(IntrinsicId::kWgmmaCommitGroup, {}));
  body.push_back(g.call(IntrinsicId::kWgmmaWaitGroup, {imm(0)}));
  return SeqNode::make(std::move(body));
}

/// Element e = r * threads + thread of C (row-major) accumulates A[i, :] . B[:, j] over K.
Stmt lower_simt(GemmLowering& g) {
  const GemmPlan& p = g.plan;
  const GemmOp& op = g.op;
  Buffer c = g.ctx.registers(op.C());
  DataType acc_type = c->dtype;
  int64_t total = p.M * p.N;
  int64_t regs = (total + p.threads - 1) / p.threads;
  return g.loop("r", regs, ForKind::kSerial, [&](const Expr& r) {
    Expr e = r * make_int(p.threads) + g.ctx.thread();
    Expr i = floordiv(e, make_int(p.N)), j = floormod(e, make_int(p.N));
    std::vector<Stmt> body;
    if (op.options().clear_accum)
      body.push_back(StoreNode::make(c, {r}, make_const(acc_type, 0), op.loc()));
    body.push_back(g.loop("k", p.K, ForKind::kSerial, [&](const Expr& k) {
      Expr a = op.options().transpose_A ? BufferLoadNode::make(op.A(), {k, i})
                                        : BufferLoadNode::make(op.A(), {i, k});
      Expr b = op.options().transpose_B ? BufferLoadNode::make(op.B(), {j, k})
                                        : BufferLoadNode::make(op.B(), {k, j});
      Expr sum = BufferLoadNode::make(c, {r}) + cast(acc_type, a) * cast(acc_type, b);
      return StoreNode::make(c, {r}, sum, op.loc());
    }));
    Stmt s = SeqNode::make(std::move(body));
    if (total % p.threads == 0) return s;
    return IfNode::make(e < make_int(total), s, Stmt(), op.loc());
  });
}

}  // namespace

Stmt GemmOp::lower(LowerContext& ctx) const {
  GemmLowering g(*this, ctx, plan_gemm(*this, ctx.kernel()->name, ctx.target(), ctx.threads()));
  require_fragment(g, C_, gemm_c_fragment(g.plan));
  if (g.plan.path == GemmPath::kWgmma) return lower_wgmma(g);
  return g.plan.path == GemmPath::kSimt ? lower_simt(g) : lower_matrix(g);
}

}  // namespace tessel
