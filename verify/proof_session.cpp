// One proof's Z3 context, width, translators and model read-back.
#include "verify/proof_session.h"

#include <unordered_set>

#include "core/error.h"
#include "core/expr_functor.h"
#include "verify/product_lemmas.h"

namespace tessel {

ProofSession::ProofSession(const VarDomain& domain, std::vector<Var> local_vars,
                           const std::vector<Expr>& exprs, unsigned timeout_ms, int force_width)
    : local_vars_(std::move(local_vars)),
      facts_(domain.constraints),
      timeout_ms_(timeout_ms),
      solver_(ctx_, "QF_BV") {
  bounds_ = std::make_unique<IndexBounds>(domain);
  std::vector<Expr> all = exprs;
  all.insert(all.end(), facts_.begin(), facts_.end());
  // Every ranged variable's range is asserted, so the width must hold its bounds too (else a
  // bound would wrap and the range facts contradict each other: everything "proved").
  for (const auto& [v, b] : domain.ranges) all.push_back(v);
  width_ = force_width > 0 ? force_width : bounds_->width_for(all);

  // Shared variables: the domain's, then any other free variable of the proof.
  std::unordered_set<const VarNode*> seen;
  for (const Var& v : local_vars_) seen.insert(v.operator->());
  for (const auto& [v, b] : domain.ranges) {
    if (seen.insert(v.operator->()).second) shared_vars_.push_back(v);
  }
  for (const Expr& root : all) {
    pre_order_visit(root, [&](const Expr& e) {
      if (const auto* v = e.as<VarNode>(); v && seen.insert(v).second) {
        Var var;
        static_cast<Expr&>(var) = e;  // a Var handle for the VarNode `e` holds
        shared_vars_.push_back(var);
      }
    });
  }
  shared_ = std::make_unique<Z3ExprTranslator>(ctx_, *bounds_, width_, "");
  shared_->log_products(&products_);
  for (const Var& v : shared_vars_) shared_->var(v);
}

Z3ExprTranslator& ProofSession::copy(const std::string& suffix, bool quantified) {
  auto tr = std::make_unique<Z3ExprTranslator>(ctx_, *bounds_, width_, suffix);
  if (!quantified) tr->log_products(&products_);
  for (const Var& v : shared_vars_) tr->bind(v, shared_->var(v));
  copies_.push_back(std::move(tr));
  quantified_.push_back(quantified);
  return *copies_.back();
}

z3::check_result ProofSession::check(const z3::expr& goal, bool quantified) {
  z3::expr all = goal;
  for (const Expr& f : facts_) all = all && shared_->boolean(f);
  for (const auto& s : shared_->side_conditions()) all = all && s;
  for (size_t k = 0; k < copies_.size(); ++k) {
    if (quantified_[k]) continue;
    for (const auto& s : copies_[k]->side_conditions()) all = all && s;
  }
  if (quantified && !general_) general_ = std::make_unique<z3::solver>(ctx_);
  if (quantified) {
    active_ = general_.get();
    return solve(*active_, all);
  }
  active_ = &solver_;
  if (!products_.empty()) {
    z3::check_result abstracted = solve(solver_, abstract_products(ctx_, all, products_, width_));
    if (abstracted == z3::unsat) return z3::unsat;
  }
  return solve(solver_, all);
}

z3::check_result ProofSession::solve(z3::solver& solver, const z3::expr& formula) {
  solver.reset();
  z3::params p(ctx_);
  p.set("timeout", timeout_ms_);
  solver.set(p);
  solver.add(formula);
  return solver.check();
}

int64_t ProofSession::value(Z3ExprTranslator& tr, const Expr& e) {
  return z3_signed_value(active_->get_model().eval(tr.bv(e), true));
}

std::vector<std::pair<std::string, int64_t>> ProofSession::symbol_values() {
  std::vector<std::pair<std::string, int64_t>> out;
  z3::model m = active_->get_model();
  for (const Var& v : shared_vars_) {
    out.emplace_back(v.name(), z3_signed_value(m.eval(shared_->var(v), true)));
  }
  return out;
}

IntEnv ProofSession::symbol_env() {
  IntEnv env;
  z3::model m = active_->get_model();
  for (const Var& v : shared_vars_) {
    env[v.operator->()] = z3_signed_value(m.eval(shared_->var(v), true));
  }
  return env;
}

}  // namespace tessel
