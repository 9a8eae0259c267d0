// The read half of verify/definition_proofs.h: every register read against the writes that may
// reach it, by enumeration first and Z3 second; then the replica checks (replica_proofs.cpp).
#include "verify/definition_proofs.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "verify/definition_parts.h"
#include "verify/per_buffer_checks.h"
#include "verify/proof_parts.h"
#include "verify/proof_session.h"
#include "verify/write_cover.h"

namespace tessel {

using namespace proof_detail;       // NOLINT(google-build-using-namespace): this file's helpers
using namespace definition_detail;  // NOLINT(google-build-using-namespace)

namespace {

/// What became of one read.
struct ReadOutcome {
  std::string result = "proved";  ///< "proved", "failed", "undecided"
  std::string message;
  bool used_z3 = false;
};

class ReadProver {
 public:
  ReadProver(const Kernel& kernel, const RegisterAccess& read,
             const std::vector<const RegisterAccess*>& writes, const Fragment* fragment,
             int warp_size, unsigned timeout_ms)
      : kernel_(kernel),
        r_(read),
        writes_(writes),
        fragment_(fragment),
        warp_size_(warp_size),
        timeout_ms_(timeout_ms) {}

  ReadOutcome prove() {
    VarDomain domain = kernel_domain(kernel_);
    if (!add_enclosing(domain, r_.enclosing)) return {};  // the read never runs
    if (r_.guard.defined()) domain.assume(r_.guard);
    size_ = buffer_size(r_.buffer);
    index_ = r_.index;
    if (r_.opaque && size_ && *size_ >= r_.count) {
      // The index depends on loaded data (a table lookup): whichever register the data picks
      // must have been written, so the proof is over every register of the buffer.
      Var any("any_register");
      domain.bound(any, 0, *size_ - r_.count);
      index_ = any;
    }
    std::vector<WriteCover> same = covers(std::nullopt);
    if (enumerated(same, domain)) return {};
    ReadOutcome out;
    out.used_z3 = true;
    if (query(same, domain, out)) return out;
    // Not covered in the same iteration: an earlier iteration of a common loop may have written.
    std::vector<WriteCover> all = same;
    for (size_t k = 0; k < r_.enclosing.size(); ++k) {
      if (!r_.enclosing[k].is_loop()) continue;
      std::vector<WriteCover> earlier = covers(k);
      all.insert(all.end(), earlier.begin(), earlier.end());
    }
    if (all.size() > same.size()) {
      out = {};
      out.used_z3 = true;
      query(all, domain, out);
    }
    return out;
  }

 private:
  std::vector<WriteCover> covers(std::optional<size_t> loop) {
    std::vector<WriteCover> out;
    for (const RegisterAccess* w : writes_) {
      bool unmodelled = false;
      std::optional<WriteCover> c = cover_of(*w, r_, loop, &unmodelled);
      if (unmodelled) unmodelled_.insert(w);
      if (c) out.push_back(std::move(*c));
    }
    return out;
  }

  /// Proves the read from the unconditional writes alone when their registers are constants:
  /// the registers the read may touch (bounds of its index) all written, no Z3 call.
  bool enumerated(const std::vector<WriteCover>& covers, const VarDomain& domain) {
    if (!size_ || (r_.opaque && index_.same_as(r_.index))) return false;
    IntBound b;
    try {
      IndexBounds bounds(domain);
      b = bounds.bound(index_);
    } catch (const UserError&) {
      return false;
    }
    if (!b.bounded() || b.min < 0 || b.max + r_.count > *size_) return false;
    std::vector<Expr> known;  // conditions that hold at the read
    for (const Enclosing& f : r_.enclosing) {
      if (!f.is_loop() && f.cond.defined()) known.push_back(f.cond);
    }
    if (r_.guard.defined()) known.push_back(r_.guard);
    auto holds = [&](const Expr& c) {
      return std::any_of(known.begin(), known.end(),
                         [&](const Expr& k) { return structural_equal(k, c); });
    };
    const int64_t lo = b.min, hi = b.max + r_.count - 1;
    std::vector<char> written(static_cast<size_t>(hi - lo + 1), 0);
    for (const WriteCover& c : covers) {
      if (!c.quantified.empty()) continue;
      for (const WriteInstance& inst : c.instances) {
        if (!std::all_of(inst.conds.begin(), inst.conds.end(), holds)) continue;
        // Written just before at the very index the read uses (same iteration).
        if (c.write->count >= r_.count && structural_equal(inst.index, index_)) return true;
        std::optional<int64_t> at = as_const_int(inst.index);
        if (!at) continue;
        for (int64_t x = std::max(lo, *at); x < std::min(hi + 1, *at + c.write->count); ++x) {
          written[static_cast<size_t>(x - lo)] = 1;
        }
      }
    }
    return std::all_of(written.begin(), written.end(), [](char w) { return w != 0; });
  }

