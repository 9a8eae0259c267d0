// How one write may reach one read: its own loops and conditions, unrolled into instances or
// left to a quantifier (see write_cover.h).
#include "verify/write_cover.h"

#include <map>

#include "core/analyzer.h"
#include "core/expr_functor.h"

namespace tessel {

size_t common_prefix(const RegisterAccess& a, const RegisterAccess& b) {
  size_t n = 0;
  while (n < a.enclosing.size() && n < b.enclosing.size() && a.enclosing[n].same(b.enclosing[n]))
    ++n;
  return n;
}

Expr covers_expr(const Expr& e, const Expr& index, int64_t count) {
  if (count == 1) return e == index;
  return index <= e && e < index + make_int(count);
}

namespace {

/// The constant truth value of a condition, if it has one.
std::optional<bool> const_bool(const Expr& e) {
  std::optional<int64_t> v = as_const_int(e);
  if (!v) return std::nullopt;
  return *v != 0;
}

bool uses_any(const Expr& e, const std::vector<OwnLoop>& loops, size_t k) {
  return uses_var(e, loops[k].var);
}

/// Unrolls the loops `used` of `cover` over every assignment of their constant ranges.
void unroll(WriteCover& cover, const std::vector<OwnLoop>& used, const std::vector<Expr>& conds,
            const Expr& index) {
  Analyzer analyzer;
  std::vector<int64_t> value(used.size());
  for (size_t k = 0; k < used.size(); ++k) value[k] = *as_const_int(used[k].min);
  auto assign = [&](const Expr& e) {
    return analyzer.simplify(substitute(e, [&](const Var& v) -> Expr {
      for (size_t k = 0; k < used.size(); ++k) {
        if (v.same_as(used[k].var)) return make_int(value[k]);
      }
      return Expr();
    }));
  };
  while (true) {
    WriteInstance inst;
    bool possible = true;
    for (const Expr& c : conds) {
      Expr s = assign(c);
      std::optional<bool> b = const_bool(s);
      if (b == false) possible = false;
      if (!b) inst.conds.push_back(s);
    }
    for (size_t k = 0; k < used.size(); ++k) {
      if (!used[k].below.defined()) continue;
      Expr s = analyzer.simplify(make_int(value[k]) < used[k].below);
      std::optional<bool> b = const_bool(s);
      if (b == false) possible = false;
      if (!b) inst.conds.push_back(s);
    }
    if (possible) {
      inst.index = assign(index);
      cover.instances.push_back(std::move(inst));
    }
    size_t k = used.size();
    while (k-- > 0) {  // next assignment, the innermost loop fastest
      if (++value[k] < *as_const_int(used[k].min) + *as_const_int(used[k].extent)) break;
      value[k] = *as_const_int(used[k].min);
    }
    if (k == static_cast<size_t>(-1)) break;
  }
}

}  // namespace

std::optional<WriteCover> cover_of(const RegisterAccess& w, const RegisterAccess& r,
                                   std::optional<size_t> loop, bool* unmodelled) {
  const size_t cp = common_prefix(w, r);
  size_t split = cp;
  if (loop) {
    if (*loop >= cp || !r.enclosing[*loop].is_loop()) return std::nullopt;
    split = *loop;
  } else if (w.order >= r.order) {
    return std::nullopt;
  }
  if (w.opaque) {
    *unmodelled = true;
    return std::nullopt;
  }
  // What encloses w from `split` down; common loops get fresh variables (an earlier iteration).
  std::map<const ExprNode*, Expr> rename;
  auto sub = [&](const Expr& e) {
    if (rename.empty()) return e;
    return substitute(e, [&](const Var& v) -> Expr {
      auto it = rename.find(v.get());
      return it == rename.end() ? Expr() : it->second;
    });
  };
  std::vector<OwnLoop> loops;
  std::vector<Expr> conds;
  for (size_t k = split; k < w.enclosing.size(); ++k) {
    const Enclosing& f = w.enclosing[k];
    if (!f.is_loop()) {
      if (!f.cond.defined()) {
        *unmodelled = true;
        return std::nullopt;
      }
      conds.push_back(sub(f.cond));
      continue;
    }
    if (!f.min.defined()) {
      *unmodelled = true;
      return std::nullopt;
    }
    OwnLoop l{f.var, sub(f.min), sub(f.extent), Expr()};
    if (k < cp) {
      Var fresh(f.var.name() + "'");
      rename[f.var.get()] = fresh;
      l.var = fresh;
      if (k == split) l.below = f.var;
    }
    loops.push_back(std::move(l));
  }
  Expr index = sub(w.index);

  WriteCover cover;
  cover.write = &w;
  // Loops that w's index and conditions do not depend on only need to run once.
  std::vector<OwnLoop> used;
  for (size_t k = 0; k < loops.size(); ++k) {
    bool is_used = loops[k].below.defined() || uses_any(index, loops, k);
    for (const Expr& c : conds) is_used = is_used || uses_any(c, loops, k);
    if (is_used) {
      used.push_back(loops[k]);
      continue;
    }
    Expr runs = loops[k].extent > make_int(0);
    std::optional<bool> b = const_bool(Analyzer().simplify(runs));
    if (b == false) return std::nullopt;
    if (!b) conds.push_back(runs);
  }
  // Later loops' ranges may mention earlier used loops; they stay correct under substitution.
  int64_t product = 1;
  bool constant = true;
  for (const OwnLoop& l : used) {
    std::optional<int64_t> lo = as_const_int(l.min), n = as_const_int(l.extent);
    if (!lo || !n) {
      constant = false;
      break;
    }
    if (*n <= 0) return std::nullopt;
    product *= *n;
    if (product > kUnrollLimit) {
      constant = false;
      break;
    }
  }
  if (constant) {
    unroll(cover, used, conds, index);
  } else {
    cover.quantified = std::move(used);
    cover.conds = std::move(conds);
    cover.index = index;
  }
  return cover;
}

}  // namespace tessel
