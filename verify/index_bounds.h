// Bounds of the exact values of index expressions over the ranges of their variables, and the
// signed bit width that holds every intermediate value (verify/z3_expr.h translates at it).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/analyzer.h"
#include "core/expr.h"

namespace tessel {

/// The free variables of a proof: each one's inclusive range, plus facts assumed true
/// (`n % 8 == 0`). Variables of the proved expressions that have no range here range over their
/// dtype.
struct VarDomain {
  std::vector<std::pair<Var, IntBound>> ranges;
  std::vector<Expr> constraints;

  /// Adds `lo <= v <= hi`.
  VarDomain& bound(const Var& v, int64_t lo, int64_t hi) {
    ranges.emplace_back(v, IntBound{lo, hi});
    return *this;
  }
  /// Adds an assumed fact (a boolean integer expression over the variables).
  VarDomain& assume(Expr fact) {
    constraints.push_back(std::move(fact));
    return *this;
  }
};

/// Sound interval bounds of the exact (mathematical) values of integer sub-expressions over a
/// VarDomain: interval arithmetic on every node (exact at the corners for + - * // % min max
/// shifts, power-of-two envelopes for bitwise operations), intersected with the Analyzer's
/// const_int_bound where no node of the sub-expression can exceed its dtype (the analyzer bounds
/// wrapped values). Memoised per node.
class IndexBounds {
 public:
  explicit IndexBounds(const VarDomain& domain);
  ~IndexBounds();
  IndexBounds(const IndexBounds&) = delete;
  IndexBounds& operator=(const IndexBounds&) = delete;

  /// Bounds of an integral (or boolean: [0, 1]) expression. Requires: no float arithmetic,
  /// buffer loads or calls (user error naming the construct otherwise).
  IntBound bound(const Expr& e);

  /// The signed bit-vector width that holds every intermediate value of every expression in
  /// `exprs` (including the quotient products the translator introduces) plus one spare bit.
  /// User error when some value cannot be bounded within 126 bits.
  int width_for(const std::vector<Expr>& exprs);

  /// Sub-expressions seen so far whose bounds exceed their own dtype (e.g. an int32 product that
  /// can pass 2^31): the proofs reason about the exact values, the generated code would wrap.
  const std::vector<Expr>& dtype_overflows() const { return overflows_; }

 private:
  struct Wide;
  Wide wide(const Expr& e);
  int bits_of(const Expr& e);

  Analyzer analyzer_;
  struct Memo {
    Expr keep;  ///< holds the node alive, so its address is never reused while memoised
    __int128 lo, hi;
  };
  std::unordered_map<const ExprNode*, Memo> memo_;
  std::unordered_map<const VarNode*, IntBound> ranges_;
  std::vector<Expr> overflows_;
  std::unordered_set<const ExprNode*> wrapping_;  ///< nodes that may wrap, or contain one
};

}  // namespace tessel
