// Exact evaluation of integer (index) expressions for given variable values, Python semantics.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "core/expr.h"

namespace tessel {

/// Variable values for eval_int, keyed by the variable node.
using IntEnv = std::unordered_map<const VarNode*, int64_t>;

/// Evaluates an integral expression: floor division and modulo, wrap-around to each node's dtype,
/// shifts and bitwise operations, comparisons and logic as 0/1, integer select, casts between
/// integer types. Requires: every variable of `e` is bound in `env`; no buffer loads, calls or
/// float sub-expressions (user error naming the construct otherwise); no division by zero (user
/// error).
int64_t eval_int(const Expr& e, const IntEnv& env);

/// Python floor division and modulo on int64 (b != 0).
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

}  // namespace tessel
