// Prints expressions in the kernel language's Python syntax, with minimal parentheses.
#pragma once

#include <ostream>
#include <string>

#include "core/expr.h"

namespace tessel {

/// `e` as Python source: `by * 128 + tx // 4`, `T.max(x, 0.0)`, `A_shared[i, j]`,
/// `T.cast(x, "float16")`. The exact text is stable (golden tests depend on it).
std::string to_string(const Expr& e);
std::ostream& operator<<(std::ostream& os, const Expr& e);

/// A float literal as Python prints it: shortest text that reads back to the same double,
/// always with a '.' or an exponent ("1.0", "0.5", "1e-06", "inf").
std::string float_literal(double value);

}  // namespace tessel
