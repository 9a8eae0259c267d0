// The floating-point builtins (T.exp, T.sqrt, T.pow, ...) on doubles, shared by the tile-level
// evaluator and the thread-level warp evaluator so both levels compute the same value.
#pragma once

#include <cmath>

#include "core/error.h"
#include "core/expr.h"

namespace tessel {

/// `op` applied to `x` (and `y`, T.pow's exponent), before rounding to the result's dtype.
inline double float_builtin(Builtin op, double x, double y) {
  switch (op) {
    case Builtin::kExp:
      return std::exp(x);
    case Builtin::kExp2:
      return std::exp2(x);
    case Builtin::kLog:
      return std::log(x);
    case Builtin::kLog2:
      return std::log2(x);
    case Builtin::kAbs:
      return std::fabs(x);
    case Builtin::kSqrt:
      return std::sqrt(x);
    case Builtin::kRsqrt:
      return 1.0 / std::sqrt(x);
    case Builtin::kTanh:
      return std::tanh(x);
    case Builtin::kSin:
      return std::sin(x);
    case Builtin::kCos:
      return std::cos(x);
    case Builtin::kFloor:
      return std::floor(x);
    case Builtin::kCeil:
      return std::ceil(x);
    case Builtin::kPow:
      return std::pow(x, y);
    default:
      internal_error("unhandled floating-point builtin");
  }
}

}  // namespace tessel
