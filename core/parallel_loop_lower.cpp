// Lowering of Parallel loops: each thread runs the iterations its loop layout gives it.
#include <functional>
#include <numeric>
#include <optional>

#include "core/access_rewriter.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/parallel_loop.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

/// Rewrites accesses `F[vars]` of fragments laid out exactly like the loop into register
/// accesses `F_regs[reg]`: the iteration's own register, without recomputing the layout.
class OwnRegisters : public AccessRewriter {
 public:
  OwnRegisters(LowerContext& ctx, const Fragment& layout, const std::vector<Var>& vars, Expr reg)
      : ctx_(ctx), layout_(layout), vars_(vars), reg_(std::move(reg)) {}

  std::optional<Access> rewrite(const Buffer& b, const std::vector<Expr>& idx) override {
    if (b->scope != Scope::kFragment || idx.size() != vars_.size()) return std::nullopt;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (!idx[d].same_as(vars_[d])) return std::nullopt;
    }
    const Fragment* f = ctx_.layouts().fragment(b);
    if (!f || !(*f == layout_)) return std::nullopt;
    return Access{ctx_.registers(b), {reg_}};
  }

 private:
  LowerContext& ctx_;
  const Fragment& layout_;
  const std::vector<Var>& vars_;
  Expr reg_;
};

/// True when `s` writes memory other threads can see (shared or global, or an instruction).
bool writes_shared_state(const Stmt& s) {
  bool writes = false;
  for_each_stmt(s, [&](const Stmt& c) {
    if (const auto* st = c.as<StoreNode>())
      writes = writes || !is_register_scope(st->buffer->scope);
    if (c.as<IntrinsicCallNode>()) writes = true;
  });
  return writes;
}

/// True when `s` writes a fragment or local register.
bool writes_registers(const Stmt& s) {
  bool writes = false;
  for_each_stmt(s, [&](const Stmt& c) {
    if (const auto* st = c.as<StoreNode>()) writes = writes || is_register_scope(st->buffer->scope);
  });
  return writes;
}

/// Under a replicated loop partition every replica of an iteration runs it: register writes
/// must happen in every replica (each holds its own copy of a replicated fragment), while
/// writes of shared or global memory happen once. Wraps each largest sub-statement that writes
/// shared state and no register in `if once:`.
class GuardSharedWrites : public StmtMutator {
 public:
  explicit GuardSharedWrites(Expr once) : once_(std::move(once)) {}

  Stmt mutate(const Stmt& s) {
    if (!writes_shared_state(s)) return s;
    if (!writes_registers(s)) return IfNode::make(once_, s, Stmt(), s->loc);
    return visit(s);
  }

 protected:
  Stmt visit_Seq(const SeqNode* op, const Stmt& s) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const Stmt& c : op->stmts) {
      stmts.push_back(mutate(c));
      changed |= !stmts.back().same_as(c);
    }
    return changed ? SeqNode::make(std::move(stmts)) : s;
  }
  Stmt visit_If(const IfNode* op, const Stmt& s) override {
    Stmt t = mutate(op->then_case);
    Stmt e = op->else_case.defined() ? mutate(op->else_case) : op->else_case;
    if (t.same_as(op->then_case) && e.same_as(op->else_case)) return s;
    return IfNode::make(op->cond, t, e, op->loc);
  }
  Stmt visit_For(const ForNode* op, const Stmt& s) override {
    Stmt body = mutate(op->body);
    if (body.same_as(op->body)) return s;
    return ForNode::make(op->var, op->min, op->extent, op->for_kind, body, op->loc, op->pipeline);
  }
  Stmt visit_Let(const LetNode* op, const Stmt& s) override {
    Stmt body = mutate(op->body);
    return body.same_as(op->body) ? s : LetNode::make(op->var, op->value, body, op->loc);
  }

 private:
  Expr once_;
};

Stmt make_loop(const Var& v, int64_t extent, ForKind kind, Stmt body, const SourceLoc& loc) {
  if (extent == 1) return substitute(body, {v}, {make_int(0)});
  return ForNode::make(v, make_int(0), make_int(extent), kind, std::move(body), loc);
}

