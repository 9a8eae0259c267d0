// T.reduce_* at thread level. The destination fragment is derived from the source's: element
// `key` lives in exactly the threads that hold some source element of row `key`. Lowering then
// (1) folds each thread's own source elements into registers laid out like the destination,
// (2) combines the threads of a row inside a warp with shfl_xor butterflies over the lane bits
// that tell them apart, (3) combines across warps through a shared workspace, and (4) writes the
// destination. When a row's threads are not a group of thread bits (odd partitions), every
// thread holds the whole destination and step 2-3 become one pass through shared memory.
#include <bit>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "core/op_reduce.h"
#include "core/parallel_loop.h"

namespace tessel {

namespace {

std::vector<int64_t> fragment_shape(const Buffer& b, const TileOp& op) {
  std::vector<int64_t> shape;
  for (const Expr& e : b->shape) {
    auto c = as_const_int(e);
    if (!c) user_error(op.describe() + ": '" + b->name + "' needs a constant shape");
    shape.push_back(*c);
  }
  return shape;
}

void check_scopes(const ReduceOp& op) {
  for (const Buffer* b : {&op.src(), &op.dst()}) {
    if ((*b)->scope != Scope::kFragment) {
      user_error(op.describe() + ": '" + (*b)->name + "' is in " + scope_name((*b)->scope) +
                 " memory; at thread level reductions run on fragments — copy it into a "
                 "T.alloc_fragment buffer first");
    }
  }
}

/// The loop variables of the source box and the destination index (source index minus `dim`).
struct Rows {
  std::vector<Var> vars;
  std::vector<Expr> key;
};

Rows rows_of(const ReduceOp& op) {
  Rows r;
  for (const std::string& n : default_iter_var_names(op.src()->ndim())) r.vars.emplace_back(n);
  for (size_t d = 0; d < r.vars.size(); ++d) {
    if (static_cast<int>(d) != op.dim()) r.key.push_back(r.vars[d]);
  }
  if (r.key.empty()) r.key.push_back(make_int(0));  // a 1-d source reduces to one element
  return r;
}

Expr identity(ReduceKind kind, DataType t) {
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kAbsSum:
    case ReduceKind::kAbsMax:
      return make_const(t, 0);
    case ReduceKind::kMax:
      return make_const(t, t.is_float() ? -std::numeric_limits<double>::infinity() : min_value(t));
    case ReduceKind::kMin:
      return make_const(t, t.is_float() ? std::numeric_limits<double>::infinity() : max_value(t));
  }
  return make_const(t, 0);
}

Expr combine(ReduceKind kind, const Expr& a, const Expr& b) {
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kAbsSum:
      return a + b;
    case ReduceKind::kMax:
    case ReduceKind::kAbsMax:
      return max(a, b);
    case ReduceKind::kMin:
      return min(a, b);
  }
  return a + b;
}

/// How the destination is held: by a group of thread bits per element (`group`), or by every
/// thread (`all_threads`).
struct Holding {
  bool all_threads = false;
  int64_t group = 0;
};

/// nullopt when `dst` is neither fully replicated nor held, for every element, by one coset of
/// the same group of thread bits (first holder XOR every combination of the group's bits).
std::optional<Holding> holding(const Fragment& dst, int64_t threads) {
  bool all = true, coset = true;
  std::optional<int64_t> group;
  for_each_index(dst.input_shape(), [&](const std::vector<int64_t>& key) {
    std::vector<int64_t> ts = holders(dst, key);
    all = all && static_cast<int64_t>(ts.size()) == threads;
    int64_t g = 0;
    for (int64_t t : ts) g |= t ^ ts.front();
    // ts lies in ts[0] ^ span(g); it is all of it when the sizes agree.
    bool full = static_cast<int64_t>(ts.size()) == (int64_t{1} << std::popcount(uint64_t(g)));
    if (!full || (group && *group != g)) coset = false;
    group = g;
  });
  if (all) return Holding{true, 0};
  if (coset) return Holding{false, group.value_or(0)};
  return std::nullopt;
}

/// A source element whose owning thread does not hold the destination element of its row:
/// its partial would go to a thread that never combines it (nullopt when there is none). The
/// shuffles and the workspace combine partials only among the holders of each destination
/// element, so the source's owners must be among them.
std::optional<std::string> unheld_source(const ReduceOp& op, const Fragment& S, const Fragment& D) {
  std::optional<std::string> found;
  std::map<std::vector<int64_t>, std::set<int64_t>> held;
  for_each_index(S.input_shape(), [&](const std::vector<int64_t>& idx) {
    if (found) return;
    std::vector<int64_t> key;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (static_cast<int>(d) != op.dim()) key.push_back(idx[d]);
    }
    if (key.empty()) key.push_back(0);
    auto it = held.find(key);
    if (it == held.end()) {
      std::vector<int64_t> h = holders(D, key);
      it = held.emplace(key, std::set<int64_t>(h.begin(), h.end())).first;
    }
    int64_t owner = S.map_fragment(idx, 0).first;
    if (it->second.count(owner)) return;
    auto list = [](const std::vector<int64_t>& v) {
      std::string s;
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s;
    };
    found = "thread " + std::to_string(owner) + " holds " + op.src()->name + "[" + list(idx) +
            "] but not " + op.dst()->name + "[" + list(key) + "] (held by thread " +
            std::to_string(*it->second.begin()) + (it->second.size() > 1 ? ", ..." : "") + ")";
  });
  return found;
}

