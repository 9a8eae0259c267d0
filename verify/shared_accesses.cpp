// Collects the warp-wide shared-memory accesses of a thread-level kernel as BankAccesses over
// symbolic loop variables, warp index and lane (see shared_accesses.h for the rules).
#include "verify/shared_accesses.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/instruction_family.h"
#include "core/intrinsics.h"
#include "core/printer.h"
#include "verify/kernel_domain.h"
#include "verify/proof_session.h"

namespace tessel {

namespace {

bool is_shared(const Buffer& b) {
  return b->scope == Scope::kShared || b->scope == Scope::kSharedDyn;
}

/// True when `e` reads memory, calls a function or computes with floats: a value the proofs
/// cannot reason about.
bool depends_on_data(const Expr& e) {
  bool found = false;
  pre_order_visit(e, [&](const Expr& x) {
    found |=
        x.as<BufferLoadNode>() != nullptr || x.kind() == ExprKind::kCall || x.dtype().is_float();
  });
  return found;
}

/// "A_shared[i, j]" in IR syntax.
std::string access_text(const Buffer& b, const std::vector<Expr>& indices) {
  std::string s = b->name + "[";
  for (size_t d = 0; d < indices.size(); ++d) s += (d ? ", " : "") + to_string(indices[d]);
  return s + "]";
}

/// What holds at one statement: the symbols' ranges, the conditions, the vectorized loop.
struct Enclosing {
  VarDomain domain;
  std::vector<Expr> lane_guards;        ///< conditions that mention the lane
  std::vector<std::string> guard_text;  ///< every condition kept, in IR syntax
  bool guard_dropped = false;
  Var vec_var;
  int64_t vec_extent = 0;
  bool vec_guarded = false;  ///< a condition inside the vectorized loop mentions its variable
};

class Collector {
 public:
  Collector(const Kernel& kernel, const Target& target, unsigned timeout_ms)
      : kernel_(kernel), target_(target), timeout_ms_(timeout_ms) {}

  std::vector<SharedAccess> run() {
    Enclosing top;
    const int ws = target_.warp_size;
    const int warps = (kernel_->threads + ws - 1) / ws;
    // The thread index is rewritten to warp * ws + lane, so its own range drops out.
    top.domain = kernel_domain(kernel_);
    top.domain.bound(warp_, 0, warps - 1);
    thread_ = warp_ * make_int(ws) + lane_;
    if (kernel_->threads % ws != 0) top.lane_guards.push_back(thread_ < make_int(kernel_->threads));
    walk(kernel_->body, top);
    return std::move(found_);
  }

 private:
  Expr rewrite(const Expr& e) const {
    return substitute(e, [&](const Var& v) -> Expr {
      if (v.same_as(kernel_->thread_var)) return thread_;
      auto it = lets_.find(v.get());
      return it == lets_.end() ? Expr() : it->second;
    });
  }

  void walk(const Stmt& s, const Enclosing& scope) {
    if (!s.defined()) return;
    if (const auto* seq = s.as<SeqNode>()) {
      for (const Stmt& c : seq->stmts) walk(c, scope);
    } else if (const auto* loop = s.as<ForNode>()) {
      walk_for(*loop, scope);
    } else if (const auto* branch = s.as<IfNode>()) {
      scan(branch->cond, scope, s);
      walk(branch->then_case, guarded(scope, branch->cond));
      walk(branch->else_case, guarded(scope, !branch->cond));
    } else if (const auto* let = s.as<LetNode>()) {
      scan(let->value, scope, s);
      lets_[let->var.get()] = rewrite(let->value);
      walk(let->body, scope);
    } else if (const auto* store = s.as<StoreNode>()) {
      for (const Expr& i : store->indices) scan(i, scope, s);
      scan(store->value, scope, s);
      if (is_shared(store->buffer)) {
        add(store->buffer, store->indices, scope, s, {"store", 0, 0, true, false});
      }
    } else if (const auto* call = s.as<IntrinsicCallNode>()) {
      walk_intrinsic(*call, scope, s);
    } else if (const auto* alloc = s.as<AllocNode>()) {
      if (alloc->init.defined()) scan(alloc->init, scope, s);
    }
  }

