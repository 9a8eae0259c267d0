// Shared pieces of the proofs: results, boxes, read-back and wording.
#include "verify/proof_parts.h"

#include "core/error.h"
#include "core/expr_printer.h"

namespace tessel {

std::string format_index(const std::string& name, const std::vector<int64_t>& index) {
  std::string s = name + "[";
  for (size_t k = 0; k < index.size(); ++k) s += (k ? ", " : "") + std::to_string(index[k]);
  return s + "]";
}

namespace proof_detail {

ProofResult start(std::string what) {
  ProofResult r;
  r.what = std::move(what);
  return r;
}

ProofResult proved(ProofResult r, const Stopwatch& clock) {
  r.holds = true;
  r.decided = true;
  r.cex.reset();
  r.message = "proved";
  r.ms = clock.ms();
  return r;
}

ProofResult failed(ProofResult r, const Stopwatch& clock, Counterexample cex) {
  r.holds = false;
  r.decided = true;
  r.message = cex.text;
  r.cex = std::move(cex);
  r.ms = clock.ms();
  return r;
}

ProofResult undecided(ProofResult r, const Stopwatch& clock, unsigned timeout_ms) {
  r.holds = false;
  r.decided = false;
  r.message = "unknown: Z3 gave up (timeout " + std::to_string(timeout_ms) + " ms)";
  r.ms = clock.ms();
  return r;
}

VarDomain with_box_ranges(const VarDomain& domain, const std::vector<Var>& vars,
                          const std::vector<Expr>& extents, const std::string& name) {
  internal_check(vars.size() == extents.size(), "one extent per box variable");
  VarDomain out = domain;
  IndexBounds bounds(domain);
  for (size_t d = 0; d < vars.size(); ++d) {
    IntBound b = bounds.bound(extents[d]);
    if (!b.bounded()) {
      user_error("the extent '" + to_string(extents[d]) + "' of dimension " + std::to_string(d) +
                 " of " + name + " is unbounded; give its variables finite ranges");
    }
    if (b.max < 1) {
      user_error("the extent '" + to_string(extents[d]) + "' of dimension " + std::to_string(d) +
                 " of " + name + " is never positive (at most " + std::to_string(b.max) + ")");
    }
    out.ranges.emplace_back(vars[d], IntBound{0, b.max - 1});
  }
  return out;
}

z3::expr in_box(Z3ExprTranslator& tr, const std::vector<Var>& vars,
                const std::vector<Expr>& extents) {
  z3::expr all = tr.ctx().bool_val(true);
  for (size_t d = 0; d < vars.size(); ++d) {
    z3::expr v = tr.var(vars[d]);
    all = all && z3::sge(v, tr.constant(0));
    if (!as_const_int(extents[d]))
      all = all && z3::slt(v, tr.bv(extents[d]));
    else
      all = all && z3::slt(v, tr.constant(*as_const_int(extents[d])));
  }
  return all;
}

z3::expr lex_less(Z3ExprTranslator& x, Z3ExprTranslator& y, const std::vector<Var>& vars) {
  // Built from the last dimension outwards: less_d = x_d < y_d or (x_d == y_d and less_{d+1}).
  z3::expr less = x.ctx().bool_val(false);
  for (size_t d = vars.size(); d-- > 0;) {
    z3::expr a = x.var(vars[d]), b = y.var(vars[d]);
    less = z3::slt(a, b) || (a == b && less);
  }
  return less;
}

Expr product(const std::vector<Expr>& extents) {
  Expr p = make_int(1);
  for (const Expr& e : extents) p = p * e;
  return p;
}

std::vector<int64_t> values(ProofSession& s, Z3ExprTranslator& tr, const std::vector<Var>& vars) {
  std::vector<int64_t> out;
  z3::model m = s.model();
  for (const Var& v : vars) out.push_back(z3_signed_value(m.eval(tr.var(v), true)));
  return out;
}

std::string tuple_string(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + ")";
}

std::string list_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

std::string symbols_text(const std::vector<std::pair<std::string, int64_t>>& symbols) {
  if (symbols.empty()) return "";
  std::string s = " (when ";
  for (size_t k = 0; k < symbols.size(); ++k) {
    s += (k ? ", " : "") + symbols[k].first + " = " + std::to_string(symbols[k].second);
  }
  return s + ")";
}

}  // namespace proof_detail

}  // namespace tessel
