// The arithmetic analyzer: constant folding, canonical affine sums, floordiv/floormod rules,
// bounds of an expression over its variables' ranges, and scoped constraints.
//
// All index reasoning inside passes goes through one Analyzer. It is sound and incomplete: a
// "proved" answer is always true; "unknown" means the analyzer could not decide (Z3, in verify/,
// is the prover of last resort for facts over whole index spaces).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/expr.h"

namespace tessel {

/// An inclusive integer interval; kNegInf/kPosInf stand for unbounded ends.
struct IntBound {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t min = kNegInf;
  int64_t max = kPosInf;

  bool is_const() const { return min == max && min != kNegInf; }
  bool bounded() const { return min != kNegInf && max != kPosInf; }
  friend bool operator==(const IntBound&, const IntBound&) = default;
};

class Analyzer {
 public:
  Analyzer();
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  /// Declares that `v` ranges over [min, min + extent). Requires extent > 0.
  void bind(const Var& v, int64_t min, int64_t extent);
  /// Declares that `v` lies in [bound.min, bound.max].
  void bind(const Var& v, IntBound bound);

  /// Bounds of an integral expression over the bound ranges of its variables (and the active
  /// constraints). Unbound variables range over their dtype.
  IntBound const_int_bound(const Expr& e);

  /// A simpler, equivalent expression: constants folded, affine sums in canonical order with like
  /// terms merged (`i*4 + j - i*4` -> `j`), floordiv/floormod of affine terms by constants
  /// simplified using bounds (`(i*8 + j) // 8` -> `i` when 0 <= j < 8), redundant min/max and
  /// comparisons decided by bounds removed.
  Expr simplify(const Expr& e);

  /// True only when `cond` holds for every value of its variables in their ranges.
  bool can_prove(const Expr& cond);
  /// True only when `a == b` for all values (simplify(a - b) == 0).
  bool can_prove_equal(const Expr& a, const Expr& b);

  /// While alive, `cond` is assumed true (e.g. inside `if i < n:`). Scopes nest; destroy in
  /// reverse order of creation.
  class ConstraintScope {
   public:
    ConstraintScope(Analyzer& analyzer, const Expr& cond);
    ~ConstraintScope();
    ConstraintScope(const ConstraintScope&) = delete;
    ConstraintScope& operator=(const ConstraintScope&) = delete;

   private:
    Analyzer& analyzer_;
  };

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessel
