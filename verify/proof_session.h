// The plumbing every proof shares: one Z3 context and solver, the bit width for all terms, one
// translator per copy of the per-point variables (x and y for injectivity, d lanes for bank
// conflicts) with the symbolic variables shared among the copies, and model read-back.
#pragma once

#include <z3++.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/int_eval.h"
#include "verify/z3_expr.h"

namespace tessel {

/// One proof's Z3 state. Requires: every variable a copy should vary independently is listed in
/// `local_vars`; every other variable of the proof (the domain's and any free one) is shared.
class ProofSession {
 public:
  /// `domain` gives the symbolic variables' ranges and facts and the local variables' ranges;
  /// `exprs` are all integer expressions the proof will translate (they fix the width);
  /// `force_width` > 0 overrides the width (tests only).
  ProofSession(const VarDomain& domain, std::vector<Var> local_vars, const std::vector<Expr>& exprs,
               unsigned timeout_ms, int force_width = 0);
  ProofSession(const ProofSession&) = delete;
  ProofSession& operator=(const ProofSession&) = delete;

  z3::context& ctx() { return ctx_; }
  IndexBounds& bounds() { return *bounds_; }
  int width() const { return width_; }

  /// A fresh translator whose local variables are new constants (named with `suffix`) and whose
  /// shared variables are the session's. The session owns it. A `quantified` copy's side
  /// conditions are not asserted by check(): the caller puts them under its quantifier.
  Z3ExprTranslator& copy(const std::string& suffix, bool quantified = false);
  /// The translator of the shared variables alone (for facts about symbols only).
  Z3ExprTranslator& shared() { return *shared_; }

  /// Checks `goal` together with the domain's facts and every (unquantified) translator's side
  /// conditions. `quantified` goals go to Z3's general solver instead of the QF_BV one. With
  /// non-linear products, a linear abstraction (verify/product_lemmas.h) is tried first: unsat
  /// there is unsat here; otherwise the exact query decides.
  z3::check_result check(const z3::expr& goal, bool quantified = false);
  /// The model of the last sat check.
  z3::model model() { return active_->get_model(); }
  /// The value of `e` translated by `tr`, in the last model.
  int64_t value(Z3ExprTranslator& tr, const Expr& e);
  /// Values of the shared (symbolic) variables in the last model, by name, domain order first.
  std::vector<std::pair<std::string, int64_t>> symbol_values();
  /// The same values keyed for eval_int.
  IntEnv symbol_env();
  /// True when no sub-expression can exceed its own dtype (so eval_int replays agree with Z3).
  bool exact_in_dtypes() const { return bounds_->dtype_overflows().empty(); }

 private:
  z3::context ctx_;
  std::unique_ptr<IndexBounds> bounds_;
  int width_;
  std::vector<Var> local_vars_;
  std::vector<Var> shared_vars_;
  std::unique_ptr<Z3ExprTranslator> shared_;
  std::vector<std::unique_ptr<Z3ExprTranslator>> copies_;
  std::vector<bool> quantified_;
  std::vector<ProductTerm> products_;
  std::vector<Expr> facts_;
  unsigned timeout_ms_;
  z3::solver solver_;
  std::unique_ptr<z3::solver> general_;
  z3::solver* active_ = &solver_;

  z3::check_result solve(z3::solver& solver, const z3::expr& formula);
};

}  // namespace tessel
