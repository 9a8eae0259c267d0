// Pass split_loops: a serial loop whose selects depend on its variable k through affine
// comparisons (FlashAttention's causal and sequence-end masks) is split by index range into a
// prefix, a middle and a suffix, and in the prefix and suffix every such comparison the analyzer
// proves constant is replaced by its value (simplify_indices then folds the selects).
//
// Soundness. Splitting `for k in [lo, hi)` into `[lo, P)`, `[P, Q)`, `[Q, hi)` (lo <= P <= Q <= hi)
// runs the same iterations in the same order, whatever the body (barriers included). A
// comparison `a < b` (<=, >, >=) in which k appears only under +, - and multiplication by
// constants, whose operands provably do not wrap over the loop's range, is for every fixed value
// of everything else a half-line in k; it is therefore constant on an interval [A, B] when the
// analyzer proves it has the same value at k = A and at k = B for all values of the other
// variables (under A <= B). The split points only choose where to look; each replacement rests
// on such a proof, over an interval that covers the part (see `constant_on`).
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/analyzer.h"
#include "core/expr_functor.h"
#include "core/int_eval.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "core/vector_copy.h"

namespace tessel {

namespace {

Expr bool_const(bool value) { return IntImmNode::make(DataType::boolean(), value ? 1 : 0); }

const CompareNode* as_ordering(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE: {
      const auto* c = static_cast<const CompareNode*>(e.get());
      if (!c->a.dtype().is_integral() || c->a.dtype().is_bool()) return nullptr;
      if (!c->b.dtype().is_integral() || c->b.dtype().is_bool()) return nullptr;
      return c;
    }
    default:
      return nullptr;
  }
}

/// True when `k` appears in `e` only under +, - and multiplication by a constant.
bool affine_in(const Expr& e, const Var& k) {
  if (!uses_var(e, k) || e.as<VarNode>()) return true;
  if (const auto* n = e.as<AddNode>()) return affine_in(n->a, k) && affine_in(n->b, k);
  if (const auto* n = e.as<SubNode>()) return affine_in(n->a, k) && affine_in(n->b, k);
  if (const auto* n = e.as<MulNode>()) {
    if (as_const_int(n->a)) return affine_in(n->b, k);
    if (as_const_int(n->b)) return affine_in(n->a, k);
  }
  return false;
}

/// The terms of a sum with their signs (anything that is not + or - is one term).
void flatten_sum(const Expr& e, bool negative, std::vector<std::pair<Expr, bool>>& out) {
  if (const auto* n = e.as<AddNode>()) {
    flatten_sum(n->a, negative, out);
    flatten_sum(n->b, negative, out);
  } else if (const auto* n = e.as<SubNode>()) {
    flatten_sum(n->a, negative, out);
    flatten_sum(n->b, !negative, out);
  } else {
    out.emplace_back(e, negative);
  }
}

/// Where one comparison is constant, by the candidate formulas: on [lo, prefix_end) it is
/// prefix_value, on [suffix_begin, hi) suffix_value. Candidates only: `constant_on` proves.
struct AtomRange {
  Expr prefix_end;
  bool prefix_value = false;
  Expr suffix_begin;
  bool suffix_value = false;
};

/// Which conditions' atoms were decided in one part of a split loop.
using Decisions = std::unordered_map<const ExprNode*, bool>;

/// Replaces the decided comparisons by their values.
class ReplaceAtoms : public StmtMutator {
 public:
  explicit ReplaceAtoms(const Decisions& d) : expr_(d) {}

 protected:
  Expr mutate_expr(const Expr& e) override { return expr_.mutate(e); }

 private:
  class Exprs : public ExprMutator {
   public:
    explicit Exprs(const Decisions& d) : d_(d) {}

   protected:
#define TESSEL_REPLACE_(name)                                       \
  Expr visit_##name(const name##Node* op, const Expr& e) override { \
    auto it = d_.find(op);                                          \
    if (it != d_.end()) return bool_const(it->second);              \
    return ExprMutator::visit_##name(op, e);                        \
  }
    TESSEL_REPLACE_(LT)
    TESSEL_REPLACE_(LE)
    TESSEL_REPLACE_(GT)
    TESSEL_REPLACE_(GE)
#undef TESSEL_REPLACE_

   private:
    const Decisions& d_;
  };
  Exprs expr_;
};