  /// Asks Z3 for a thread and iteration whose register no cover writes. True when decided
  /// (proved or failed), with `out` set; false when it failed and other covers may still help.
  bool query(const std::vector<WriteCover>& covers, VarDomain domain, ReadOutcome& out) {
    Var u("reg");
    Expr e = index_;
    if (r_.count > 1) {
      domain.bound(u, 0, r_.count - 1);
      e = e + u;
    }
    Expr size = buffer_size_expr(r_.buffer);
    Expr in_range = e >= make_int(0) && e < size;
    std::vector<Expr> exprs = {e, in_range};
    Expr qf = unconditional_ranges(covers, e);
    for (const WriteCover& c : covers) {
      for (const WriteInstance& inst : c.instances) {
        if (inst.conds.empty() && as_const_int(inst.index)) continue;  // in `qf` already
        qf = qf || (conj(inst.conds) && covers_expr(e, inst.index, c.write->count));
      }
    }
    exprs.push_back(qf);
    std::vector<Var> locals;
    std::vector<Expr> bodies;
    for (const WriteCover& c : covers) {
      if (c.quantified.empty()) continue;
      Expr body = conj(c.conds) && covers_expr(e, c.index, c.write->count);
      for (const OwnLoop& l : c.quantified) {
        body = body && l.var >= l.min && l.var < l.min + l.extent;
        if (l.below.defined()) body = body && l.var < l.below;
        locals.push_back(l.var);
      }
      bodies.push_back(body);
      exprs.push_back(body);
    }
    try {
      VarDomain with_locals = domain;
      bound_locals(with_locals, covers);
      ProofSession s(with_locals, locals, exprs, timeout_ms_);
      z3::expr covered = s.shared().boolean(qf);
      size_t next = 0;
      for (const WriteCover& c : covers) {
        if (c.quantified.empty()) continue;
        Z3ExprTranslator& tr = s.copy("_w" + std::to_string(next), /*quantified=*/true);
        z3::expr body = tr.boolean(bodies[next++]);
        for (const z3::expr& side : tr.side_conditions()) body = body && side;
        covered = covered || z3::exists(tr.fresh_constants(), body);
      }
      z3::check_result res =
          s.check(!(s.shared().boolean(in_range) && covered), /*quantified=*/!bodies.empty());
      if (res == z3::unsat) return true;  // proved
      if (res == z3::unknown) {
        out.result = "undecided";
        out.message = "Z3 gave up (timeout " + std::to_string(timeout_ms_) + " ms) on the read " +
                      read_words();
        return true;
      }
      out.result = unmodelled_.empty() && !r_.opaque ? "failed" : "undecided";
      out.message = counterexample(s, e, u, domain);
      return false;
    } catch (const UserError& err) {
      out.result = "undecided";
      out.message = std::string(err.what()) + " (in the read " + read_words() + ")";
      return true;
    }
  }

  /// Registers the unconditional writes cover with constant indices, merged into ranges.
  Expr unconditional_ranges(const std::vector<WriteCover>& covers, const Expr& e) const {
    std::set<int64_t> regs;
    for (const WriteCover& c : covers) {
      for (const WriteInstance& inst : c.instances) {
        std::optional<int64_t> at = as_const_int(inst.index);
        if (!inst.conds.empty() || !at) continue;
        for (int64_t x = *at; x < *at + c.write->count; ++x) regs.insert(x);
      }
    }
    Expr any = make_bool(false);
    for (auto it = regs.begin(); it != regs.end();) {
      int64_t lo = *it, hi = lo;
      while (++it != regs.end() && *it == hi + 1) ++hi;
      any = any || (lo == hi ? (e == make_int(lo)) : (e >= make_int(lo) && e <= make_int(hi)));
    }
    return any;
  }

  /// Ranges of the quantified loops' variables (for the bit width).
  static void bound_locals(VarDomain& domain, const std::vector<WriteCover>& covers) {
    for (const WriteCover& c : covers) {
      for (const OwnLoop& l : c.quantified) {
        IndexBounds bounds(domain);
        IntBound lo = bounds.bound(l.min), hi = bounds.bound(l.min + l.extent - make_int(1));
        if (!lo.bounded() || !hi.bounded()) {
          user_error("the loop over " + l.var.name() + " has an unbounded range (" +
                     to_string(l.min) + ", " + to_string(l.min + l.extent) + ")");
        }
        domain.bound(l.var, lo.min, std::max(lo.min, hi.max));
      }
    }
  }

  std::string read_words() const { return "`" + statement_text(r_.stmt) + "`" + at_text(r_); }

