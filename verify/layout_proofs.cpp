// Injectivity, surjectivity, bijectivity and range proofs of layouts (possibly symbolic in size).
#include "verify/layout_proofs.h"

#include <chrono>

#include "core/error.h"
#include "core/int_eval.h"
#include "verify/proof_parts.h"
#include "verify/proof_session.h"

namespace tessel {

using namespace proof_detail;  // NOLINT(google-build-using-namespace): this file's helpers

IndexMap IndexMap::of(const Layout& layout) {
  IndexMap m;
  m.iter_vars = layout.iter_vars();
  for (int64_t e : layout.input_shape()) m.input_shape.push_back(make_int(e));
  m.forward_index = layout.forward_index();
  for (int64_t e : layout.output_shape()) m.output_shape.push_back(make_int(e));
  return m;
}

namespace {

void check_map(const IndexMap& map) {
  if (map.iter_vars.size() != map.input_shape.size()) {
    user_error("an index map needs one iter var per input extent (" +
               std::to_string(map.iter_vars.size()) + " vars, " +
               std::to_string(map.input_shape.size()) + " extents)");
  }
  if (map.forward_index.size() != map.output_shape.size()) {
    user_error("an index map needs one output extent per forward expression (" +
               std::to_string(map.forward_index.size()) + " expressions, " +
               std::to_string(map.output_shape.size()) + " extents)");
  }
}

/// The expressions whose values a map's proofs compute.
std::vector<Expr> map_exprs(const IndexMap& map) {
  std::vector<Expr> all = map.forward_index;
  for (size_t d = 0; d < map.iter_vars.size(); ++d)
    all.push_back(map.iter_vars[d] < map.input_shape[d]);
  for (size_t d = 0; d < map.forward_index.size(); ++d) {
    all.push_back(map.forward_index[d] < map.output_shape[d]);
  }
  all.push_back(product(map.input_shape) != product(map.output_shape));
  return all;
}

std::string output_text(const std::vector<int64_t>& out) {
  if (out.size() == 1) return "offset " + std::to_string(out[0]);
  return "storage index " + tuple_string(out);
}

std::string box_text(const IndexMap& map, const IntEnv& env) {
  std::vector<int64_t> shape;
  for (const Expr& e : map.output_shape) shape.push_back(eval_int(e, env));
  return list_string(shape);
}

/// Evaluates the forward map at `index` (symbols from `env`).
std::vector<int64_t> apply(const IndexMap& map, const std::vector<int64_t>& index, IntEnv env) {
  for (size_t d = 0; d < index.size(); ++d) env[map.iter_vars[d].operator->()] = index[d];
  std::vector<int64_t> out;
  for (const Expr& f : map.forward_index) out.push_back(eval_int(f, env));
  return out;
}

struct Setup {
  VarDomain domain;
  std::vector<Expr> exprs;
};

Setup setup(const IndexMap& map, const ProofOptions& options) {
  check_map(map);
  Setup s;
  s.domain = with_box_ranges(options.domain, map.iter_vars, map.input_shape, options.name);
  s.exprs = map_exprs(map);
  return s;
}

/// Asserts that the copy's iter vars lie in the (possibly symbolic) input box.
z3::expr in_input_box(Z3ExprTranslator& tr, const IndexMap& map) {
  return in_box(tr, map.iter_vars, map.input_shape);
}

ProofResult injective_impl(const IndexMap& map, const ProofOptions& options) {
  Stopwatch clock;
  ProofResult r = start(options.name + " is injective");
  Setup st = setup(map, options);
  ProofSession s(st.domain, map.iter_vars, st.exprs, options.timeout_ms, options.force_width);
  Z3ExprTranslator& x = s.copy("_x");
  Z3ExprTranslator& y = s.copy("_y");
  z3::expr same = s.ctx().bool_val(true);
  for (const Expr& f : map.forward_index) same = same && x.bv(f) == y.bv(f);
  z3::expr goal =
      in_input_box(x, map) && in_input_box(y, map) && lex_less(x, y, map.iter_vars) && same;
  z3::check_result res = s.check(goal);
  if (res == z3::unsat) return proved(r, clock);
  if (res == z3::unknown) return undecided(r, clock, options.timeout_ms);
  Counterexample cex;
  cex.indices = {values(s, x, map.iter_vars), values(s, y, map.iter_vars)};
  cex.symbols = s.symbol_values();
  IntEnv env = s.symbol_env();
  cex.output = apply(map, cex.indices[0], env);
  if (options.force_width == 0 && s.exact_in_dtypes()) {
    internal_check(apply(map, cex.indices[1], env) == cex.output,
                   "injectivity counterexample does not replay");
  }
  cex.text = format_index(options.name, cex.indices[0]) + " and " +
             format_index(options.name, cex.indices[1]) + " both map to " +
             output_text(cex.output) + symbols_text(cex.symbols);
  return failed(r, clock, std::move(cex));
}

ProofResult in_range_impl(const IndexMap& map, const ProofOptions& options) {
  Stopwatch clock;
  ProofResult r = start(options.name + " maps into its output box");
  Setup st = setup(map, options);
  ProofSession s(st.domain, map.iter_vars, st.exprs, options.timeout_ms, options.force_width);
  Z3ExprTranslator& x = s.copy("_x");
  z3::expr outside = s.ctx().bool_val(false);
  for (size_t d = 0; d < map.forward_index.size(); ++d) {
    z3::expr f = x.bv(map.forward_index[d]);
    outside = outside || z3::slt(f, x.constant(0)) || z3::sge(f, x.bv(map.output_shape[d]));
  }
  z3::check_result res = s.check(in_input_box(x, map) && outside);
  if (res == z3::unsat) return proved(r, clock);
  if (res == z3::unknown) return undecided(r, clock, options.timeout_ms);
  Counterexample cex;
  cex.indices = {values(s, x, map.iter_vars)};
  cex.symbols = s.symbol_values();
  IntEnv env = s.symbol_env();
  cex.output = apply(map, cex.indices[0], env);
  cex.text = format_index(options.name, cex.indices[0]) + " maps to " + output_text(cex.output) +
             ", outside the output box " + box_text(map, env) + symbols_text(cex.symbols);
  return failed(r, clock, std::move(cex));
}

/// The concrete extents of `shape`, or nullopt when one is symbolic.
std::optional<std::vector<int64_t>> concrete(const std::vector<Expr>& shape) {
  std::vector<int64_t> out;
  for (const Expr& e : shape) {
    auto c = as_const_int(e);
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

/// Surjectivity decided by visiting every input point, for concrete maps within
/// options.enumerate_limit points (nullopt otherwise).
std::optional<ProofResult> missing_output_by_enumeration(const IndexMap& map,
                                                         const ProofOptions& options, ProofResult r,
                                                         const Stopwatch& clock) {
  auto in = concrete(map.input_shape), out = concrete(map.output_shape);
  if (!in || !out || !options.domain.ranges.empty()) return std::nullopt;
  int64_t in_size = 1, out_size = 1;
  for (int64_t e : *in) in_size *= e;
  for (int64_t e : *out) out_size *= e;
  if (in_size > options.enumerate_limit || out_size > 4 * options.enumerate_limit) {
    return std::nullopt;
  }
  std::vector<bool> hit(static_cast<size_t>(out_size), false);
  IntEnv env;
  std::vector<int64_t> index(in->size(), 0);
  for (int64_t p = 0; p < in_size; ++p) {
    int64_t rest = p, flat = 0;
    for (size_t d = in->size(); d-- > 0;) {
      index[d] = rest % (*in)[d];
      rest /= (*in)[d];
    }
    std::vector<int64_t> o = apply(map, index, env);
    bool inside = true;
    for (size_t d = 0; d < o.size(); ++d) {
      inside = inside && o[d] >= 0 && o[d] < (*out)[d];
      flat = flat * (*out)[d] + o[d];
    }
    if (inside) hit[static_cast<size_t>(flat)] = true;
  }
  for (int64_t flat = 0; flat < out_size; ++flat) {
    if (hit[static_cast<size_t>(flat)]) continue;
    Counterexample cex;
    cex.output.assign(out->size(), 0);
    for (int64_t rest = flat, d = static_cast<int64_t>(out->size()) - 1; d >= 0; --d) {
      cex.output[d] = rest % (*out)[d];
      rest /= (*out)[d];
    }
    cex.text = "no index of " + options.name + " maps to " + output_text(cex.output) +
               " of the output box " + list_string(*out);
    return failed(r, clock, std::move(cex));
  }
  ProofResult p = proved(r, clock);
  p.message = "proved: every one of the " + std::to_string(out_size) +
              " output points is hit (enumeration)";
  return p;
}

/// Looks for an output point with no preimage: exists o in the box, forall x in the box,
/// f(x) != o (a quantified bit-vector query).
ProofResult missing_output(const IndexMap& map, const ProofOptions& options, ProofResult r,
                           const Stopwatch& clock) {
  if (auto enumerated = missing_output_by_enumeration(map, options, r, clock)) return *enumerated;
  Setup st = setup(map, options);
  std::vector<Var> outs;
  for (size_t d = 0; d < map.output_shape.size(); ++d) outs.push_back(Var("o" + std::to_string(d)));
  VarDomain dom = with_box_ranges(st.domain, outs, map.output_shape, options.name);
  std::vector<Var> locals = map.iter_vars;
  locals.insert(locals.end(), outs.begin(), outs.end());
  std::vector<Expr> exprs = st.exprs;
  for (size_t d = 0; d < outs.size(); ++d) exprs.push_back(outs[d] < map.output_shape[d]);
  ProofSession s(dom, locals, exprs, options.timeout_ms, options.force_width);
  Z3ExprTranslator& o = s.copy("_o");
  Z3ExprTranslator& x = s.copy("_x", /*quantified=*/true);
  z3::expr hit = s.ctx().bool_val(true);
  for (size_t d = 0; d < map.forward_index.size(); ++d)
    hit = hit && x.bv(map.forward_index[d]) == o.var(outs[d]);
  z3::expr x_in_box = in_input_box(x, map);
  z3::expr body = z3::implies(x_in_box && x.side_condition(), !hit);
  z3::expr goal = in_box(o, outs, map.output_shape) && z3::forall(x.fresh_constants(), body);
  z3::check_result res = s.check(goal, /*quantified=*/true);
  if (res == z3::unsat) return proved(r, clock);
  if (res == z3::unknown) return undecided(r, clock, options.timeout_ms);
  Counterexample cex;
  cex.output = values(s, o, outs);
  cex.symbols = s.symbol_values();
  IntEnv env = s.symbol_env();
  cex.text = "no index of " + options.name + " maps to " + output_text(cex.output) +
             " of the output box " + box_text(map, env) + symbols_text(cex.symbols);
  return failed(r, clock, std::move(cex));
}

/// Whether the input and output boxes have the same number of points for every symbol value;
/// nullopt when yes, else the symbol values where they differ (with both sizes).
std::optional<std::string> size_mismatch(const IndexMap& map, const ProofOptions& options) {
  auto in_shape = concrete(map.input_shape), out_shape = concrete(map.output_shape);
  if (in_shape && out_shape) {  // no symbols: multiply
    int64_t in = 1, out = 1;
    for (int64_t e : *in_shape) in *= e;
    for (int64_t e : *out_shape) out *= e;
    if (in == out) return std::nullopt;
    return options.name + " has " + std::to_string(in) + " indices but its output box " +
           list_string(*out_shape) + " has " + std::to_string(out) + " points";
  }
  Setup st = setup(map, options);
  ProofSession s(st.domain, map.iter_vars, st.exprs, options.timeout_ms, options.force_width);
  Expr in = product(map.input_shape), out = product(map.output_shape);
  z3::check_result res = s.check(s.shared().bv(in) != s.shared().bv(out));
  if (res != z3::sat) return std::nullopt;
  auto symbols = s.symbol_values();
  IntEnv env = s.symbol_env();
  return options.name + " has " + std::to_string(eval_int(in, env)) +
         " indices but its output box " + box_text(map, env) + " has " +
         std::to_string(eval_int(out, env)) + " points" + symbols_text(symbols);
}

}  // namespace

LayoutProofs prove_layout(const IndexMap& map, const ProofOptions& options) {
  Stopwatch clock;
  LayoutProofs p;
  p.in_range = in_range_impl(map, options);
  p.injective = injective_impl(map, options);
  // Surjective: an injective map into a box of equal size (for every symbol value) is onto it.
  Stopwatch surj_clock;
  ProofResult surj = start(options.name + " covers its output box");
  std::optional<std::string> mismatch = size_mismatch(map, options);
  if (!mismatch && p.in_range.holds && p.injective.holds) {
    p.surjective = proved(surj, surj_clock);
    p.surjective.message = "proved: injective into a box of equal size";
  } else {
    p.surjective = missing_output(map, options, surj, surj_clock);
  }
  p.bijective = start(options.name + " is a bijection onto its output box");
  for (const ProofResult* part : {&p.in_range, &p.injective, &p.surjective}) {
    if (!part->holds) {
      p.bijective.decided = part->decided;
      p.bijective.cex = part->cex;
      p.bijective.message = part->message;
      break;
    }
  }
  p.bijective.holds = p.in_range.holds && p.injective.holds && p.surjective.holds;
  if (p.bijective.holds) p.bijective.message = "proved";
  p.bijective.ms = clock.ms();
  return p;
}

ProofResult prove_injective(const IndexMap& map, const ProofOptions& options) {
  return injective_impl(map, options);
}

ProofResult prove_in_range(const IndexMap& map, const ProofOptions& options) {
  return in_range_impl(map, options);
}

ProofResult prove_surjective(const IndexMap& map, const ProofOptions& options) {
  Stopwatch clock;
  ProofResult r = start(options.name + " covers its output box");
  if (!size_mismatch(map, options) && in_range_impl(map, options).holds &&
      injective_impl(map, options).holds) {
    r = proved(r, clock);
    r.message = "proved: injective into a box of equal size";
    return r;
  }
  return missing_output(map, options, r, clock);
}

ProofResult prove_bijective(const IndexMap& map, const ProofOptions& options) {
  Stopwatch clock;
  ProofResult r = start(options.name + " is a bijection onto its output box");
  for (auto* part : {&in_range_impl, &injective_impl}) {
    ProofResult p = part(map, options);
    if (!p.holds) {
      p.what = r.what;
      p.ms = clock.ms();
      return p;
    }
  }
  if (auto mismatch = size_mismatch(map, options)) {
    ProofResult p = missing_output(map, options, r, clock);
    if (p.holds || !p.decided) {  // cannot happen for a true mismatch; report the sizes anyway
      p.holds = false;
      p.message = *mismatch;
    }
    p.ms = clock.ms();
    return p;
  }
  r = proved(r, clock);
  return r;
}

ProofResult prove_injective(const Layout& layout, const ProofOptions& options) {
  return prove_injective(IndexMap::of(layout), options);
}
ProofResult prove_surjective(const Layout& layout, const ProofOptions& options) {
  return prove_surjective(IndexMap::of(layout), options);
}
ProofResult prove_bijective(const Layout& layout, const ProofOptions& options) {
  return prove_bijective(IndexMap::of(layout), options);
}
ProofResult prove_in_range(const Layout& layout, const ProofOptions& options) {
  return prove_in_range(IndexMap::of(layout), options);
}
LayoutProofs prove_layout(const Layout& layout, const ProofOptions& options) {
  return prove_layout(IndexMap::of(layout), options);
}

ProofResult prove_equal(const Layout& a, const Layout& b, const ProofOptions& options) {
  Stopwatch clock;
  ProofResult r = start("the two layouts of " + options.name + " are equal");
  if (a.input_shape() != b.input_shape() || a.output_rank() != b.output_rank()) {
    r.holds = false;
    r.message = "the layouts have different shapes: " + a.to_string() + " vs " + b.to_string();
    r.ms = clock.ms();
    return r;
  }
  std::vector<Expr> index(a.iter_vars().begin(), a.iter_vars().end());
  std::vector<Expr> fb = b.forward(index);
  std::vector<Expr> exprs = a.forward_index();
  exprs.insert(exprs.end(), fb.begin(), fb.end());
  std::vector<Expr> shape;
  for (int64_t e : a.input_shape()) shape.push_back(make_int(e));
  VarDomain dom = with_box_ranges(options.domain, a.iter_vars(), shape, options.name);
  ProofSession s(dom, a.iter_vars(), exprs, options.timeout_ms, options.force_width);
  Z3ExprTranslator& x = s.copy("_x");
  z3::expr differ = s.ctx().bool_val(false);
  for (size_t d = 0; d < fb.size(); ++d)
    differ = differ || x.bv(a.forward_index()[d]) != x.bv(fb[d]);
  z3::check_result res = s.check(in_box(x, a.iter_vars(), shape) && differ);
  if (res == z3::unsat) return proved(r, clock);
  if (res == z3::unknown) return undecided(r, clock, options.timeout_ms);
  Counterexample cex;
  cex.indices = {values(s, x, a.iter_vars())};
  cex.output = a.map(cex.indices[0]);
  std::vector<int64_t> other = b.map(cex.indices[0]);
  cex.text = format_index(options.name, cex.indices[0]) + " maps to " + output_text(cex.output) +
             " in the first layout but to " + output_text(other) + " in the second";
  return failed(r, clock, std::move(cex));
}

}  // namespace tessel