  void walk_for(const ForNode& loop, const Enclosing& scope) {
    Enclosing inner = scope;
    std::optional<int64_t> lo = as_const_int(loop.min), n = as_const_int(loop.extent);
    if (loop.for_kind == ForKind::kVectorized && lo == 0 && n && *n >= 1 && scope.vec_extent == 0) {
      inner.vec_var = loop.var;
      inner.vec_extent = *n;
      inner.domain.bound(loop.var, 0, *n - 1);
    } else if (lo && n) {
      if (*n < 1) return;  // the body never runs
      inner.domain.bound(loop.var, *lo, *lo + *n - 1);
    } else {
      Expr min = rewrite(loop.min), end = rewrite(loop.min + loop.extent);
      if (depends_on_data(min) || depends_on_data(end)) {
        inner.guard_dropped = true;  // the variable ranges over its dtype
      } else {
        IndexBounds bounds(scope.domain);
        IntBound a = bounds.bound(min), b = bounds.bound(end - make_int(1));
        if (a.min != IntBound::kNegInf && b.max != IntBound::kPosInf) {
          inner.domain.bound(loop.var, a.min, b.max);
        }
        inner = guarded(inner, loop.var >= loop.min && loop.var < loop.min + loop.extent);
      }
    }
    walk(loop.body, inner);
  }

  /// `scope` with `cond` (IR syntax, unrewritten) assumed true.
  Enclosing guarded(const Enclosing& scope, const Expr& cond) const {
    Enclosing inner = scope;
    Expr c = rewrite(cond);
    if (depends_on_data(c)) {
      inner.guard_dropped = true;
      return inner;
    }
    inner.guard_text.push_back(to_string(cond));
    if (scope.vec_extent > 0 && uses_var(c, scope.vec_var)) inner.vec_guarded = true;
    if (uses_var(c, lane_)) {
      inner.lane_guards.push_back(c);
    } else {
      inner.domain.assume(c);
    }
    return inner;
  }

  void walk_intrinsic(const IntrinsicCallNode& call, const Enclosing& scope, const Stmt& s) {
    const IntrinsicInfo& info = intrinsic_info(call.intrinsic);
    for (size_t k = 0; k < call.args.size() && k < info.operands.size(); ++k) {
      const IntrinsicArg& arg = call.args[k];
      for (const Expr& i : arg.indices) scan(i, scope, s);
      if (arg.value.defined()) scan(arg.value, scope, s);
      if (!arg.buffer.defined() || !is_shared(arg.buffer)) continue;
      // Atomics on shared memory serialise their lanes: their home declares no bank question.
      std::optional<OperandMemoryAccess> a = info.home->memory_access(info, k);
      if (a && a->banks) {
        add(arg.buffer, arg.indices, scope, s,
            {info.name, a->bytes, a->lanes, info.operands[k].written, a->ldmatrix});
      }
    }
  }

  /// Every shared-memory load inside `e`. The arms of a T.if_then_else are evaluated element by
  /// element under their condition (a `?:` in the generated code, a per-element mask at thread
  /// level): when the condition mentions the vectorized loop's variable, their loads are one
  /// request per element, not one vector.
  void scan(const Expr& e, const Enclosing& scope, const Stmt& s) {
    if (!e.defined()) return;
    if (const auto* select = e.as<SelectNode>()) {
      scan(select->cond, scope, s);
      Enclosing arms = scope;
      if (scope.vec_extent > 0 && uses_var(rewrite(select->cond), scope.vec_var)) {
        arms.vec_guarded = true;
      }
      scan(select->t, arms, s);
      scan(select->f, arms, s);
      return;
    }
    const auto* load = e.as<BufferLoadNode>();
    if (load && is_shared(load->buffer)) {
      add(load->buffer, load->indices, scope, s, {"load", 0, 0, false, false});
    }
    for (const Expr& child : expr_children(e)) scan(child, scope, s);
  }

  /// The row-major offset of `index` in `b` (strides may be symbolic).
  static Expr linear(const Buffer& b, const std::vector<Expr>& index) {
    Expr off = index[0];
    for (size_t d = 1; d < index.size(); ++d) off = off * b->shape[d] + index[d];
    return off;
  }

