// The message of an integer division or modulo by zero met while running a kernel, worded alike
// at tile level (interp/scalar_eval.cpp) and thread level (interp/thread_eval.cpp).
#pragma once

#include <string>
#include <vector>

#include "core/expr.h"

namespace tessel {

/// "load of A[i // (j - j), 0]": an access and the index expressions it was evaluating.
std::string access_words(const char* access, const std::string& buffer,
                         const std::vector<Expr>& indices);

/// "<where>: integer division by zero in `i // (j - j)` (the divisor `j - j` is 0), in an index
/// of the load of A[i // (j - j), 0]; guard the division ..." — `where` names the kernel, block,
/// thread and source line; `access` (from access_words, "" outside an index) the buffer and
/// its indices. Long expressions are cut at 200 characters.
std::string division_by_zero_message(const std::string& where, const Expr& division,
                                     const std::string& access);

}  // namespace tessel