/// The layout the reduction gives its destination (as infer_layout derives it from the source),
/// or every thread holding everything when no thread-bit group holds each row.
Fragment own_layout(const ReduceOp& op, const Fragment& S, const std::vector<int64_t>& dst_shape,
                    int64_t threads) {
  Rows rows = rows_of(op);
  std::string why;
  if (auto f = derive_fragment(S, rows.vars, rows.key, dst_shape, &why)) {
    if (holding(*f, threads)) return *f;
  }
  return Fragment::fully_replicated(dst_shape, threads);
}

}  // namespace

void ReduceOp::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  if (level == InferLevel::kStrict) return;
  check_scopes(*this);
  const Fragment* src = ctx.fragment(src_);
  if (!src || ctx.fragment(dst_)) return;
  Rows rows = rows_of(*this);
  std::string why;
  std::vector<int64_t> dst_shape = fragment_shape(dst_, *this);
  if (src->replicate() == 1) {
    if (auto f = derive_fragment(*src, rows.vars, rows.key, dst_shape, &why)) {
      ctx.set_fragment(dst_, *f, describe() + " (" + infer_level_name(level) + ")");
      return;
    }
  }
  ctx.set_fragment(
      dst_, Fragment::fully_replicated(dst_shape, ctx.threads()),
      describe() + " (every thread: " + (why.empty() ? "replicated source" : why) + ")");
}

