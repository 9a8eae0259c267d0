// Bank-conflict proofs for one warp-wide shared-memory access, for every value of its symbolic
// variables (a loop index k, a tile origin): conflict freedom and the maximum conflict degree,
// under the bank rules of core/bank_rules.h.
//
// The access: lane l (in [0, warp_size)) reads or writes `width_bytes` bytes starting at the
// storage offset of buffer index `index(l)` under `layout`. Degree >= d is the query "d distinct
// 4-byte words in one bank, each touched by an active lane of one phase"; the maximum degree is
// found by asking for d = 2, evaluating the model's symbol values exactly (count_wavefronts) to
// get a degree D, then asking for D + 1, until Z3 says no.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/bank_rules.h"
#include "core/int_eval.h"
#include "core/layout.h"
#include "verify/layout_proofs.h"

namespace tessel {

/// One warp-wide shared-memory access.
struct BankAccess {
  std::string buffer = "A_shared";  ///< the name used in messages
  Layout layout;                    ///< logical index -> storage index of the buffer
  DataType dtype = DataType::f16();
  Var lane = Var("lane");  ///< ranges over [0, warp_size)
  /// The logical index lane `lane` accesses (ldmatrix: the first element of the 16-byte row the
  /// lane addresses). May mention symbolic variables (ranges in ProofOptions::domain).
  std::vector<Expr> index;
  Expr active;          ///< which lanes take part (undefined: all)
  int width_bytes = 0;  ///< bytes per lane; 0: the dtype's size (ldmatrix: 16)
  bool ldmatrix = false;
  bool write = false;      ///< only AMD's 16-byte accesses distinguish writes
  int64_t base_bytes = 0;  ///< byte address of storage offset 0

  /// The access width actually used.
  int access_bytes() const;
  /// The byte address lane `lane` starts at: base + (row-major linearisation of the layout's
  /// output over its output shape) * bits / 8.
  Expr byte_address() const;
};

/// The exact request cost when the symbolic variables take the values in `symbols`.
BankCount count_access(const BankAccess& access, const BankModel& model, const IntEnv& symbols);

/// The request itself at `symbols`: every lane's first byte address (0 for inactive lanes) and
/// the active lanes, as count_wavefronts and worst_phase (core/bank_phase.h) take them.
struct BankRequest {
  std::vector<int64_t> addr;
  uint64_t mask = 0;
};
BankRequest access_request(const BankAccess& access, const BankModel& model,
                           const IntEnv& symbols);

/// A bank proof: ProofResult (holds = conflict-free for every symbol value) plus the worst case.
struct BankProofResult : ProofResult {
  int max_degree = 0;  ///< most distinct words one bank serves in one phase (1: conflict-free)
};

/// Proves the access conflict-free, or finds the worst conflict (maximum degree) with the lanes,
/// indices and words involved. `compute_max_degree` false stops at the first conflict found.
BankProofResult prove_conflict_free(const BankAccess& access, const BankModel& model,
                                    const ProofOptions& options = {},
                                    bool compute_max_degree = true);

}  // namespace tessel
