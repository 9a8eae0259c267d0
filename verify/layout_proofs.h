// Z3 proofs about layouts and fragments over their whole index space: injective, surjective onto
// the output box, bijective, in range; fragment replication and equivalence. A failed proof comes
// back with a counterexample in the user's terms: "A_shared[63, 64] and A_shared[64, 0] both map
// to offset 4096".
//
// Extents may be symbolic: an IndexMap's input and output shapes are expressions over free
// variables whose ranges and extra facts the caller gives in a VarDomain (row length n with
// 1 <= n <= 4096, n % 8 == 0), so one proof covers every size. Every counterexample is replayed
// with the exact evaluator (core/int_eval.h) before it is reported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/layout.h"
#include "verify/z3_expr.h"

namespace tessel {

/// A concrete witness that a property fails.
struct Counterexample {
  /// The input indices involved: two colliding indices, or one index (out of range, a thread
  /// holding it twice), or none (a missing output).
  std::vector<std::vector<int64_t>> indices;
  /// The storage index they map to (or the missing / out-of-range output). For fragments:
  /// {thread, local}.
  std::vector<int64_t> output;
  /// Lanes involved (bank proofs), parallel to `indices`.
  std::vector<int64_t> lanes;
  /// Values of the symbolic variables at the counterexample, in the order the domain lists them.
  std::vector<std::pair<std::string, int64_t>> symbols;
  /// The whole story in one sentence, in the user's terms.
  std::string text;
};

/// The outcome of one proof.
struct ProofResult {
  bool holds = false;                 ///< proved for every point of the domain
  bool decided = true;                ///< false when Z3 gave up (timeout): holds is false then
  std::optional<Counterexample> cex;  ///< set when the property fails
  double ms = 0;                      ///< wall time of the proof, translation included
  std::string what;                   ///< "A_shared is injective"
  std::string message;                ///< "proved", or the counterexample's text
};

/// A layout-like map whose extents may be symbolic: iter var d ranges over [0, input_shape[d]),
/// and the output box is [0, output_shape[d]) per output dimension.
struct IndexMap {
  std::vector<Var> iter_vars;
  std::vector<Expr> input_shape;
  std::vector<Expr> forward_index;
  std::vector<Expr> output_shape;

  /// The concrete layout's map, with its own output shape.
  static IndexMap of(const Layout& layout);
};

/// What every proof takes besides the map.
struct ProofOptions {
  std::string name = "A";       ///< the buffer name used in messages
  VarDomain domain;             ///< ranges and facts of symbolic variables
  unsigned timeout_ms = 60000;  ///< per Z3 query
  int force_width = 0;          ///< 0: chosen by IndexBounds; tests set it to show wrap-around
  /// Surjectivity of a map that is not an injection into an equal-sized box needs a quantifier
  /// ("some output has no preimage"), which Z3 often cannot decide; concrete maps with at most
  /// this many input points are decided by enumeration instead (0: always ask Z3).
  int64_t enumerate_limit = int64_t{1} << 22;
};

/// No two points of the input box map to one output.
ProofResult prove_injective(const IndexMap& map, const ProofOptions& options = {});
/// Every point of the output box is the image of some input point.
ProofResult prove_surjective(const IndexMap& map, const ProofOptions& options = {});
/// In range, injective and surjective (the first failure is reported).
ProofResult prove_bijective(const IndexMap& map, const ProofOptions& options = {});
/// Every input point maps inside the output box.
ProofResult prove_in_range(const IndexMap& map, const ProofOptions& options = {});

/// The four facts about one map, each proved once (bijective reuses the other three: an
/// injective map into a box of equal size is onto it).
struct LayoutProofs {
  ProofResult in_range, injective, surjective, bijective;
};
LayoutProofs prove_layout(const IndexMap& map, const ProofOptions& options = {});
LayoutProofs prove_layout(const Layout& layout, const ProofOptions& options = {});

ProofResult prove_injective(const Layout& layout, const ProofOptions& options = {});
ProofResult prove_surjective(const Layout& layout, const ProofOptions& options = {});
ProofResult prove_bijective(const Layout& layout, const ProofOptions& options = {});
ProofResult prove_in_range(const Layout& layout, const ProofOptions& options = {});
/// Both layouts have one input shape and agree on every point.
ProofResult prove_equal(const Layout& a, const Layout& b, const ProofOptions& options = {});

/// Each element is held by exactly replicate() threads (replicas of one element go to distinct
/// threads, so no thread holds an element twice) and no two (element, replica) pairs share one
/// (thread, local) register slot.
ProofResult prove_replication(const Fragment& fragment, const ProofOptions& options = {});
/// Same input shape and, for every element, the same set of owner threads (locals may differ).
ProofResult prove_equivalent(const Fragment& a, const Fragment& b,
                             const ProofOptions& options = {});

/// "A_shared[63, 64]".
std::string format_index(const std::string& name, const std::vector<int64_t>& index);

}  // namespace tessel
