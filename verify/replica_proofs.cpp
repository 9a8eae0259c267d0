// The replica half of verify/definition_proofs.h: a write of a replicated fragment's registers
// that one replica makes and another, holding the same element, does not make in the same
// iteration (e.g. a store kept to `if tx == 0`, which leaves the other replicas unwritten).
#include <algorithm>

#include "core/error.h"
#include "core/expr_functor.h"
#include "verify/definition_parts.h"
#include "verify/proof_parts.h"
#include "verify/proof_session.h"
#include "verify/write_cover.h"

namespace tessel::definition_detail {

using namespace proof_detail;  // NOLINT(google-build-using-namespace): this file's helpers

namespace {

/// The condition under which `w` runs in thread `thread` (loop ranges included), and whether
/// every part of it could be modelled.
std::pair<Expr, bool> runs_in(const RegisterAccess& w, const Var& tx, const Expr& thread) {
  auto at = [&](const Expr& e) {
    return substitute(e, [&](const Var& v) -> Expr { return v.same_as(tx) ? thread : Expr(); });
  };
  std::vector<Expr> terms;
  for (const Enclosing& f : w.enclosing) {
    if (f.is_loop()) {
      if (!f.min.defined()) return {Expr(), false};
      terms.push_back(f.var >= at(f.min) && f.var < at(f.min + f.extent));
    } else {
      if (!f.cond.defined()) return {Expr(), false};
      terms.push_back(at(f.cond));
    }
  }
  return {conj(terms), true};
}

/// True when every condition and loop range of `w` could be modelled.
bool modelled(const RegisterAccess& w) {
  return std::all_of(w.enclosing.begin(), w.enclosing.end(), [](const Enclosing& f) {
    return f.is_loop() ? f.min.defined() : f.cond.defined();
  });
}

/// True when nothing about `w` — its index, conditions, loop ranges — depends on the thread:
/// every thread runs it alike, so every replica is written alike.
bool thread_independent(const RegisterAccess& w, const Var& tx) {
  if (uses_var(w.index, tx)) return false;
  for (const Enclosing& f : w.enclosing) {
    for (const Expr& e : {f.cond, f.min, f.extent}) {
      if (e.defined() && uses_var(e, tx)) return false;
    }
  }
  return true;
}

/// Ranges of `w`'s loop variables over every thread (for the bit width).
void bound_loops(VarDomain& domain, const RegisterAccess& w) {
  for (const Enclosing& f : w.enclosing) {
    if (!f.is_loop()) continue;
    IndexBounds bounds(domain);
    IntBound lo = bounds.bound(f.min), hi = bounds.bound(f.min + f.extent - make_int(1));
    if (lo.bounded() && hi.bounded()) domain.bound(f.var, lo.min, std::max(lo.min, hi.max));
  }
}

}  // namespace

KernelCheck prove_replicas(const Kernel& kernel, const Buffer& buffer, const Fragment& fragment,
                           const std::vector<const RegisterAccess*>& writes, int warp_size,
                           unsigned timeout_ms) {
  Stopwatch clock;
  const int64_t rep = fragment.replicate();
  KernelCheck check{
      "replicas of fragment " + buffer->name + " (each element in " + std::to_string(rep) +
          " threads): " +
          (writes.size() == 1 ? std::string("its write reaches")
                              : "each of its " + std::to_string(writes.size()) + " writes reach") +
          " every replica (the threads holding an element write it "
          "together)",
      "proved", std::nullopt, 0};
  const Var& tx = kernel->thread_var;
  Var rep1("replica"), rep2("other_replica");
  std::vector<Expr> index(fragment.iter_vars().begin(), fragment.iter_vars().end());
  auto [t1, reg] = fragment.forward(index, rep1);
  Expr t2 = fragment.forward(index, rep2).first;
  std::string unmodelled;
  for (const RegisterAccess* w : writes) {
    if (!w->opaque && thread_independent(*w, tx) && modelled(*w)) continue;
    auto [in1, ok1] = runs_in(*w, tx, t1);
    auto [in2, ok2] = runs_in(*w, tx, t2);
    if (!ok1 || !ok2 || w->opaque) {
      unmodelled = "`" + statement_text(w->stmt) + "`" + at_text(*w);
      continue;
    }
    auto at = [&](const Expr& thread) {
      return substitute(w->index,
                        [&](const Var& v) -> Expr { return v.same_as(tx) ? thread : Expr(); });
    };
    Expr missing =
        in1 && covers_expr(reg, at(t1), w->count) && !(in2 && covers_expr(reg, at(t2), w->count));
    try {
      VarDomain domain = kernel_domain(kernel);
      for (size_t d = 0; d < index.size(); ++d) {
        domain.bound(fragment.iter_vars()[d], 0, fragment.input_shape()[d] - 1);
      }
      domain.bound(rep1, 0, rep - 1).bound(rep2, 0, rep - 1);
      bound_loops(domain, *w);
      ProofSession s(domain, {}, {missing, t1, t2, reg}, timeout_ms);
      z3::check_result res = s.check(s.shared().boolean(missing));
      if (res == z3::unsat) continue;
      if (res == z3::unknown) {
        check.result = "undecided";
        check.counterexample = "Z3 gave up (timeout " + std::to_string(timeout_ms) +
                               " ms) on the write `" + statement_text(w->stmt) + "`";
        continue;
      }
      std::vector<int64_t> element = values(s, s.shared(), fragment.iter_vars());
      std::string idx = "[";
      for (size_t d = 0; d < element.size(); ++d)
        idx += (d ? ", " : "") + std::to_string(element[d]);
      idx += "]";
      int64_t a = s.value(s.shared(), t1), b = s.value(s.shared(), t2);
      std::vector<std::pair<std::string, int64_t>> when;
      for (const Enclosing& f : w->enclosing) {
        if (f.is_loop()) when.emplace_back(f.var.name(), s.value(s.shared(), f.var));
      }
      std::string under;
      for (const Enclosing& f : w->enclosing) {
        if (!f.is_loop()) under += (under.empty() ? "" : " and ") + ("`" + f.text + "`");
      }
      check.result = "failed";
      check.counterexample =
          "element " + idx + " of " + buffer->name + " (register " +
          std::to_string(s.value(s.shared(), reg)) + ") is written by " +
          thread_words(a, warp_size, "replica " + std::to_string(s.value(s.shared(), rep1))) +
          " in `" + statement_text(w->stmt) + "`" + at_text(*w) + symbols_text(when) +
          ", but not by " +
          thread_words(b, warp_size, "replica " + std::to_string(s.value(s.shared(), rep2))) +
          ", which holds the same element: its copy stays unwritten" +
          (under.empty() ? "" : "; the write is under " + under) +
          ". Every replica of a replicated fragment must be written";
      break;
    } catch (const UserError& err) {
      check.result = "undecided";
      check.counterexample =
          std::string(err.what()) + " (in the write `" + statement_text(w->stmt) + "`)";
    }
  }
  if (check.result == "proved" && !unmodelled.empty()) {
    check.result = "undecided";
    check.counterexample = "the write " + unmodelled +
                           " depends on loaded data (its condition, index or loop), which the "
                           "proof does not model";
  }
  check.ms = clock.ms();
  return check;
}

}  // namespace tessel::definition_detail
