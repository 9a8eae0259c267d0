// Which registers the earlier writes of a thread have certainly written when it reaches a read:
// the formulas the definition proofs (verify/definition_proofs.h) give to Z3, and a cheap
// enumeration that proves most reads without it.
//
// A write W reaches read R in one of two ways. (1) Same iteration: W comes before R in program
// order and runs in the iterations of their common loops that R runs in. (2) An earlier
// iteration: for a common loop L, W ran in an iteration of L before R's (the outer common loops
// at R's values). What encloses W and not R (its own loops and conditions) must hold: W covers
// register e when for some values of its own loop variables every own condition holds and
// e lies in [index, index + count). Own loops whose variable W does not use need only run once.
// Own loops of a few constant iterations are unrolled into instances (each one simplified);
// others become an existential quantifier.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "verify/kernel_accesses.h"

namespace tessel {

/// A loop of W's own, with its variable renamed when it is a common loop seen in an earlier
/// iteration (then `below` bounds it by R's variable: var < below).
struct OwnLoop {
  Var var;
  Expr min, extent;
  Expr below;  ///< undefined: none
};

/// W for one assignment of its unrolled own loops.
struct WriteInstance {
  std::vector<Expr> conds;  ///< simplified own conditions (none: unconditional)
  Expr index;               ///< simplified first register
};

/// How one write may reach one read.
struct WriteCover {
  const RegisterAccess* write = nullptr;
  std::vector<WriteInstance> instances;  ///< unrolled (or the one instance with no own loop)
  std::vector<OwnLoop> quantified;       ///< own loops left to an existential quantifier
  /// With `quantified`: the own conditions and the index over those loops' variables.
  std::vector<Expr> conds;
  Expr index;
};

/// Own loops unrolled up to this many instances.
constexpr int64_t kUnrollLimit = 1024;

/// How `w` covers registers before `r` in the same iteration (requires w before r in program
/// order), or — with `loop` the position of a loop common to both in `r.enclosing` — in an
/// earlier iteration of that loop. Nullopt when w cannot be modelled (it depends on loaded data:
/// `*unmodelled` is set) or cannot reach r that way.
std::optional<WriteCover> cover_of(const RegisterAccess& w, const RegisterAccess& r,
                                   std::optional<size_t> loop, bool* unmodelled);

/// The number of leading enclosing loops and conditions `a` and `b` share.
size_t common_prefix(const RegisterAccess& a, const RegisterAccess& b);

/// `e` in [index, index + count) as an expression.
Expr covers_expr(const Expr& e, const Expr& index, int64_t count);

}  // namespace tessel