  /// True when lane requests over the vectorized loop are one contiguous, aligned vector:
  /// off(v) == off(0) + v and off(0) % V == 0 for every point of the domain.
  bool contiguous(const Expr& off, const Enclosing& scope, const Expr& active) const {
    Expr off0 = substitute(
        off, [&](const Var& v) -> Expr { return v.same_as(scope.vec_var) ? make_int(0) : Expr(); });
    Expr violated =
        (off != off0 + scope.vec_var) || floormod(off0, make_int(scope.vec_extent)) != make_int(0);
    Expr goal = active.defined() ? (active && violated) : violated;
    VarDomain dom = scope.domain;
    dom.bound(lane_, 0, target_.warp_size - 1);
    try {
      ProofSession session(dom, {}, {goal}, timeout_ms_);
      return session.check(session.shared().boolean(goal)) == z3::unsat;
    } catch (const UserError&) {
      return false;  // unbounded arithmetic: treat the iterations as separate requests
    }
  }

  /// How one site accesses shared memory.
  struct Request {
    std::string kind;  ///< "load", "store", the instruction's name
    int width;         ///< bytes per lane; 0: the element size (or the vectorized run)
    int lanes;         ///< lanes that give addresses (ldmatrix.x1: 8); 0: all
    bool write;
    bool ldmatrix;
  };

  void add(const Buffer& b, const std::vector<Expr>& indices, const Enclosing& scope, const Stmt& s,
           const Request& req) {
    const int width = req.width, lanes = req.lanes;
    const bool write = req.write, ldmatrix = req.ldmatrix;
    SharedAccess a;
    a.kind = req.kind;
    a.index_text = access_text(b, indices);
    a.site = s->loc.str();
    a.guard_dropped = scope.guard_dropped;
    for (size_t g = 0; g < scope.guard_text.size(); ++g) {
      a.guard += (g ? " and " : "") + scope.guard_text[g];
    }
    std::vector<Expr> index;
    for (const Expr& i : indices) index.push_back(rewrite(i));
    Expr active;
    for (const Expr& g : scope.lane_guards) active = active.defined() ? (active && g) : g;
    if (lanes > 0 && lanes < target_.warp_size) {
      Expr some = lane_ < make_int(lanes);
      active = active.defined() ? (active && some) : some;
    }
    BankAccess& acc = a.access;
    acc.buffer = b->name;
    acc.dtype = b->dtype;
    acc.lane = lane_;
    acc.active = active;
    acc.ldmatrix = ldmatrix;
    acc.write = write;
    acc.width_bytes = width;
    a.domain = scope.domain;
    for (const Expr& i : index) {
      if (depends_on_data(i)) a.not_provable = "the index depends on loaded data";
    }
    std::vector<int64_t> shape;
    for (const Expr& e : b->shape) {
      std::optional<int64_t> c = as_const_int(e);
      if (c) shape.push_back(*c);
    }
    if (a.not_provable.empty() && scope.vec_extent > 0 && width == 0) {
      vectorize(a, b, index, scope);
      index = a.access.index;
    }
    if (shape.size() == b->shape.size()) {
      acc.layout = Layout::row_major(shape);
      acc.index = index;
    } else {  // a symbolic extent: one dimension of offsets
      acc.layout = Layout::row_major({int64_t{1} << 32});
      acc.index = {linear(b, index)};
    }
    a.domain = relevant(a.domain, acc);
    describe_symbols(a);
    a.key = b->name + "|" + std::to_string(acc.access_bytes()) + (ldmatrix ? "|ldmatrix" : "") +
            (write && target_.banks.vendor == BankVendor::kAmd ? "|write" : "") + "|" +
            (active.defined() ? to_string(active) : "") + "|" + a.symbols + "|" + a.guard;
    for (const Expr& i : acc.index) a.key += "|" + to_string(i);
    if (keys_.insert(a.key).second) found_.push_back(std::move(a));
  }