class LoopSplitter : public StmtMutator {
 public:
  explicit LoopSplitter(const Kernel& kernel) : thread_var_(kernel->thread_var) {
    analyzer_.bind(kernel->thread_var, 0, kernel->threads);
    for (size_t d = 0; d < kernel->grid.size(); ++d) {
      if (auto g = as_const_int(kernel->grid[d])) analyzer_.bind(kernel->block_vars[d], 0, *g);
    }
  }
  bool changed() const { return changed_; }

 protected:
  Stmt visit_For(const ForNode* op, const Stmt& s) override {
    auto min = as_const_int(op->min);
    auto extent = as_const_int(op->extent);
    if (min && extent && *extent > 0) {
      analyzer_.bind(op->var, *min, *extent);
    } else {
      bind_symbolic_loop(analyzer_, *op);  // no earlier loop's range over the same variable
    }
    Stmt body = mutate(op->body);
    Stmt self = body.same_as(op->body) ? s
                                       : ForNode::make(op->var, op->min, op->extent, op->for_kind,
                                                       body, op->loc, op->pipeline);
    if (op->for_kind != ForKind::kSerial || !min || !extent || *extent < 2) return self;
    bool nested = false;
    for_each_stmt(body, [&](const Stmt& x) { nested = nested || x.as<ForNode>(); });
    if (!nested) return self;
    if (Stmt parts = split_loop(*op, body); parts.defined()) {
      changed_ = true;
      return parts;
    }
    return self;
  }
  Stmt visit_If(const IfNode* op, const Stmt& s) override {
    Stmt then_case, else_case;
    {
      Analyzer::ConstraintScope scope(analyzer_, op->cond);
      then_case = mutate(op->then_case);
    }
    if (op->else_case.defined()) {
      Analyzer::ConstraintScope scope(analyzer_, !op->cond);
      else_case = mutate(op->else_case);
    }
    if (then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) return s;
    return IfNode::make(op->cond, then_case, else_case, op->loc);
  }

 private:
  /// The three-way split of `op` (body already processed), or an undefined statement when no
  /// comparison could be decided in a prefix or a suffix.
  Stmt split_loop(const ForNode& op, const Stmt& body) {
    const Var& k = op.var;
    lo_ = op.min;
    hi_ = analyzer_.simplify(op.min + op.extent);
    inner_.clear();
    inner_.insert(thread_var_.get());
    // Inner loop variables range over the hull of every loop that binds them here (a variable
    // reused by two loops keeps the last range it was bound to otherwise).
    std::unordered_map<const ExprNode*, std::pair<Var, IntBound>> hull;
    for_each_stmt(body, [&](const Stmt& x) {
      if (const auto* l = x.as<LetNode>()) inner_.insert(l->var.get());
      const auto* f = x.as<ForNode>();
      if (!f) return;
      inner_.insert(f->var.get());
      auto fmin = as_const_int(f->min), fext = as_const_int(f->extent);
      IntBound b;  // unbounded unless both are constants
      if (fmin && fext && *fext > 0) b = {*fmin, *fmin + *fext - 1};
      auto [it, fresh] = hull.try_emplace(f->var.get(), f->var, b);
      if (!fresh) {
        IntBound& h = it->second.second;
        h = {std::min(h.min, b.min), std::max(h.max, b.max)};
      }
    });
    for (const auto& [_, vb] : hull) analyzer_.bind(vb.first, vb.second);
    // The conditions of selects (masks, zero-fill sizes) choose the split points; the
    // conditions of ifs are folded where decided but do not move the points.
    std::vector<Expr> select_conds, atoms;
    std::unordered_set<const ExprNode*> seen;
    auto collect_atoms = [&](const Expr& cond) {
      pre_order_visit(cond, [&](const Expr& x) {
        if (as_ordering(x) && uses_var(x, k) && seen.insert(x.get()).second) atoms.push_back(x);
      });
    };
    for_each_expr(body, [&](const Expr& e) {
      pre_order_visit(e, [&](const Expr& x) {
        if (const auto* sel = x.as<SelectNode>(); sel && uses_var(sel->cond, k)) {
          select_conds.push_back(sel->cond);
          collect_atoms(sel->cond);
        }
      });
    });
    if (select_conds.empty()) return Stmt();
    for_each_stmt(body, [&](const Stmt& x) {
      if (const auto* i = x.as<IfNode>(); i && uses_var(i->cond, k)) collect_atoms(i->cond);
    });
    ranges_.clear();
    for (const Expr& atom : atoms) {
      if (auto r = atom_range(atom, k)) ranges_.emplace(atom.get(), *r);
    }
    // P = min over select conditions of where each stops being constant from the start; Q the
    // max of where each becomes constant until the end (kept unsimplified: constant_on follows
    // their min/max structure).
    Expr P, Q;
    for (const Expr& c : select_conds) {
      Region r = region(c, k);
      Expr p = max(r.false_prefix, r.true_prefix), q = min(r.false_suffix, r.true_suffix);
      P = P.defined() ? min(P, p) : p;
      Q = Q.defined() ? max(Q, q) : q;
    }
    Expr p_at = pick(false, pick(true, P, lo_), hi_);
    Expr q_at = pick(false, pick(true, Q, p_at), hi_);
    Decisions prefix, suffix;
    if (!analyzer_.can_prove(p_at <= lo_)) prefix = decide(atoms, k, P, /*is_prefix=*/true);
    if (!analyzer_.can_prove(q_at >= hi_)) suffix = decide(atoms, k, Q, /*is_prefix=*/false);
    if (prefix.empty() && suffix.empty()) return Stmt();
    if (prefix.empty()) p_at = lo_;
    if (suffix.empty()) q_at = hi_;
    std::vector<Stmt> parts;
    auto part = [&](const Expr& from, const Expr& to, const Stmt& part_body) {
      Expr extent = analyzer_.simplify(to - from);
      if (auto e = as_const_int(extent); e && *e <= 0) return;
      parts.push_back(ForNode::make(k, from, extent, op.for_kind, part_body, op.loc, op.pipeline));
    };
    if (!prefix.empty()) part(lo_, p_at, ReplaceAtoms(prefix).mutate(body));
    part(p_at, q_at, body);
    if (!suffix.empty()) part(q_at, hi_, ReplaceAtoms(suffix).mutate(body));
    return SeqNode::make(std::move(parts));
  }

