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

#include <z3++.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/expr.h"
#include "verify/index_bounds.h"

namespace tessel {

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
  /// The term `v` stands for: a fresh constant the first time an unbound variable is met, whose
  /// range (from the bounds) is then recorded in side_conditions().
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
  // Memo tables are keyed by node address; `kept_` holds those nodes alive so that an address is
  // never reused by a different expression while this translator lives.
  std::unordered_map<const ExprNode*, z3::expr> memo_;
  std::unordered_map<const ExprNode*, std::unordered_map<int64_t, z3::expr>> quotients_;
  std::vector<Expr> kept_;
  std::vector<z3::expr> side_;
  std::vector<z3::expr> created_;
  std::vector<ProductTerm>* products_ = nullptr;
  int fresh_ = 0;
};

/// The signed value of a bit-vector numeral (as a Z3 model returns it).
int64_t z3_signed_value(const z3::expr& numeral);

}  // namespace tessel
