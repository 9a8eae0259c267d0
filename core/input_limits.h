// The limits on what the front ends accept — kernel files, layout specs, `banks --access`
// lambdas: they bound the parsers' recursion and the size of every expression later passes walk.
// docs/limits.md lists them with the messages a user sees; real kernels stay far below each.
#pragma once

#include <cstdint>

namespace tessel {

/// Brackets ( [ { open at once, in one statement or one spec.
inline constexpr int kMaxBracketDepth = 64;
/// Unary operators in a row (`- - ~x`); also the most `**` and conditional expressions
/// (`x if c else y`, `lambda`) in one statement or spec.
inline constexpr int kMaxUnaryRun = 64;
/// Tokens in one statement of a kernel file, or in one spec or lambda.
inline constexpr int kMaxLineTokens = 4000;
/// Height of an accepted expression: operations nested inside each other.
inline constexpr int kMaxExprDepth = 160;
/// Size of an accepted expression read as a tree, each use of a shared sub-expression counted
/// (`e2 = e1 + e1` doubles it): the work of one walk over it.
inline constexpr uint64_t kMaxExprSize = uint64_t{1} << 16;
/// Dimensions of a layout's input or output.
inline constexpr int kMaxLayoutRank = 16;

}  // namespace tessel
