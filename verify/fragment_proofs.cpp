// Fragment proofs: replication (each element in exactly `replicate` distinct threads, no register
// slot shared) and equivalence of two fragments' owner sets.
#include <algorithm>

#include "core/error.h"
#include "verify/layout_proofs.h"
#include "verify/proof_parts.h"
#include "verify/proof_session.h"

namespace tessel {

using namespace proof_detail;  // NOLINT(google-build-using-namespace): this file's helpers

namespace {

/// The fragment's iter vars followed by its replicate var, and their extents.
struct FragmentBox {
  std::vector<Var> vars;
  std::vector<Expr> extents;
};

FragmentBox box_of(const Fragment& f) {
  FragmentBox b;
  b.vars = f.iter_vars();
  for (int64_t e : f.input_shape()) b.extents.push_back(make_int(e));
  b.vars.push_back(f.replicate_var());
  b.extents.push_back(make_int(f.replicate()));
  return b;
}

std::vector<Expr> fragment_exprs(const Fragment& f, const FragmentBox& box) {
  std::vector<Expr> all = {f.forward_thread(), f.local_index()};
  for (size_t d = 0; d < box.vars.size(); ++d) all.push_back(box.vars[d] < box.extents[d]);
  return all;
}

/// "C_frag[3, 4]", plus " (replica 1)" when the fragment is replicated.
std::string element_text(const std::string& name, const Fragment& f,
                         const std::vector<int64_t>& point) {
  std::vector<int64_t> index(point.begin(), point.end() - 1);
  std::string s = format_index(name, index);
  if (f.replicate() > 1) s += " (replica " + std::to_string(point.back()) + ")";
  return s;
}

/// Two replicas of one element in one thread.
ProofResult replicas_distinct(const Fragment& f, const ProofOptions& options, ProofResult r,
                              const Stopwatch& clock) {
  FragmentBox box = box_of(f);
  VarDomain dom = with_box_ranges(options.domain, box.vars, box.extents, options.name);
  ProofSession s(dom, box.vars, fragment_exprs(f, box), options.timeout_ms, options.force_width);
  Z3ExprTranslator& x = s.copy("_x");
  Z3ExprTranslator& y = s.copy("_y");
  for (const Var& v : f.iter_vars()) y.bind(v, x.var(v));  // the same element in both copies
  const Var& rep = f.replicate_var();
  z3::expr goal = in_box(x, box.vars, box.extents) && in_box(y, {rep}, {make_int(f.replicate())}) &&
                  z3::slt(x.var(rep), y.var(rep)) &&
                  x.bv(f.forward_thread()) == y.bv(f.forward_thread());
  z3::check_result res = s.check(goal);
  if (res == z3::unsat) return proved(r, clock);
  if (res == z3::unknown) return undecided(r, clock, options.timeout_ms);
  Counterexample cex;
  std::vector<int64_t> index = values(s, x, f.iter_vars());
  int64_t r1 = values(s, x, {rep})[0], r2 = values(s, y, {rep})[0];
  auto [thread, local] = f.map_fragment(index, r1);
  internal_check(
      options.force_width > 0 || !s.exact_in_dtypes() || f.map_fragment(index, r2).first == thread,
      "replication counterexample does not replay");
  cex.indices = {index};
  cex.output = {thread, local};
  cex.text = format_index(options.name, index) + " is held twice by thread " +
             std::to_string(thread) + " (replicas " + std::to_string(r1) + " and " +
             std::to_string(r2) + "): replicate = " + std::to_string(f.replicate()) + " needs " +
             std::to_string(f.replicate()) + " distinct threads per element";
  return failed(r, clock, std::move(cex));
}

/// Two (element, replica) pairs in one (thread, local) register slot.
ProofResult slots_distinct(const Fragment& f, const ProofOptions& options, ProofResult r,
                           const Stopwatch& clock) {
  FragmentBox box = box_of(f);
  VarDomain dom = with_box_ranges(options.domain, box.vars, box.extents, options.name);
  ProofSession s(dom, box.vars, fragment_exprs(f, box), options.timeout_ms, options.force_width);
  Z3ExprTranslator& x = s.copy("_x");
  Z3ExprTranslator& y = s.copy("_y");
  z3::expr goal = in_box(x, box.vars, box.extents) && in_box(y, box.vars, box.extents) &&
                  lex_less(x, y, box.vars) &&
                  x.bv(f.forward_thread()) == y.bv(f.forward_thread()) &&
                  x.bv(f.local_index()) == y.bv(f.local_index());
  z3::check_result res = s.check(goal);
  if (res == z3::unsat) return proved(r, clock);
  if (res == z3::unknown) return undecided(r, clock, options.timeout_ms);
  Counterexample cex;
  std::vector<int64_t> p1 = values(s, x, box.vars), p2 = values(s, y, box.vars);
  std::vector<int64_t> i1(p1.begin(), p1.end() - 1), i2(p2.begin(), p2.end() - 1);
  auto [thread, local] = f.map_fragment(i1, p1.back());
  internal_check(options.force_width > 0 || !s.exact_in_dtypes() ||
                     f.map_fragment(i2, p2.back()) == std::make_pair(thread, local),
                 "register-slot counterexample does not replay");
  cex.indices = {i1, i2};
  cex.output = {thread, local};
  cex.text = element_text(options.name, f, p1) + " and " + element_text(options.name, f, p2) +
             " both map to thread " + std::to_string(thread) + ", local " + std::to_string(local);
  return failed(r, clock, std::move(cex));
}

/// The owner threads of `index` in `f`, sorted.
std::vector<int64_t> owners(const Fragment& f, const std::vector<int64_t>& index) {
  std::vector<int64_t> t;
  for (int64_t rep = 0; rep < f.replicate(); ++rep) t.push_back(f.map_fragment(index, rep).first);
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

std::string set_text(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "}";
}

/// Some element owned by a thread in `a` that owns it in no replica of `b`.
ProofResult owners_included(const Fragment& a, const Fragment& b, const std::string& a_name,
                            const std::string& b_name, const ProofOptions& options, ProofResult r,
                            const Stopwatch& clock) {
  FragmentBox box = box_of(a);
  std::vector<Expr> index(a.iter_vars().begin(), a.iter_vars().end());
  std::vector<Expr> b_threads;
  for (int64_t rep = 0; rep < b.replicate(); ++rep) {
    b_threads.push_back(b.forward(index, make_int(rep)).first);
  }
  std::vector<Expr> exprs = fragment_exprs(a, box);
  exprs.insert(exprs.end(), b_threads.begin(), b_threads.end());
  VarDomain dom = with_box_ranges(options.domain, box.vars, box.extents, options.name);
  ProofSession s(dom, box.vars, exprs, options.timeout_ms, options.force_width);
  Z3ExprTranslator& x = s.copy("_x");
  z3::expr t = x.bv(a.forward_thread());
  z3::expr goal = in_box(x, box.vars, box.extents);
  for (const Expr& bt : b_threads) goal = goal && t != x.bv(bt);
  z3::check_result res = s.check(goal);
  if (res == z3::unsat) return proved(r, clock);
  if (res == z3::unknown) return undecided(r, clock, options.timeout_ms);
  Counterexample cex;
  std::vector<int64_t> p = values(s, x, box.vars);
  std::vector<int64_t> idx(p.begin(), p.end() - 1);
  int64_t thread = a.map_fragment(idx, p.back()).first;
  cex.indices = {idx};
  cex.output = {thread};
  cex.text = format_index(options.name, idx) + " is held by thread " + std::to_string(thread) +
             " in " + a_name + " but not in " + b_name +
             " (owners there: " + set_text(owners(b, idx)) + ")";
  return failed(r, clock, std::move(cex));
}

}  // namespace

ProofResult prove_replication(const Fragment& fragment, const ProofOptions& options) {
  Stopwatch clock;
  ProofResult r = start(options.name + " holds each element in exactly " +
                        std::to_string(fragment.replicate()) + " thread(s), one register each");
  if (fragment.replicate() > 1) {
    ProofResult distinct = replicas_distinct(fragment, options, r, clock);
    if (!distinct.holds) return distinct;
  }
  return slots_distinct(fragment, options, r, clock);
}

ProofResult prove_equivalent(const Fragment& a, const Fragment& b, const ProofOptions& options) {
  Stopwatch clock;
  ProofResult r = start("the two fragments of " + options.name + " have the same owner threads");
  if (a.input_shape() != b.input_shape()) {
    r.holds = false;
    r.message = "the fragments have different input shapes: " + list_string(a.input_shape()) +
                " vs " + list_string(b.input_shape());
    r.ms = clock.ms();
    return r;
  }
  ProofResult ab = owners_included(a, b, "the first fragment", "the second", options, r, clock);
  if (!ab.holds) return ab;
  return owners_included(b, a, "the second fragment", "the first", options, r, clock);
}

}  // namespace tessel