  /// max(a, b) (is_max) or min(a, b), simplified; decided by the difference when it is a
  /// constant (`max(bx + 2, bx + 1)` is `bx + 2`, which bounds of each side cannot tell).
  Expr pick(bool is_max, const Expr& a, const Expr& b) {
    Expr x = analyzer_.simplify(a), y = analyzer_.simplify(b);
    if (auto d = as_const_int(analyzer_.simplify(x - y))) return (*d >= 0) == is_max ? x : y;
    // max(min(u, v), y) = min(max(u, y), max(v, y)), and the dual.
    if (const auto* m = is_max ? x.as<MinNode>() : nullptr) {
      return pick(false, pick(true, m->a, y), pick(true, m->b, y));
    }
    if (const auto* m = is_max ? nullptr : x.as<MaxNode>()) {
      return pick(true, pick(false, m->a, y), pick(false, m->b, y));
    }
    return analyzer_.simplify(is_max ? max(x, y) : min(x, y));
  }

  /// Where a condition is constant: [lo, false_prefix) false, [lo, true_prefix) true,
  /// [false_suffix, hi) false, [true_suffix, hi) true (empty when equal to lo / hi).
  struct Region {
    Expr false_prefix, true_prefix, false_suffix, true_suffix;
  };

  Region region(const Expr& c, const Var& k) {
    if (const auto* n = c.as<AndNode>()) {
      Region a = region(n->a, k), b = region(n->b, k);
      return {max(a.false_prefix, b.false_prefix), min(a.true_prefix, b.true_prefix),
              min(a.false_suffix, b.false_suffix), max(a.true_suffix, b.true_suffix)};
    }
    if (const auto* n = c.as<OrNode>()) {
      Region a = region(n->a, k), b = region(n->b, k);
      return {min(a.false_prefix, b.false_prefix), max(a.true_prefix, b.true_prefix),
              max(a.false_suffix, b.false_suffix), min(a.true_suffix, b.true_suffix)};
    }
    if (const auto* n = c.as<NotNode>()) {
      Region a = region(n->a, k);
      return {a.true_prefix, a.false_prefix, a.true_suffix, a.false_suffix};
    }
    Region none{lo_, lo_, hi_, hi_};
    if (!uses_var(c, k)) {
      if (analyzer_.can_prove(c)) return {lo_, hi_, hi_, lo_};
      if (analyzer_.can_prove(!c)) return {hi_, lo_, lo_, hi_};
      return none;
    }
    auto it = ranges_.find(c.get());
    if (it == ranges_.end()) return none;
    const AtomRange& r = it->second;
    Region out = none;
    (r.prefix_value ? out.true_prefix : out.false_prefix) = r.prefix_end;
    (r.suffix_value ? out.true_suffix : out.false_suffix) = r.suffix_begin;
    return out;
  }

