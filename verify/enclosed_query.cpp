// The shared Z3 set-up of the statement proofs (see enclosed_query.h).
#include "verify/enclosed_query.h"

#include "core/expr_printer.h"
#include "core/vector_copy.h"
#include "verify/definition_parts.h"
#include "verify/kernel_domain.h"

namespace tessel {

void bind_frames(Analyzer& analyzer, const Kernel& kernel, const std::vector<Enclosing>& frames) {
  bind_kernel_vars(analyzer, kernel);
  for (const Enclosing& f : frames) {
    if (!f.is_loop() || !f.min.defined()) continue;
    auto lo = as_const_int(f.min), n = as_const_int(f.extent);
    if (lo && n && *n > 0) analyzer.bind(f.var, *lo, *n);
  }
}

std::string indexed_text(const Buffer& b, const std::vector<Expr>& indices) {
  std::string s = b->name + "[";
  for (size_t d = 0; d < indices.size(); ++d) s += (d ? ", " : "") + to_string(indices[d]);
  return s + "]";
}

EnclosedQuery::EnclosedQuery(const Kernel& kernel, const std::vector<Enclosing>& frames)
    : domain_(kernel_domain(kernel)) {
  runs_ = definition_detail::add_enclosing(domain_, frames);
  for (const Enclosing& f : frames) dropped_ |= !f.is_loop() && !f.cond.defined();
}

z3::check_result EnclosedQuery::find(const Expr& bad, const std::vector<Expr>& exprs,
                                     unsigned timeout_ms) {
  std::vector<Expr> all = {bad};
  all.insert(all.end(), exprs.begin(), exprs.end());
  session_.reset();
  session_ = std::make_unique<ProofSession>(domain_, std::vector<Var>{}, all, timeout_ms);
  return session_->check(session_->shared().boolean(bad));
}

std::string EnclosedQuery::element_text(const Buffer& b, const std::vector<Expr>& indices) {
  std::string s = b->name + "[";
  for (size_t d = 0; d < indices.size(); ++d) {
    s += (d ? ", " : "") + std::to_string(value(indices[d]));
  }
  return s + "]";
}

std::vector<std::pair<std::string, int64_t>> EnclosedQuery::free_symbols(const Var& thread) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [name, value] : session_->symbol_values()) {
    bool fixed = false;
    for (const auto& [v, r] : domain_.ranges) fixed |= v.name() == name && r.min == r.max;
    if (name != thread.name() && !fixed) out.emplace_back(name, value);
  }
  return out;
}

std::string gave_up_text(unsigned timeout_ms) {
  return "Z3 gave up (timeout " + std::to_string(timeout_ms) + " ms)";
}

}  // namespace tessel
