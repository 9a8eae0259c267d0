// The bounds proofs of verify/global_bounds.h: the row-major offset of each element access of a
// global tensor within [0, its size) — the Analyzer first, Z3 when it cannot tell.
#include "verify/global_bounds.h"

#include "core/error.h"
#include "core/expr_functor.h"
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

Expr elements(const Buffer& b) {
  Expr n = b->shape[0];
  for (size_t d = 1; d < b->shape.size(); ++d) n = n * b->shape[d];
  return n;
}

std::string access_text(const GlobalAccess& a) { return indexed_text(a.buffer, a.indices); }

AccessOutcome prove_one(const Kernel& kernel, const GlobalAccess& a, const std::string& kind,
                        int warp_size, unsigned timeout_ms) {
  AccessOutcome out;
  const std::string what = (a.write ? "store to " : "load of ") + access_text(a);
  if (a.opaque) {
    out.result = "undecided";
    out.message = "the index of the " + what + at_text(a.stmt) + " depends on loaded data";
    return out;
  }
  const Expr off = row_major_offset(a.buffer, a.indices), size = elements(a.buffer);
  Expr bad = off < make_int(0) || off >= size;
  std::vector<Expr> divisors;  // of the index's // and %: zero is as wrong as out of bounds
  for (const Expr& index : a.indices) {
    pre_order_visit(index, [&](const Expr& e) {
      if (e->kind == ExprKind::kFloorDiv || e->kind == ExprKind::kFloorMod) {
        divisors.push_back(expr_children(e)[1]);
      }
    });
  }
  {  // The common case: the Analyzer bounds the offset over the loops' ranges.
    Analyzer analyzer;
    bind_frames(analyzer, kernel, a.enclosing);
    bool nonzero = true;
    for (const Expr& d : divisors) nonzero = nonzero && analyzer.can_prove(d != make_int(0));
    if (!a.guard.defined() && nonzero && analyzer.can_prove(!bad)) return out;
  }
  EnclosedQuery q(kernel, a.enclosing);
  if (!q.runs()) return out;
  if (a.guard.defined()) q.domain().assume(a.guard);
  const bool dropped = q.dropped();
  try {
    for (const Expr& d : divisors) {
      if (q.find(d == make_int(0), {d}, timeout_ms) != z3::sat) continue;
      out.result = dropped ? "undecided" : "failed";
      out.message = thread_words(q.value(kernel->thread_var), warp_size) + " divides by zero (" +
                    to_string(d) + " is 0) in the index of the " + what + " in `" +
                    statement_text(a.stmt) + "`" + at_text(a.stmt) +
                    (dropped ? " (a condition on loaded data around it was not modelled)" : "");
      return out;
    }
    z3::check_result res = q.find(bad, {off}, timeout_ms);
    if (res == z3::unsat) return out;
    if (res == z3::unknown) {
      out.result = "undecided";
      out.message = gave_up_text(timeout_ms) + " on the " + what;
      return out;
    }
    out.result = dropped ? "undecided" : "failed";
    out.message = thread_words(q.value(kernel->thread_var), warp_size) +
                  (a.write ? " stores to " : " loads ") + q.element_text(a.buffer, a.indices) +
                  " (element " + std::to_string(q.value(off)) + ") in `" + statement_text(a.stmt) +
                  "`" + at_text(a.stmt) + symbols_text(q.free_symbols(kernel->thread_var)) +
                  ": outside the " + kind +
                  (dropped ? " (a condition on loaded data around it was not modelled)" : "");
  } catch (const UserError& err) {
    out.result = "undecided";
    out.message = std::string(err.what()) + " (in the " + what + ")";
  }
  return out;
}

}  // namespace

std::vector<KernelCheck> prove_global_bounds(const Kernel& launch,
                                             const std::vector<Buffer>& scratch, int warp_size,
                                             unsigned timeout_ms) {
  const std::vector<GlobalAccess> accesses = collect_accesses(launch).global;
  std::vector<KernelCheck> checks;
  for (const auto& [b, list] : group_by_buffer(accesses)) {
    bool is_scratch = false;
    for (const Buffer& s : scratch) is_scratch |= s.get() == b.get();
    std::string shape;
    for (size_t d = 0; d < b->shape.size(); ++d) shape += (d ? ", " : "") + to_string(b->shape[d]);
    const std::string head = is_scratch ? "bounds of scratch " + b->name + " (T.alloc_global, ["
                                        : "bounds of tensor " + b->name + " ([";
    const std::string kind = is_scratch ? "scratch tensor " + b->name + " (T.alloc_global)"
                                        : "tensor " + b->name + " [" + shape + "]";
    checks.push_back(check_each(
        head + shape + "] " + b->dtype.name() + "): each of its " + std::to_string(list.size()) +
            " element accesses inside it (every thread, block, iteration)",
        list,
        [&](const GlobalAccess& a) { return prove_one(launch, a, kind, warp_size, timeout_ms); }));
  }
  return checks;
}

}  // namespace tessel