  /// True when the variable called `name` has one value in `domain` (a grid of one block).
  static bool fixed(const std::string& name, const VarDomain& domain) {
    return std::any_of(domain.ranges.begin(), domain.ranges.end(), [&](const auto& r) {
      return r.first.name() == name && r.second.min == r.second.max;
    });
  }

  std::string counterexample(ProofSession& s, const Expr& e, const Var& u,
                             const VarDomain& domain) {
    const Var& tx = kernel_->thread_var;
    int64_t thread = s.value(s.shared(), tx);
    int64_t reg = s.value(s.shared(), e);
    std::vector<std::pair<std::string, int64_t>> when;
    for (const auto& [name, value] : s.symbol_values()) {
      if (name != tx.name() && name != u.name() && !fixed(name, domain)) {
        when.emplace_back(name, value);
      }
    }
    std::string text = thread_words(thread, warp_size_) + " reads register " + std::to_string(reg) +
                       " of " + r_.buffer->name + element_words(r_.buffer, fragment_, thread, reg) +
                       " in " + read_words() + symbols_text(when) + ", but ";
    if (reg < 0 || (size_ && reg >= *size_)) {
      text += r_.buffer->name + " has " + size_text(r_.buffer) + " registers";
    } else {
      text += "no earlier statement of that thread wrote it; " + writes_words(writes_);
    }
    if (!unmodelled_.empty()) {
      text +=
          " (writes under conditions on loaded data, or at indices computed from it, are "
          "not modelled: check them by hand)";
    }
    if (r_.opaque) text += " (the read's index depends on loaded data: every register counts)";
    return text;
  }

  const Kernel& kernel_;
  const RegisterAccess& r_;
  const std::vector<const RegisterAccess*>& writes_;
  const Fragment* fragment_;
  int warp_size_;
  unsigned timeout_ms_;
  std::optional<int64_t> size_;
  Expr index_;  ///< the read's index; for a data-dependent one, any register of the buffer
  std::set<const RegisterAccess*> unmodelled_;
};

/// One check over every read of a buffer: the first failure (or undecided read) decides it.
KernelCheck prove_reads(const Kernel& kernel, const Buffer& buffer,
                        const std::vector<const RegisterAccess*>& reads,
                        const std::vector<const RegisterAccess*>& writes, const Fragment* fragment,
                        int warp_size, unsigned timeout_ms) {
  Stopwatch clock;
  std::string what =
      "registers of " + buffer->name + ": " +
      (reads.size() == 1 ? std::string("its read")
                         : "each of its " + std::to_string(reads.size()) + " reads") +
      " is of a register its own thread wrote before (every thread, block, "
      "iteration and register)";
  KernelCheck check{what, "proved", std::nullopt, 0};
  std::set<std::string> seen;  // one proof per distinct read (statement, index, guard)
  for (const RegisterAccess* r : reads) {
    std::string key = std::to_string(reinterpret_cast<uintptr_t>(r->stmt.get())) + "|" +
                      to_string(r->index) + "|" + std::to_string(r->count) + "|" +
                      (r->guard.defined() ? to_string(r->guard) : "");
    if (!seen.insert(key).second) continue;
    ReadOutcome o = ReadProver(kernel, *r, writes, fragment, warp_size, timeout_ms).prove();
    if (o.result == "proved") continue;
    check.result = o.result;
    check.counterexample = o.message;
    if (o.result == "failed") break;
  }
  check.ms = clock.ms();
  return check;
}

}  // namespace

std::vector<KernelCheck> prove_register_definitions(const Kernel& kernel, const LayoutMap& layouts,
                                                    int warp_size, unsigned timeout_ms) {
  const std::vector<RegisterAccess> accesses = collect_accesses(kernel).registers;
  std::map<std::string, const Fragment*> fragments;
  for (const auto& [_, d] : layouts.fragments) fragments[d.buffer->name] = &d.layout;
  std::vector<KernelCheck> checks;
  for (const auto& [b, list] : group_by_buffer(accesses)) {
    std::vector<const RegisterAccess*> reads, writes;
    for (const RegisterAccess* a : list) (a->write ? writes : reads).push_back(a);
    auto f = fragments.find(b->name);
    const Fragment* fragment = f == fragments.end() ? nullptr : f->second;
    if (!reads.empty()) {
      checks.push_back(prove_reads(kernel, b, reads, writes, fragment, warp_size, timeout_ms));
    }
    if (fragment && fragment->replicate() > 1 && !writes.empty()) {
      checks.push_back(prove_replicas(kernel, b, *fragment, writes, warp_size, timeout_ms));
    }
  }
  return checks;
}

}  // namespace tessel