/// The free partition in closed form: chunk c = lo * threads + t of `vec` elements; `chunk`
/// builds the statement for one chunk from the loop variables' values at its first element and
/// the expression of its first register.
Stmt lower_default(LowerContext& ctx, const std::vector<int64_t>& extents, int64_t vec,
                   const std::function<Stmt(const std::vector<Expr>&, const Expr&)>& chunk,
                   const SourceLoc& loc) {
  const int64_t threads = ctx.threads();
  const int64_t total =
      std::accumulate(extents.begin(), extents.end(), int64_t{1}, std::multiplies<>());
  const int64_t chunks = total / vec, per_thread = (chunks + threads - 1) / threads;
  Var lo = ctx.fresh_var("lo");
  Expr c = per_thread == 1 ? Expr(ctx.thread()) : lo * threads + ctx.thread();
  Expr base = c * vec;
  std::vector<Expr> idx(extents.size());
  const int64_t last = extents.back();
  idx.back() = extents.size() == 1 ? base : floormod(base, make_int(last));
  Expr rest = floordiv(base, make_int(last));
  for (int d = static_cast<int>(extents.size()) - 2; d >= 0; --d) {
    idx[d] = d == 0 ? rest : floormod(rest, make_int(extents[d]));
    rest = floordiv(rest, make_int(extents[d]));
  }
  for (Expr& e : idx) e = ctx.analyzer().simplify(e);
  Stmt inner = chunk(idx, per_thread == 1 ? make_int(0) : lo * vec);
  if (chunks % threads != 0) inner = IfNode::make(c < make_int(chunks), inner, Stmt(), loc);
  return make_loop(lo, per_thread, ForKind::kSerial, inner, loc);
}

/// The free partition of a body written per element: a vectorised loop over each chunk.
Stmt lower_default_elements(LowerContext& ctx, const Fragment& layout, const std::vector<Var>& vars,
                            const std::vector<int64_t>& extents, const Stmt& body, int64_t vec,
                            const SourceLoc& loc) {
  return lower_default(
      ctx, extents, vec,
      [&](std::vector<Expr> idx, const Expr& first) {
        Var v = ctx.fresh_var("v");
        Expr lane = vec > 1 ? Expr(v) : make_int(0);
        idx.back() = idx.back() + lane;
        Stmt own = OwnRegisters(ctx, layout, vars, first + lane).mutate(body);
        Stmt inner = substitute(own, vars, idx);
        if (vec == 1) return inner;
        return ForNode::make(v, make_int(0), make_int(vec), ForKind::kVectorized, inner, loc);
      },
      loc);
}

/// The longest run (a power of two, at most 4) such that registers r..r+run-1 of every thread,
/// r a multiple of run, hold consecutive elements along the last dimension (checked on every
/// point of the inverse layout (thread, register) -> index).
int64_t register_run(const Layout& inverse, size_t rank) {
  const int64_t threads = inverse.input_shape()[0], regs = inverse.input_shape()[1];
  if (threads * regs > (int64_t{1} << 16)) return 1;
  for (int64_t run = 4; run > 1; run /= 2) {
    if (regs % run != 0) continue;
    bool ok = true;
    for (int64_t t = 0; t < threads && ok; ++t) {
      for (int64_t r = 0; r < regs && ok; r += run) {
        std::vector<int64_t> first = inverse.map({t, r});
        for (int64_t i = 1; i < run && ok; ++i) {
          std::vector<int64_t> next = inverse.map({t, r + i});
          for (size_t d = 0; d < next.size(); ++d) {
            int64_t expect = first[d] + (d + 1 == rank ? i : 0);
            ok = ok && next[d] == expect;
          }
        }
      }
    }
    if (ok) return run;
  }
  return 1;
}

/// A loop over the thread's registers through the layout's inverse, or nullopt.
std::optional<Stmt> lower_by_inverse(LowerContext& ctx, const Fragment& layout,
                                     const std::vector<Var>& vars, const Stmt& body,
                                     const SourceLoc& loc) {
  Layout inverse;
  try {
    inverse = layout.inverse();
  } catch (const UserError&) {
    return std::nullopt;
  }
  // Registers that hold runs of consecutive elements (the two columns of an mma accumulator
  // pair) are walked as one vectorised access.
  const int64_t vec = register_run(inverse, vars.size());
  Var lo = ctx.fresh_var("l"), v = ctx.fresh_var("v");
  Expr l = vec > 1 ? lo * vec + v : Expr(lo);
  std::vector<Expr> out = inverse.forward({ctx.thread(), l});
  std::vector<Expr> idx(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(vars.size()));
  Stmt own = OwnRegisters(ctx, layout, vars, l).mutate(body);
  Stmt inner = substitute(own, vars, idx);
  if (layout.replicate() > 1) inner = GuardSharedWrites(out.back() == make_int(0)).mutate(inner);
  if (vec > 1)
    inner = ForNode::make(v, make_int(0), make_int(vec), ForKind::kVectorized, inner, loc);
  Stmt loop = make_loop(lo, layout.local_extent() / vec, ForKind::kSerial, inner, loc);
  if (layout.thread_extent() < ctx.threads()) {
    loop = IfNode::make(ctx.thread() < make_int(layout.thread_extent()), loop, Stmt(), loc);
  }
  return loop;
}