  /// The candidate ranges of comparison `atom` (affine in k, no wrap-around over the loop).
  std::optional<AtomRange> atom_range(const Expr& atom, const Var& k) {
    const CompareNode* c = as_ordering(atom);
    if (!affine_in(c->a, k) || !affine_in(c->b, k)) return std::nullopt;
    for (const Expr& side : {c->a, c->b}) {
      IntBound b = analyzer_.const_int_bound(side);
      // A bound strictly inside the dtype's range means no operation wrapped (the bound
      // evaluator widens to the whole range wherever one may).
      IntBound whole = analyzer_.const_int_bound(Var("_", side.dtype()));
      if (!b.bounded() || b.min <= whole.min || b.max >= whole.max) return std::nullopt;
    }
    // atom <=> d >= t (d in the operands' dtype: the candidates need not be exact, the proofs
    // in constant_on decide)
    bool less = atom.kind() == ExprKind::kLT || atom.kind() == ExprKind::kLE;
    bool strict = atom.kind() == ExprKind::kLT || atom.kind() == ExprKind::kGT;
    Expr d = less ? c->b - c->a : c->a - c->b;
    int64_t t = strict ? 1 : 0;
    auto at = [&](int64_t v) {
      return analyzer_.simplify(substitute(
          d, [&](const Var& x) { return x.same_as(k) ? cast(k.dtype(), make_int(v)) : Expr(); }));
    };
    Expr r = at(0);
    auto coef = as_const_int(analyzer_.simplify(at(1) - r));
    if (!coef || *coef == 0) return std::nullopt;
    // r = outer + inner: the terms without and with variables that vary inside the loop.
    std::vector<std::pair<Expr, bool>> terms;
    flatten_sum(r, false, terms);
    DataType dt = d.dtype();
    auto num = [&](int64_t v) { return cast(dt, make_int(v)); };
    Expr outer = num(0), inner = outer;
    for (const auto& [term, negative] : terms) {
      bool varies = false;
      pre_order_visit(term, [&](const Expr& x) {
        varies = varies || (x.as<VarNode>() && inner_.count(x.get()));
      });
      Expr& sum = varies ? inner : outer;
      sum = negative ? sum - term : sum + term;
    }
    IntBound ib = analyzer_.const_int_bound(analyzer_.simplify(inner));
    if (!ib.bounded()) return std::nullopt;
    Expr min_r = outer + num(ib.min), max_r = outer + num(ib.max);
    int64_t m = *coef;
    AtomRange out;
    if (m > 0) {  // false below, true above
      out.prefix_end = floordiv(num(t - 1) - max_r, num(m)) + num(1);
      out.prefix_value = false;
      out.suffix_begin = floordiv(num(t + m - 1) - min_r, num(m));
      out.suffix_value = true;
    } else {  // true below, false above
      out.prefix_end = floordiv(min_r - num(t), num(-m)) + num(1);
      out.prefix_value = true;
      out.suffix_begin = floordiv(max_r - num(t), num(-m)) + num(1);
      out.suffix_value = false;
    }
    out.prefix_end = analyzer_.simplify(cast(k.dtype(), out.prefix_end));
    out.suffix_begin = analyzer_.simplify(cast(k.dtype(), out.suffix_begin));
    for (const Expr& e : {out.prefix_end, out.suffix_begin}) {
      bool uniform = true;  // the same for every thread and inner iteration
      pre_order_visit(e, [&](const Expr& x) {
        uniform = uniform && !(x.as<VarNode>() && inner_.count(x.get()));
      });
      if (!uniform) return std::nullopt;
    }
    return out;
  }

  /// The atoms proved constant on the prefix [lo, P) or on the suffix [Q, hi) (`bound` is P or Q).
  Decisions decide(const std::vector<Expr>& atoms, const Var& k, const Expr& bound,
                   bool is_prefix) {
    Decisions out;
    for (const Expr& atom : atoms) {
      if (!ranges_.count(atom.get())) continue;
      Value v = constant_on(atom, k, bound, is_prefix);
      if (v == Value::kFalse || v == Value::kTrue) out.emplace(atom.get(), v == Value::kTrue);
    }
    return out;
  }

