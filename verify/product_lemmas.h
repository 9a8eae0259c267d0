// Linear abstraction of non-linear products, so that symbolic-size proofs stay fast.
//
// A bit-blasted multiplier of two variables (i * n, a row index times a symbolic row length) makes
// even simple facts hard for the SAT solver: "i1 * n + j1 == i2 * n + j2 with i1 < i2, j < n" is
// out of reach in minutes. Replacing each such product P = a * b by a fresh constant constrained
// only by true linear facts about it gives an over-approximation: if the abstracted query is
// unsatisfiable, so is the exact one. The facts used (all exact, computed at a width with room to
// spare so none of them can wrap):
// - P's interval bounds;
// - the four McCormick relaxations (a - al)(b - bl) >= 0, (ah - a)(bh - b) >= 0,
//   (a - al)(bh - b) >= 0, (ah - a)(b - bl) >= 0 expanded as linear inequalities in a, b, P;
// - across two copies of one product (injectivity's x and y): when one operand agrees and the
//   other differs, the products differ by at least the agreeing operand (for a sign-known
//   operand): a1 < a2, b1 == b2 >= 0  =>  P1 + b1 <= P2.
// When the abstraction is satisfiable the caller runs the exact query for a real counterexample.
#pragma once

#include <z3++.h>

#include <vector>

#include "verify/z3_expr.h"

namespace tessel {

/// The abstraction of `formula`: every product term of `products` replaced by a fresh constant,
/// conjoined with the lemmas above. `width` is the width of the products' terms.
z3::expr abstract_products(z3::context& ctx, const z3::expr& formula,
                           const std::vector<ProductTerm>& products, int width);

}  // namespace tessel