  /// Inside `for v in T.vectorized(V)`: one request of V elements at v = 0 when contiguous,
  /// else one element per iteration (v stays a symbol).
  void vectorize(SharedAccess& a, const Buffer& b, const std::vector<Expr>& index,
                 const Enclosing& scope) {
    a.access.index = index;
    bool uses_v = false;
    for (const Expr& i : index) uses_v |= uses_var(i, scope.vec_var);
    if (!uses_v) return;
    int bytes = std::max(1, b->dtype.storage_bits() / 8);
    int64_t vbytes = scope.vec_extent * bytes;
    bool legal = b->dtype.storage_bits() % 8 == 0 &&
                 (vbytes == 2 || vbytes == 4 || vbytes == 8 || vbytes == 16);
    if (!legal || scope.vec_guarded || !contiguous(linear(b, index), scope, a.access.active))
      return;
    for (Expr& i : a.access.index) {
      i = substitute(
          i, [&](const Var& v) -> Expr { return v.same_as(scope.vec_var) ? make_int(0) : Expr(); });
    }
    a.access.width_bytes = static_cast<int>(vbytes);
    a.vector = static_cast<int>(scope.vec_extent);
  }

  /// `domain` cut to the symbols the access mentions and the facts that constrain them (so a
  /// counterexample names only what matters).
  static VarDomain relevant(const VarDomain& domain, const BankAccess& acc) {
    std::vector<Expr> exprs = acc.index;
    if (acc.active.defined()) exprs.push_back(acc.active);
    auto mentions = [](const std::vector<Expr>& es, const Var& v) {
      return std::any_of(es.begin(), es.end(), [&](const Expr& e) { return uses_var(e, v); });
    };
    std::vector<bool> fact_kept(domain.constraints.size(), false);
    for (bool grew = true; grew;) {  // facts about kept symbols bring their other symbols along
      grew = false;
      for (size_t f = 0; f < domain.constraints.size(); ++f) {
        if (fact_kept[f]) continue;
        for (const auto& [v, r] : domain.ranges) {
          if (mentions(exprs, v) && uses_var(domain.constraints[f], v)) {
            fact_kept[f] = grew = true;
            exprs.push_back(domain.constraints[f]);
            break;
          }
        }
      }
    }
    VarDomain out;
    for (const auto& [v, r] : domain.ranges) {
      if (mentions(exprs, v)) out.ranges.emplace_back(v, r);
    }
    for (size_t f = 0; f < domain.constraints.size(); ++f) {
      if (fact_kept[f]) out.constraints.push_back(domain.constraints[f]);
    }
    return out;
  }

  /// "k < 16, ko < 2, warp < 4": the ranges of the symbols the access mentions (a symbol with
  /// one value is left out).
  void describe_symbols(SharedAccess& a) const {
    std::vector<Expr> exprs = a.access.index;
    if (a.access.active.defined()) exprs.push_back(a.access.active);
    std::vector<std::pair<Var, IntBound>> kept;
    for (const auto& [v, r] : a.domain.ranges) {
      bool used = false;
      for (const Expr& e : exprs) used |= uses_var(e, v);
      if (used && r.min != r.max) kept.emplace_back(v, r);
    }
    // The warp last: loops read outside-in, then the warp.
    std::stable_partition(kept.begin(), kept.end(),
                          [&](const auto& p) { return !p.first.same_as(warp_); });
    for (size_t k = 0; k < kept.size(); ++k) {
      const auto& [v, r] = kept[k];
      a.symbols += (k ? ", " : "");
      if (r.min != 0) a.symbols += std::to_string(r.min) + " <= ";
      a.symbols += v.name() + " < " + std::to_string(r.max + 1);
    }
  }

  const Kernel& kernel_;
  const Target& target_;
  unsigned timeout_ms_;
  Var lane_ = Var("lane");
  Var warp_ = Var("warp");
  Expr thread_;
  std::map<const ExprNode*, Expr> lets_;
  std::set<std::string> keys_;
  std::vector<SharedAccess> found_;
};

}  // namespace

std::vector<SharedAccess> collect_shared_accesses(const Kernel& kernel, const Target& target,
                                                  unsigned timeout_ms) {
  return Collector(kernel, target, timeout_ms).run();
}

}  // namespace tessel
