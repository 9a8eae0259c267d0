// Differential testing of one random program: the tile level (the reference semantics) against
// the lowered thread level on the same inputs, plus `verify`; and the shrinker that reduces a
// disagreeing program to a small reproducer by deleting steps and shrinking sizes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "interp/tile_interpreter.h"
#include "tests/fuzz_gen/fuzz_program.h"

namespace tessel::fuzz {

enum class Verdict : uint8_t {
  kAgree,     ///< both levels ran and every tensor agrees, with no simulator error
  kRefused,   ///< Tessel refused the program with a user error (construction, tile level, lowering)
  kDisagree,  ///< a bug: the levels differ, the thread level reports an error or throws, or
              ///< Tessel failed with an internal error
};

struct Outcome {
  Verdict verdict = Verdict::kAgree;
  /// Refused: the stage and the error with numbers and names blurred (for counting by reason).
  /// Disagree: the kind ("mismatch", "finding:race", "thread-level error", "internal error").
  std::string reason;
  std::string detail;  ///< the full message or the first mismatch
  bool verify_ran = false;
  bool verify_all_proved = false;
  std::vector<std::string> verify_failed;  ///< the checks verify did not prove
};

struct CheckOptions {
  bool verify = true;
  unsigned verify_timeout_ms = 2000;  ///< per Z3 query
  uint64_t data_seed = 1;             ///< the random inputs
  /// Test hook: changes the thread level's results before the comparison (a planted bug).
  std::function<void(const Program&, TensorMap&)> corrupt;
};

/// Builds, runs and compares `p` at both levels on its target, then verifies it.
Outcome check_program(const Program& p, const CheckOptions& options = {});

/// Reduces `p` while `still_fails` holds: deletes steps (last first), then shrinks sizes, grid,
/// threads, ragged edges and flags; keeps only valid programs. At most `budget` candidates are
/// tried.
Program shrink(const Program& p, const std::function<bool(const Program&)>& still_fails,
               int budget = 300);

/// `error` with names of the program's buffers and every number blurred, cut to one line.
std::string blur_reason(const std::string& error);

}  // namespace tessel::fuzz
