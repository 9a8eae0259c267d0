// Pieces the register definition proofs share (verify/definition_proofs.cpp, replica_proofs.cpp):
// the variables of a kernel and of what encloses an access as a VarDomain, and the wording of
// threads, registers, fragment elements and writes in counterexamples.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/layout.h"
#include "verify/index_bounds.h"
#include "verify/kernel_accesses.h"
#include "verify/kernel_domain.h"
#include "verify/kernel_proofs.h"

namespace tessel::definition_detail {

/// Adds the ranges of the loops and the conditions of `frames` (those that depend on loaded data
/// are left out: the domain over-approximates). False when a loop of `frames` never runs.
bool add_enclosing(VarDomain& domain, const std::vector<Enclosing>& frames);

/// The boolean constant.
Expr make_bool(bool value);
/// The conjunction (true for none).
Expr conj(const std::vector<Expr>& terms);

/// Elements of the buffer when its shape is constant.
std::optional<int64_t> buffer_size(const Buffer& b);
/// The product of the buffer's extents.
Expr buffer_size_expr(const Buffer& b);
/// "8" or "n * 4".
std::string size_text(const Buffer& b);

/// " at file:line:col", or "".
std::string at_text(const Stmt& s);
/// Where an access is: its statement's location, else that of the innermost enclosing loop or
/// `if` that has one (" in the loop at file:line:col"); "" when none has.
std::string at_text(const RegisterAccess& a);
/// "thread 37 (warp 1, lane 5)", or with `extra` "thread 37 (warp 1, lane 5, replica 2)".
std::string thread_words(int64_t thread, int warp_size, const std::string& extra = "");
/// What register `reg` of thread `thread` holds: " (element [3] of the fragment, replica 2)",
/// or the multi-index of a local buffer " (C_local[1, 2])"; "" when it holds none.
std::string element_words(const Buffer& b, const Fragment* fragment, int64_t thread, int64_t reg);
/// "it is written at a.py:3:5 (`x[i] = 0`), under `if tx == 0`; ..." or "it is never written".
std::string writes_words(const std::vector<const RegisterAccess*>& writes);

/// Every write of the register array `buffer` of a replicated fragment reaches all replicas.
KernelCheck prove_replicas(const Kernel& kernel, const Buffer& buffer, const Fragment& fragment,
                           const std::vector<const RegisterAccess*>& writes, int warp_size,
                           unsigned timeout_ms);

}  // namespace tessel::definition_detail
