// The Z3 set-up the proofs about one statement of a kernel share (global bounds, alignment,
// barrier parities, TMA boxes): the kernel's variables and the loops and conditions around the
// statement as a domain, one question "can `bad` hold here?", and the model read back.
#pragma once

#include <z3++.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/analyzer.h"
#include "core/kernel.h"
#include "verify/kernel_accesses.h"
#include "verify/proof_session.h"

namespace tessel {

/// Binds the kernel's variables (bind_kernel_vars) and the constant ranges of `frames`' loops in
/// `analyzer`: the cheap first try before Z3.
void bind_frames(Analyzer& analyzer, const Kernel& kernel, const std::vector<Enclosing>& frames);

/// "A[i, j + 1]": the buffer's name and the index expressions as the IR prints them.
std::string indexed_text(const Buffer& b, const std::vector<Expr>& indices);

/// Questions about the points of a kernel at which a statement runs: its thread, block and
/// symbolic sizes (kernel_domain) and the values of the loops and conditions of `frames`
/// (definition_detail::add_enclosing).
class EnclosedQuery {
 public:
  EnclosedQuery(const Kernel& kernel, const std::vector<Enclosing>& frames);
  EnclosedQuery(const EnclosedQuery&) = delete;
  EnclosedQuery& operator=(const EnclosedQuery&) = delete;

  /// False when a loop of the frames never runs: the statement never does.
  bool runs() const { return runs_; }
  /// True when a frame's condition depends on loaded data and was left out, so a model may be
  /// a point the statement never runs at.
  bool dropped() const { return dropped_; }
  /// The domain, for further bounds and facts before `find`.
  VarDomain& domain() { return domain_; }

  /// Asks Z3 for a point of the domain at which `bad` holds. `exprs` are the other expressions
  /// whose values the caller reads back (with `bad` they fix the bit width). Each call starts a
  /// fresh session over the domain as it is then. Throws UserError as ProofSession does.
  z3::check_result find(const Expr& bad, const std::vector<Expr>& exprs, unsigned timeout_ms);
  /// The session of the last `find`. Requires: `find` was called.
  ProofSession& session() { return *session_; }
  /// The value of `e` in the model of the last `find` (which answered sat).
  int64_t value(const Expr& e) { return session_->value(session_->shared(), e); }
  /// "A[3, 8]": the values of `indices` in that model.
  std::string element_text(const Buffer& b, const std::vector<Expr>& indices);
  /// The model's symbolic values, by name, except `thread`'s and those the domain fixes.
  std::vector<std::pair<std::string, int64_t>> free_symbols(const Var& thread);

 private:
  VarDomain domain_;
  bool runs_ = true;
  bool dropped_ = false;
  std::unique_ptr<ProofSession> session_;
};

/// "Z3 gave up (timeout 500 ms)".
std::string gave_up_text(unsigned timeout_ms);

}  // namespace tessel
