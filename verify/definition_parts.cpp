// Domains and wording shared by the register definition proofs (see definition_parts.h).
#include "verify/definition_parts.h"

#include "core/expr_printer.h"

namespace tessel::definition_detail {

bool add_enclosing(VarDomain& domain, const std::vector<Enclosing>& frames) {
  for (const Enclosing& f : frames) {
    if (!f.is_loop()) {
      if (f.cond.defined()) domain.assume(f.cond);
      continue;
    }
    if (!f.min.defined()) continue;  // ranges over its dtype
    std::optional<int64_t> lo = as_const_int(f.min), n = as_const_int(f.extent);
    if (lo && n) {
      if (*n < 1) return false;
      domain.bound(f.var, *lo, *lo + *n - 1);
      continue;
    }
    IndexBounds bounds(domain);
    IntBound a = bounds.bound(f.min), b = bounds.bound(f.min + f.extent - make_int(1));
    if (a.min != IntBound::kNegInf && b.max != IntBound::kPosInf && b.max >= a.min) {
      domain.bound(f.var, a.min, b.max);
    }
    domain.assume(f.var >= f.min && f.var < f.min + f.extent);
  }
  return true;
}

Expr make_bool(bool value) { return IntImmNode::make(DataType::boolean(), value ? 1 : 0); }

Expr conj(const std::vector<Expr>& terms) {
  if (terms.empty()) return make_bool(true);
  Expr all = terms[0];
  for (size_t k = 1; k < terms.size(); ++k) all = all && terms[k];
  return all;
}

std::optional<int64_t> buffer_size(const Buffer& b) { return b->const_size(); }

Expr buffer_size_expr(const Buffer& b) {
  Expr n = b->shape[0];
  for (size_t d = 1; d < b->shape.size(); ++d) n = n * b->shape[d];
  return n;
}

std::string size_text(const Buffer& b) {
  std::optional<int64_t> n = b->const_size();
  return n ? std::to_string(*n) : to_string(buffer_size_expr(b));
}

std::string at_text(const Stmt& s) { return s->loc.known() ? " at " + s->loc.str() : ""; }

std::string at_text(const RegisterAccess& a) {
  if (a.stmt->loc.known()) return at_text(a.stmt);
  for (size_t k = a.enclosing.size(); k-- > 0;) {
    const Enclosing& f = a.enclosing[k];
    if (f.node->loc.known()) {
      return std::string(" in the ") + (f.is_loop() ? "loop" : "`if`") + " at " + f.node->loc.str();
    }
  }
  return "";
}

std::string thread_words(int64_t thread, int warp_size, const std::string& extra) {
  return "thread " + std::to_string(thread) + " (warp " + std::to_string(thread / warp_size) +
         ", lane " + std::to_string(thread % warp_size) + (extra.empty() ? "" : ", " + extra) + ")";
}

namespace {

std::string index_text(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t d = 0; d < index.size(); ++d) s += (d ? ", " : "") + std::to_string(index[d]);
  return s + "]";
}

}  // namespace

std::string element_words(const Buffer& b, const Fragment* fragment, int64_t thread, int64_t reg) {
  if (!fragment) {
    if (b->ndim() < 2 || !b->const_size() || reg < 0 || reg >= *b->const_size()) return "";
    std::vector<int64_t> index(b->ndim());
    int64_t rest = reg;
    for (size_t d = b->ndim(); d-- > 0;) {
      int64_t n = *as_const_int(b->shape[d]);
      index[d] = rest % n;
      rest /= n;
    }
    return " (" + b->name + index_text(index) + ")";
  }
  const std::vector<int64_t>& shape = fragment->input_shape();
  if (fragment->input_size() * fragment->replicate() > (int64_t{1} << 20)) return "";
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < fragment->input_size(); ++n) {
    for (int64_t rep = 0; rep < fragment->replicate(); ++rep) {
      if (fragment->map_fragment(index, rep) == std::make_pair(thread, reg)) {
        std::string s = " (element " + index_text(index) + " of the fragment";
        if (fragment->replicate() > 1) s += ", replica " + std::to_string(rep);
        return s + ")";
      }
    }
    for (size_t d = shape.size(); d-- > 0;) {  // next index, row-major
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return " (a register that holds no element of the fragment)";
}

std::string writes_words(const std::vector<const RegisterAccess*>& writes) {
  if (writes.empty()) return "it is never written";
  std::string s = "it is written";
  size_t shown = 0;
  const RegisterAccess* last = nullptr;
  for (const RegisterAccess* w : writes) {
    if (last && last->stmt.same_as(w->stmt)) continue;
    last = w;
    if (shown == 3) {
      s += "; and elsewhere";
      break;
    }
    std::string where = at_text(*w);
    s += std::string(shown ? "; " : " ") + (where.empty() ? "" : where.substr(1) + " ") + "(`" +
         statement_text(w->stmt) + "`)";
    std::string under;
    for (const Enclosing& f : w->enclosing) {
      if (!f.is_loop()) under += (under.empty() ? "" : " and ") + ("`" + f.text + "`");
    }
    if (!under.empty()) s += ", under " + under;
    ++shown;
  }
  return s;
}

}  // namespace tessel::definition_detail
