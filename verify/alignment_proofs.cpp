// The alignment proofs of verify/alignment_proofs.h: the byte offset of each fixed-width access,
// a multiple of its size for every value — the Analyzer first, Z3 when it cannot tell.
#include "verify/alignment_proofs.h"

#include "core/error.h"
#include "core/expr_printer.h"
#include "core/vector_copy.h"
#include "verify/definition_parts.h"
#include "verify/enclosed_query.h"
#include "verify/kernel_accesses.h"
#include "verify/per_buffer_checks.h"

namespace tessel {

using namespace proof_detail;       // NOLINT(google-build-using-namespace): this file's helpers
using namespace definition_detail;  // NOLINT(google-build-using-namespace)

namespace {

std::string access_text(const AlignedAccess& a) { return indexed_text(a.buffer, a.indices); }

/// The bits of the access's offset past a multiple of its size: zero when aligned.
Expr misalignment(const AlignedAccess& a) {
  const int64_t bits = int64_t{a.buffer->dtype.storage_bits()} * a.buffer->dtype.lanes;
  return floormod(row_major_offset(a.buffer, a.indices) * make_int(bits), make_int(8 * a.bytes));
}

AccessOutcome prove_one(const Kernel& kernel, const AlignedAccess& a, int warp_size,
                        unsigned timeout_ms) {
  AccessOutcome out;
  if (a.opaque) {
    out.result = "undecided";
    out.message = "the index of " + a.what + " " + access_text(a) + at_text(a.stmt) +
                  " depends on loaded data";
    return out;
  }
  Expr off = misalignment(a);
  {  // The common case: every term of the offset a multiple of the size.
    Analyzer analyzer;
    bind_frames(analyzer, kernel, a.enclosing);
    if (analyzer.can_prove(off == make_int(0))) return out;
  }
  EnclosedQuery q(kernel, a.enclosing);
  if (!q.runs()) return out;
  const bool dropped = q.dropped();
  try {
    z3::check_result res =
        q.find(off != make_int(0), {row_major_offset(a.buffer, a.indices)}, timeout_ms);
    if (res == z3::unsat) return out;
    if (res == z3::unknown) {
      out.result = "undecided";
      out.message = gave_up_text(timeout_ms) + " on " + a.what + " " + access_text(a);
      return out;
    }
    const int64_t bits = int64_t{a.buffer->dtype.storage_bits()} * a.buffer->dtype.lanes;
    int64_t byte = q.value(row_major_offset(a.buffer, a.indices)) * bits / 8;
    out.result = dropped ? "undecided" : "failed";
    out.message = thread_words(q.value(kernel->thread_var), warp_size) + " starts " + a.what +
                  " at " + q.element_text(a.buffer, a.indices) + " (byte " + std::to_string(byte) +
                  " of " + a.buffer->name + ") in `" + statement_text(a.stmt) + "`" +
                  at_text(a.stmt) + symbols_text(q.free_symbols(kernel->thread_var)) +
                  ": not a multiple of " + std::to_string(a.bytes) +
                  " bytes, which a GPU faults on" +
                  (dropped ? " (a condition on loaded data around it was not modelled)" : "");
  } catch (const UserError& err) {
    out.result = "undecided";
    out.message = std::string(err.what()) + " (in " + a.what + " " + access_text(a) + ")";
  }
  return out;
}

}  // namespace

std::vector<KernelCheck> prove_alignment(const Kernel& kernel, int warp_size, unsigned timeout_ms) {
  const std::vector<AlignedAccess> accesses = collect_accesses(kernel).aligned;
  std::vector<KernelCheck> checks;
  for (const auto& [b, list] : group_by_buffer(accesses)) {
    std::string sites;
    for (size_t k = 0; k < list.size() && k < 3; ++k) {
      sites += (k ? ", " : "") + list[k]->what + at_text(list[k]->stmt);
    }
    if (list.size() > 3) sites += ", ...";
    std::string subject =
        list.size() == 1 ? "its fixed-width access ("
                         : "each of its " + std::to_string(list.size()) + " fixed-width accesses (";
    checks.push_back(check_each(
        "alignment of " + b->name + ": " + subject + sites +
            ") starts at a multiple of its size (every thread, block, iteration)",
        list, [&](const AlignedAccess& a) { return prove_one(kernel, a, warp_size, timeout_ms); }));
  }
  return checks;
}

void require_alignment(const Kernel& kernel, const Target& target, const std::string& action) {
  for (const KernelCheck& c : prove_alignment(kernel, target.warp_size, 60000)) {
    if (c.result == "proved") continue;
    user_error("kernel '" + kernel->name + "': " + action +
               " refuses an access that may fault: " + c.counterexample.value_or(c.what) +
               ". Start the run at a multiple of its size, or copy fewer bytes per instruction");
  }
}

}  // namespace tessel