Stmt ReduceOp::lower(LowerContext& ctx) const {
  check_scopes(*this);
  const Fragment& S = *ctx.layouts().fragment(src_);
  const Fragment& D_dst = *ctx.layouts().fragment(dst_);
  if (S.replicate() != 1) {
    user_error(describe() + ": cannot reduce '" + src_->name + "' laid out as " + S.to_string() +
               ": a replicated source would count its replicas more than once; fix: reduce a "
               "fragment that is not replicated (drop the T.annotate_layout of '" +
               src_->name + "')");
  }
  // Partials are combined in a layout that follows the source: the destination's own when it
  // does (its holders include every owner of a source element of their row), else the layout
  // the reduction would have given it, converted into the destination's at the end through a
  // shared staging vector (the destination was laid out by a fill, a loop or another reduce).
  const std::vector<int64_t> dst_shape = fragment_shape(dst_, *this);
  auto dst_hold = holding(D_dst, ctx.threads());
  const bool follows = dst_hold && (dst_hold->all_threads || !unheld_source(*this, S, D_dst));
  const Fragment D = follows ? D_dst : own_layout(*this, S, dst_shape, ctx.threads());
  auto hold = holding(D, ctx.threads());
  if (!hold) internal_error(describe() + ": the combining layout is not held by thread groups");
  const SourceLoc& loc = this->loc();
  const DataType t = dst_->dtype;
  const int64_t regs = D.local_extent();
  Buffer acc = ctx.temporary(dst_->name + "_acc", {make_int(regs)}, t, Scope::kLocal);
  auto each_register = [&](const std::function<Stmt(const Var&)>& body) {
    Var r = ctx.fresh_var("r");
    return ForNode::make(r, make_int(0), make_int(regs), ForKind::kSerial, body(r), loc);
  };
  auto acc_at = [&](const Expr& r) { return BufferLoadNode::make(acc, {r}); };
  auto set_acc = [&](const Expr& r, Expr v) {
    return StoreNode::make(acc, {r}, std::move(v), loc);
  };
  std::vector<Stmt> out;
  out.push_back(each_register([&](const Var& r) { return set_acc(r, identity(kind_, t)); }));

  // (1) This thread's own source elements.
  Rows rows = rows_of(*this);
  Expr reg = D.forward(rows.key).second;
  Expr x = BufferLoadNode::make(src_, std::vector<Expr>(rows.vars.begin(), rows.vars.end()));
  if (x.dtype() != t) x = cast(t, x);
  if (kind_ == ReduceKind::kAbsSum || kind_ == ReduceKind::kAbsMax) x = abs(x);
  out.push_back(lower_over_layout(ctx, S, rows.vars, fragment_shape(src_, *this),
                                  set_acc(reg, combine(kind_, acc_at(reg), x)), loc));

  // (2) + (3) Across the threads that hold one destination element.
  const Var& thread = ctx.thread();
  const int64_t warp_bits = std::countr_zero(static_cast<uint64_t>(ctx.target().warp_size));
  const int64_t threads = ctx.threads();
  auto shuffles = [&](int64_t lane_bits) {  // butterflies: acc op= acc of lane ^ (1 << bit)
    for (int64_t bit = 0; bit < warp_bits; ++bit) {
      if (!((lane_bits >> bit) & 1)) continue;
      Expr mask = make_int(int64_t{1} << bit);
      out.push_back(each_register([&](const Var& r) {
        return set_acc(r, combine(kind_, acc_at(r), call(Builtin::kShflXor, {acc_at(r), mask})));
      }));
    }
  };
  if (hold->all_threads || hold->group >> warp_bits) {
    // Register-major ([regs, threads]): a warp's 32 lanes store and load 32 consecutive words
    // of one register's row, free of bank conflicts (thread-major rows of `regs` words put
    // lanes `32 / regs` apart in one bank).
    Buffer ws =
        ctx.temporary(dst_->name + "_red", {make_int(regs), make_int(threads)}, t, Scope::kShared);
    auto ws_at = [&](Expr who, const Expr& r) {
      return BufferLoadNode::make(ws, {r, std::move(who)});
    };
    int64_t lanes = hold->all_threads ? 0 : hold->group & ((int64_t{1} << warp_bits) - 1);
    shuffles(lanes);  // inside the warp first
    out.push_back(each_register([&](const Var& r) {
      return StoreNode::make(ws, {r, thread}, acc_at(r), loc);
    }));
    if (hold->all_threads) {
      Var u = ctx.fresh_var("u");
      out.push_back(each_register([&](const Var& r) {
        return SeqNode::make(
            {set_acc(r, identity(kind_, t)),
             ForNode::make(u, make_int(0), make_int(threads), ForKind::kSerial,
                           set_acc(r, combine(kind_, acc_at(r), ws_at(u, r))), loc)});
      }));
    } else {
      int64_t warps = hold->group >> warp_bits;  // the warp bits of the group
      // With a thread count that is not a multiple of the group's span, a thread that holds
      // nothing may have partners past the block: it skips them (holders never do).
      const int64_t span = int64_t{1} << std::bit_width(static_cast<uint64_t>(hold->group));
      for (int64_t m = warps; m > 0; m = (m - 1) & warps) {  // every non-empty subset
        Expr partner = thread ^ make_int(m << warp_bits);
        Stmt step = each_register(
            [&](const Var& r) { return set_acc(r, combine(kind_, acc_at(r), ws_at(partner, r))); });
        if (threads % span != 0)
          step = IfNode::make(partner < make_int(threads), step, Stmt(), loc);
        out.push_back(step);
      }
    }
  } else {
    shuffles(hold->group);
  }

  // (4) The destination.
  if (!follows) {
    // Through shared memory: one holder of each element in D writes it, then every holder in
    // the destination's layout reads it (the barrier pass orders the two).
    int64_t size = 1;
    for (int64_t e : dst_shape) size *= e;
    Buffer stage = ctx.temporary(dst_->name + "_xfer", {make_int(size)}, t, Scope::kShared);
    auto flat = [&](const std::vector<Expr>& key) {
      Expr f = key[0];
      for (size_t d = 1; d < key.size(); ++d) f = f * make_int(dst_shape[d]) + key[d];
      return f;
    };
    std::vector<Var> put_vars, get_vars;
    for (const std::string& n : default_iter_var_names(dst_->ndim())) {
      put_vars.push_back(ctx.fresh_var(n));
      get_vars.push_back(ctx.fresh_var(n));
    }
    std::vector<Expr> put_key(put_vars.begin(), put_vars.end());
    std::vector<Expr> get_key(get_vars.begin(), get_vars.end());
    Stmt put = StoreNode::make(stage, {flat(put_key)}, acc_at(D.forward(put_key).second), loc);
    out.push_back(lower_over_layout(ctx, D, put_vars, dst_shape, put, loc));
    Expr v = BufferLoadNode::make(stage, {flat(get_key)});
    if (!clear_) v = combine(kind_, BufferLoadNode::make(dst_, get_key), v);
    out.push_back(lower_over_layout(ctx, D_dst, get_vars, dst_shape,
                                    StoreNode::make(dst_, get_key, v, loc), loc));
  } else if (clear_) {
    Buffer dst_regs = ctx.registers(dst_);
    out.push_back(each_register(
        [&](const Var& r) { return StoreNode::make(dst_regs, {r}, acc_at(r), loc); }));
  } else {
    std::vector<Var> key_vars;
    for (const std::string& n : default_iter_var_names(dst_->ndim())) key_vars.emplace_back(n);
    std::vector<Expr> key(key_vars.begin(), key_vars.end());
    Expr r = D.forward(key).second;
    Stmt body =
        StoreNode::make(dst_, key, combine(kind_, BufferLoadNode::make(dst_, key), acc_at(r)), loc);
    out.push_back(lower_over_layout(ctx, D, key_vars, fragment_shape(dst_, *this), body, loc));
  }
  return SeqNode::make(std::move(out));
}

}  // namespace tessel
