// Integer index expressions as Z3 bit-vectors, at a width where no value can wrap around.
//
// Index arithmetic in Tessel means mathematical integers with Python's floor division and modulo.
// Z3's bit-vectors are fixed-width two's complement: if a sum or product exceeded the width it
// would wrap, and a proof about the wrapped values is a proof about a different function (i * 256
// is "always 0" in 8 bits). So every proof first bounds every sub-expression (IndexBounds) and
// picks one signed width that holds all of them with a spare bit; every term of the proof is then
// exact. Floor division and modulo follow Python on signed values: by a positive power of two
// they are an arithmetic shift and a mask, by another constant a quotient/remainder pair
// (a = q*c + r, 0 <= r < c, q confined to its bounds so q*c cannot wrap either), and by a
// symbolic divisor Z3's bvsmod (whose sign follows the divisor, as Python's %) and an exact
// bvsdiv of a - (a mod b).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <z3++.h>

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
  std::unordered_map<const ExprNode*, std::pair<__int128, __int128>> memo_;
  std::unordered_map<const VarNode*, IntBound> ranges_;
  std::vector<Expr> overflows_;
  std::unordered_set<const ExprNode*> wrapping_;  ///< nodes that may wrap, or contain one
};

/// One product of two non-constant operands as translated: the exact term and what is known of
/// its operands (for the linear lemmas of verify/product_lemmas.h).
struct ProductTerm {
  const ExprNode* node;  ///< the Mul node it came from
  const void* copy;      ///< the translator (copy of the variables) that produced it
  z3::expr a, b, product;
  IntBound a_bound, b_bound, product_bound;
};

/// Translates integer expressions to Z3 bit-vector terms of one fixed width (boolean expressions
/// to Z3 booleans). Variables map to the terms bound with `bind` (or to a fresh constant named
/// after the variable plus `suffix` the first time one is met). Quotients of constant divisions
/// are fresh constants whose defining constraints collect in `side_conditions()`; the proof must
/// assert them. Each translator keeps its own variable bindings, so translating one expression
/// with two translators gives two independent copies (as injectivity needs).
class Z3ExprTranslator {
 public:
  /// `width`: from IndexBounds::width_for (a test may force a narrower one to show why not).
  Z3ExprTranslator(z3::context& ctx, IndexBounds& bounds, int width, std::string suffix = "");

  /// The bit-vector (integral) or boolean (bool dtype) term of `e`.
  z3::expr translate(const Expr& e);
  /// As translate, converted to a bit-vector (booleans become 1/0).
  z3::expr bv(const Expr& e);
  /// As translate, converted to a boolean (integers: != 0).
  z3::expr boolean(const Expr& e);

  /// Makes `v` stand for `value` (a bit-vector of this translator's width).
  void bind(const Var& v, const z3::expr& value);
  /// The term `v` stands for (a fresh constant when unbound), with its domain constraint
  /// recorded in side_conditions() when the bounds give it a range narrower than the width.
  z3::expr var(const Var& v);

  /// Definitions of introduced quotients, variable ranges and well-definedness facts (divisors
  /// non-zero, shift amounts in range).
  const std::vector<z3::expr>& side_conditions() const { return side_; }
  /// The conjunction of side_conditions().
  z3::expr side_condition() const;
  /// The constants this translator created (its unbound variables and quotients): the bound
  /// variables when its terms sit under a quantifier.
  z3::expr_vector fresh_constants() const;
  int width() const { return width_; }
  z3::context& ctx() { return ctx_; }
  /// A bit-vector literal of this width.
  z3::expr constant(int64_t value);
  /// Where to record every product of two non-constant operands (nullptr: nowhere).
  void log_products(std::vector<ProductTerm>* log) { products_ = log; }

 private:
  class Visitor;
  friend class Visitor;
  z3::expr const_floordiv(const Expr& a, int64_t c);
  z3::expr var_term(const Expr& var_expr);

  z3::context& ctx_;
  IndexBounds& bounds_;
  int width_;
  std::string suffix_;
  std::unordered_map<const VarNode*, z3::expr> vars_;
  std::unordered_map<const ExprNode*, z3::expr> memo_;
  std::unordered_map<const ExprNode*, std::unordered_map<int64_t, z3::expr>> quotients_;
  std::vector<z3::expr> side_;
  std::vector<z3::expr> created_;
  std::vector<ProductTerm>* products_ = nullptr;
  int fresh_ = 0;
};

/// The signed value of a bit-vector numeral (as a Z3 model returns it).
int64_t z3_signed_value(const z3::expr& numeral);

}  // namespace tessel
