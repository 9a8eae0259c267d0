// Small pieces the layout, fragment and bank proofs share: timing, result construction, boxes of
// variables as Z3 constraints, reading values back, and the wording of counterexamples.
#pragma once

#include <z3++.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "verify/layout_proofs.h"
#include "verify/proof_session.h"

namespace tessel::proof_detail {

/// Wall time since construction.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// A result for `what`, not yet decided.
ProofResult start(std::string what);
/// `r` marked proved, with the elapsed time.
ProofResult proved(ProofResult r, const Stopwatch& clock);
/// `r` marked failed with `cex` (its text becomes the message).
ProofResult failed(ProofResult r, const Stopwatch& clock, Counterexample cex);
/// `r` marked undecided (Z3 gave up).
ProofResult undecided(ProofResult r, const Stopwatch& clock, unsigned timeout_ms);

/// `domain` plus the range [0, max(extent) - 1] of each box variable (extents may be symbolic:
/// their maximum over the domain). User error when an extent can be < 1 and no fact excludes it
/// from the range bound (`name` is used in the message).
VarDomain with_box_ranges(const VarDomain& domain, const std::vector<Var>& vars,
                          const std::vector<Expr>& extents, const std::string& name);
/// 0 <= vars[d] < extents[d] for every d, in the copy `tr`.
z3::expr in_box(Z3ExprTranslator& tr, const std::vector<Var>& vars,
                const std::vector<Expr>& extents);
/// The point of copy `x` is lexicographically smaller than that of copy `y`.
z3::expr lex_less(Z3ExprTranslator& x, Z3ExprTranslator& y, const std::vector<Var>& vars);
/// The product of `extents` (1 for none).
Expr product(const std::vector<Expr>& extents);

/// Values of `vars` in copy `tr` in the session's last model.
std::vector<int64_t> values(ProofSession& s, Z3ExprTranslator& tr, const std::vector<Var>& vars);

/// "(3, 8)".
std::string tuple_string(const std::vector<int64_t>& v);
/// "[64, 64]".
std::string list_string(const std::vector<int64_t>& v);
/// "" or " (when n = 48, k = 3)".
std::string symbols_text(const std::vector<std::pair<std::string, int64_t>>& symbols);

}  // namespace tessel::proof_detail