/// Every point of the box, guarded by "this thread holds it".
Stmt lower_by_scan(LowerContext& ctx, const Fragment& layout, const std::vector<Var>& vars,
                   const std::vector<int64_t>& extents, const Stmt& loop_body,
                   const SourceLoc& loc) {
  std::vector<Expr> point(vars.begin(), vars.end());
  const int64_t reps = layout.replicate();
  if (reps > 256) {
    user_error("kernel '" + ctx.kernel()->name + "' at " + loc.str() + ": a loop partition " +
               "replicated " + std::to_string(reps) + " times cannot be walked by ownership (at " +
               "most 256): " + layout.to_string() +
               "; fix: T.annotate_layout the fragment with "
               "an invertible layout");
  }
  Expr owns, first;
  for (int64_t r = 0; r < reps; ++r) {
    Expr mine = layout.forward(point, make_int(r)).first == ctx.thread();
    owns = owns.defined() ? (owns || mine) : mine;
    if (r == 0) first = mine;
  }
  Stmt body = reps > 1 ? GuardSharedWrites(first).mutate(loop_body) : loop_body;
  Stmt s = IfNode::make(owns, body, Stmt(), loc);
  for (int d = static_cast<int>(vars.size()) - 1; d >= 0; --d) {
    s = ForNode::make(vars[d], make_int(0), make_int(extents[d]), ForKind::kSerial, s, loc);
  }
  return s;
}

}  // namespace

std::optional<int64_t> free_partition_width(const Fragment& layout,
                                            const std::vector<int64_t>& extents, int64_t threads) {
  // Structurally, or (a derived fragment prints the same map simplified) by evaluation.
  const bool small = layout.input_size() * layout.replicate() <= (int64_t{1} << 16);
  for (int64_t vec = 16; vec >= 1; vec /= 2) {
    if (extents.back() % vec != 0) continue;
    Fragment d = default_loop_layout(extents, threads, vec);
    if (layout == d || (small && layout.replicate() == 1 && layout.input_shape() == extents &&
                        equal_by_evaluation(layout, d))) {
      return vec;
    }
  }
  return std::nullopt;
}

Stmt lower_over_layout(LowerContext& ctx, const Fragment& layout, const std::vector<Var>& vars,
                       const std::vector<int64_t>& extents, const Stmt& body,
                       const SourceLoc& loc) {
  if (layout.thread_extent() > ctx.threads()) {
    user_error("kernel '" + ctx.kernel()->name + "' at " + loc.str() +
               ": the loop "
               "partition needs " +
               std::to_string(layout.thread_extent()) + " threads but the block has " +
               std::to_string(ctx.threads()) + ": " + layout.to_string() +
               "; fix: raise threads= in T.Kernel or shrink the tile");
  }
  if (auto vec = free_partition_width(layout, extents, ctx.threads())) {
    return lower_default_elements(ctx, layout, vars, extents, body, *vec, loc);
  }
  if (auto s = lower_by_inverse(ctx, layout, vars, body, loc)) return *s;
  return lower_by_scan(ctx, layout, vars, extents, body, loc);
}

std::optional<Stmt> lower_vector_chunks(
    LowerContext& ctx, const Fragment& layout, const std::vector<int64_t>& extents,
    const std::function<Stmt(const std::vector<Expr>& first, int64_t vec)>& chunk,
    const SourceLoc& loc) {
  auto vec = free_partition_width(layout, extents, ctx.threads());
  if (!vec || *vec == 1) return std::nullopt;
  return lower_default(
      ctx, extents, *vec,
      [&](const std::vector<Expr>& idx, const Expr&) { return chunk(idx, *vec); }, loc);
}

namespace {

/// Element operators in a loop body (a scalar T.atomic_add) become their per-iteration
/// statements.
class LowerElements : public StmtMutator {
 public:
  explicit LowerElements(LowerContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt visit_TileOpCall(const TileOpCallNode* op, const Stmt&) override {
    return op->op->lower_element(ctx_);
  }

 private:
  LowerContext& ctx_;
};

}  // namespace

Stmt ParallelLoop::lower(LowerContext& ctx) const {
  const Fragment* layout = ctx.layouts().loop(key_);
  if (!layout) internal_error(origin_ + " has no loop layout after inference");
  for (size_t k = 0; k < vars_.size(); ++k) ctx.analyzer().bind(vars_[k], 0, extents_[k]);
  return lower_over_layout(ctx, *layout, vars_, extents_, LowerElements(ctx).mutate(body_), loc_);
}

}  // namespace tessel