  /// What a proof says about an atom on an interval: unknown, empty interval, or its value.
  enum class Value { kUnknown, kEmpty, kFalse, kTrue };

  /// The value of `atom` on [lo, bound - 1] (prefix) or [bound, hi - 1] (suffix), if proved. A
  /// min or max bound is followed: the prefix below min(x, y) lies in the prefix below x (and in
  /// the one below y), the one below max(x, y) is the union of both (the same value on each).
  Value constant_on(const Expr& atom, const Var& k, const Expr& bound, bool is_prefix) {
    const auto* mn = bound.as<MinNode>();
    const auto* mx = bound.as<MaxNode>();
    if (mn || mx) {
      Value a = constant_on(atom, k, mn ? mn->a : mx->a, is_prefix);
      Value b = constant_on(atom, k, mn ? mn->b : mx->b, is_prefix);
      if ((mn != nullptr) == is_prefix) {  // a sub-interval of each side: either proof holds
        return a != Value::kUnknown ? a : b;
      }
      if (a == Value::kEmpty) return b;  // the union of both sides
      if (b == Value::kEmpty || a == b) return a;
      return Value::kUnknown;
    }
    Expr from = analyzer_.simplify(is_prefix ? lo_ : bound);
    Expr last = analyzer_.simplify(is_prefix ? bound - 1 : hi_ - 1);
    // Under "the interval is not empty" (from <= last).
    std::optional<Analyzer::ConstraintScope> scope;
    Expr gap = analyzer_.simplify(last - from);
    if (auto g = as_const_int(gap)) {
      if (*g < 0) return Value::kEmpty;
    } else if (Expr fact = single_var_fact(gap); fact.defined()) {
      scope.emplace(analyzer_, fact);
    }
    auto value_at = [&](const Expr& v) {
      Expr e = analyzer_.simplify(
          substitute(atom, [&](const Var& x) { return x.same_as(k) ? v : Expr(); }));
      if (analyzer_.can_prove(e)) return Value::kTrue;
      if (analyzer_.can_prove(!e)) return Value::kFalse;
      return Value::kUnknown;
    };
    Value first = value_at(from);
    if (first == Value::kUnknown || value_at(last) != first) return Value::kUnknown;
    return first;
  }

  /// `gap >= 0` as a bound on its one variable (`v >= c` or `v <= c`) when gap = a*v + b
  /// without wrap-around; an undefined expression otherwise (the analyzer then knows less, which
  /// is sound).
  Expr single_var_fact(const Expr& gap) {
    std::vector<Var> vars;
    (void)substitute(gap, [&](const Var& x) {
      bool known = false;
      for (const Var& v : vars) known = known || v.same_as(x);
      if (!known) vars.push_back(x);
      return Expr();
    });
    if (vars.size() != 1 || !affine_in(gap, vars[0])) return Expr();
    const Var& v = vars[0];
    IntBound b = analyzer_.const_int_bound(gap);
    IntBound whole = analyzer_.const_int_bound(Var("_", gap.dtype()));
    if (!b.bounded() || b.min <= whole.min || b.max >= whole.max) return Expr();
    auto at = [&](int64_t value) {
      return as_const_int(analyzer_.simplify(substitute(gap, [&](const Var& x) {
        return x.same_as(v) ? cast(v.dtype(), make_int(value)) : Expr();
      })));
    };
    auto b0 = at(0), b1 = at(1);
    if (!b0 || !b1 || *b1 == *b0) return Expr();
    int64_t a = *b1 - *b0;
    // a*v + b0 >= 0
    if (a > 0) return v >= cast(v.dtype(), make_int(floor_div(-*b0 + a - 1, a)));
    return v <= cast(v.dtype(), make_int(floor_div(*b0, -a)));
  }

  Analyzer analyzer_;
  Var thread_var_;
  bool changed_ = false;
  Expr lo_, hi_;
  std::unordered_set<const ExprNode*> inner_;
  std::unordered_map<const ExprNode*, AtomRange> ranges_;
};

}  // namespace

Kernel split_loops(const Kernel& kernel, bool* changed) {
  LoopSplitter splitter(kernel);
  Stmt body = splitter.mutate(kernel->body);
  if (changed) *changed = splitter.changed();
  return splitter.changed() ? with_body(kernel, body) : kernel;
}

}  // namespace tessel
