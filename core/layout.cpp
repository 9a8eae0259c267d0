// Layout: construction and validation, evaluation, composition, reshape, equality and printing;
// plus the box helpers shared with fragment.cpp and layout_inverse.cpp.
#include "core/layout.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_set>

#include "core/analyzer.h"
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/input_limits.h"
#include "core/layout_detail.h"

namespace tessel {

struct LayoutNode {
  std::vector<Var> iter_vars;
  std::vector<int64_t> input_shape;
  std::vector<Expr> forward_index;
  std::vector<int64_t> output_shape;
};

// ---- detail ----------------------------------------------------------------------------------

namespace detail {

BoxEvaluator::BoxEvaluator(std::vector<Var> vars) : vars_(std::move(vars)) {
  for (const Var& v : vars_) env_[static_cast<const VarNode*>(v.get())] = 0;
}

void BoxEvaluator::set(const std::vector<int64_t>& point) {
  for (size_t k = 0; k < point.size() && k < vars_.size(); ++k) set(k, point[k]);
}

void BoxEvaluator::set(size_t k, int64_t value) {
  env_[static_cast<const VarNode*>(vars_[k].get())] = value;
}

std::optional<int64_t> box_size(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) {
    if (e <= 0) return e == 0 ? std::optional<int64_t>(0) : std::nullopt;
    if (n > (int64_t{1} << 62) / e) return std::nullopt;
    n *= e;
  }
  return n;
}

std::vector<Var> fresh_iter_vars(size_t rank) {
  std::vector<Var> vars;
  for (const std::string& name : default_iter_var_names(rank)) vars.emplace_back(name);
  return vars;
}

std::optional<std::pair<int64_t, int64_t>> bound_in_box(const Expr& e, const std::vector<Var>& vars,
                                                        const std::vector<int64_t>& shape) {
  Analyzer analyzer;
  for (size_t k = 0; k < vars.size(); ++k) analyzer.bind(vars[k], 0, shape[k]);
  IntBound b = analyzer.const_int_bound(e);
  if (b.min != IntBound::kNegInf && b.max != IntBound::kPosInf) return std::pair(b.min, b.max);
  auto size = box_size(shape);
  if (!size || *size > kMaxBoundFallbackPoints) return std::nullopt;
  BoxEvaluator ev(vars);
  int64_t lo = IntBound::kPosInf, hi = IntBound::kNegInf;
  for_each_index(shape, [&](const std::vector<int64_t>& p) {
    ev.set(p);
    int64_t v = ev.eval(e);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  });
  return std::pair(lo, hi);
}

std::optional<std::string> index_bound_problem(const Expr& e, const std::vector<Var>& vars,
                                               const std::vector<int64_t>& shape,
                                               std::pair<int64_t, int64_t> b) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  if (b.second >= kLimit) {
    return "reaches " + std::to_string(b.second) +
           " (2^62 or more), past what storage sizes can count";
  }
  if (b.first >= 0) return std::nullopt;
  if (e.dtype().is_integral() && e.dtype().bits < 64) {
    // The same arithmetic in int64: in range there means the narrower type wrapped around.
    Expr wide = substitute(e, [](const Var& v) -> Expr {
      return v.dtype().bits < 64 ? cast(DataType::i64(), v) : Expr();
    });
    auto exact = bound_in_box(wide, vars, shape);
    if (exact && exact->first >= 0) {
      return "overflows " + e.dtype().name() + ": its exact value reaches " +
             std::to_string(exact->second) + ", past the largest " + e.dtype().name() +
             ", and wraps around (down to " + std::to_string(b.first) +
             "); use smaller extents or 64-bit arithmetic (T.int64)";
    }
  }
  return "can be negative (down to " + std::to_string(b.first) + ")";
}

Expr simplify_in_box(const Expr& e, const std::vector<Var>& vars,
                     const std::vector<int64_t>& shape) {
  Analyzer analyzer;
  for (size_t k = 0; k < vars.size(); ++k) analyzer.bind(vars[k], 0, shape[k]);
  return analyzer.simplify(e);
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

std::string index_string(const std::vector<int64_t>& index) {
  std::string s = "(";
  for (size_t k = 0; k < index.size(); ++k) s += (k ? ", " : "") + std::to_string(index[k]);
  return s + ")";
}

}  // namespace detail

// ---- free helpers ----------------------------------------------------------------------------

void for_each_index(const std::vector<int64_t>& shape,
                    const std::function<void(const std::vector<int64_t>&)>& fn) {
  for (int64_t e : shape) {
    if (e <= 0) return;
  }
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    fn(idx);
    size_t k = shape.size();
    while (k > 0) {
      --k;
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
      if (k == 0) return;
    }
    if (shape.empty()) return;
  }
}

std::vector<std::string> default_iter_var_names(size_t rank) {
  static const char* kShort[] = {"i", "j", "k", "l"};
  std::vector<std::string> names;
  for (size_t k = 0; k < rank; ++k) {
    std::string name = rank <= 4 ? kShort[k] : "i";
    if (rank > 4) name += std::to_string(k);
    names.push_back(name);
  }
  return names;
}

namespace {

using detail::shape_string;

const std::set<std::string>& python_keywords() {
  static const std::set<std::string> kKeywords = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  return kKeywords;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return python_keywords().count(s) == 0;
}

std::string lambda_text(const std::vector<Var>& params, const std::vector<Expr>& outputs) {
  std::string s = "lambda ";
  for (size_t k = 0; k < params.size(); ++k) s += (k ? ", " : "") + params[k].name();
  s += ": ";
  if (outputs.size() == 1) return s + to_string(outputs[0]);
  s += "(";
  for (size_t k = 0; k < outputs.size(); ++k) s += (k ? ", " : "") + to_string(outputs[k]);
  return s + ")";
}

std::string layout_text(const std::vector<Var>& vars, const std::vector<int64_t>& shape,
                        const std::vector<Expr>& outputs) {
  return "Layout(" + shape_string(shape) + ", " + lambda_text(vars, outputs) + ")";
}

/// Why `e` is not an integer index expression over `allowed`, or nullopt.
std::optional<std::string> check_index_expr(const Expr& e, const std::vector<Var>& allowed,
                                            const std::string& what) {
  if (!e.defined()) return what + " is undefined";
  if (e.dtype().is_bool()) {
    return what + " `" + to_string(e) + "` is a truth value; index expressions are integers";
  }
  std::optional<std::string> problem;
  pre_order_visit(e, [&](const Expr& x) {
    if (problem) return;
    if (x.dtype().is_float()) {
      problem = what + " `" + to_string(e) + "` has a floating-point part `" + to_string(x) +
                "`; index expressions are integers (use // for floor division)";
    } else if (x.kind() == ExprKind::kBufferLoad || x.kind() == ExprKind::kCall) {
      problem = what + " `" + to_string(e) + "` reads memory or calls a function (`" +
                to_string(x) + "`); layouts are pure index arithmetic";
    } else if (const auto* v = x.as<VarNode>()) {
      bool ok =
          std::any_of(allowed.begin(), allowed.end(), [&](const Var& a) { return a.get() == v; });
      if (!ok) {
        problem = what + " `" + to_string(e) + "` uses `" + v->name +
                  "`, which is not one of the lambda's parameters";
      }
    }
  });
  return problem;
}

/// Validates iter vars against the shape: count, extents, names.
std::optional<std::string> check_iter_vars(const std::vector<Var>& vars,
                                           const std::vector<int64_t>& shape) {
  if (vars.size() != shape.size()) {
    return "the lambda has " + std::to_string(vars.size()) + " parameters but the shape " +
           shape_string(shape) + " has " + std::to_string(shape.size()) + " dimensions";
  }
  if (shape.empty()) return std::string("the input shape is empty; give at least one dimension");
  if (shape.size() > static_cast<size_t>(kMaxLayoutRank)) {
    return "the input shape has " + std::to_string(shape.size()) + " dimensions; at most " +
           std::to_string(kMaxLayoutRank) + " are supported";
  }
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] < 1) {
      return "input dimension " + std::to_string(k) + " has extent " + std::to_string(shape[k]) +
             "; every extent must be at least 1";
    }
  }
  auto size = detail::box_size(shape);
  if (!size || *size > (int64_t{1} << 40)) {
    return "the input shape " + shape_string(shape) + " has more than 2^40 points";
  }
  std::set<std::string> names;
  for (const Var& v : vars) {
    if (!v.defined()) return std::string("an iter var is undefined");
    if (!v.dtype().is_int() && !v.dtype().is_uint()) {
      return "iter var `" + v.name() + "` has type " + v.dtype().name() + "; it must be an integer";
    }
    if (!is_identifier(v.name())) return "`" + v.name() + "` is not a valid parameter name";
    if (!names.insert(v.name()).second) {
      return "two parameters are named `" + v.name() + "`; give each a distinct name";
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> detail::validate_layout(const std::vector<Var>& vars,
                                                   const std::vector<int64_t>& shape,
                                                   const std::vector<Expr>& outputs,
                                                   std::vector<int64_t>* out_shape) {
  if (auto p = check_iter_vars(vars, shape)) return p;
  if (outputs.empty()) return std::string("the layout has no output expression");
  if (outputs.size() > static_cast<size_t>(kMaxLayoutRank)) {
    return "the layout has " + std::to_string(outputs.size()) + " outputs; at most " +
           std::to_string(kMaxLayoutRank) + " are supported";
  }
  out_shape->clear();
  for (size_t d = 0; d < outputs.size(); ++d) {
    std::string what = outputs.size() == 1 ? "the output" : "output " + std::to_string(d);
    if (auto p = check_index_expr(outputs[d], vars, what)) return p;
    auto b = detail::bound_in_box(outputs[d], vars, shape);
    if (!b) return what + " `" + to_string(outputs[d]) + "` cannot be bounded over the input shape";
    if (auto problem = detail::index_bound_problem(outputs[d], vars, shape, *b)) {
      bool negative = problem->rfind("can be negative", 0) == 0;
      return what + " `" + to_string(outputs[d]) + "` " + *problem +
             (negative ? "; storage indices start at 0" : "");
    }
    out_shape->push_back(b->second + 1);
  }
  return std::nullopt;
}

namespace {

std::vector<Expr> substitute_all(const std::vector<Expr>& exprs, const std::vector<Var>& from,
                                 const std::vector<Expr>& to) {
  std::vector<Expr> out;
  for (const Expr& e : exprs) {
    out.push_back(substitute(e, [&](const Var& v) -> Expr {
      for (size_t k = 0; k < from.size(); ++k) {
        if (from[k].same_as(v)) return to[k];
      }
      return Expr();
    }));
  }
  return out;
}

}  // namespace

// ---- Layout ----------------------------------------------------------------------------------

std::optional<Layout> Layout::try_make(std::vector<Var> iter_vars, std::vector<int64_t> input_shape,
                                       std::vector<Expr> forward_index) {
  auto node = std::make_shared<LayoutNode>();
  if (detail::validate_layout(iter_vars, input_shape, forward_index, &node->output_shape)) {
    return std::nullopt;
  }
  node->iter_vars = std::move(iter_vars);
  node->input_shape = std::move(input_shape);
  node->forward_index = std::move(forward_index);
  return Layout(std::shared_ptr<const LayoutNode>(std::move(node)));
}

Layout Layout::make(std::vector<Var> iter_vars, std::vector<int64_t> input_shape,
                    std::vector<Expr> forward_index) {
  std::vector<int64_t> out_shape;
  if (auto p = detail::validate_layout(iter_vars, input_shape, forward_index, &out_shape)) {
    std::string text = iter_vars.size() == input_shape.size()
                           ? layout_text(iter_vars, input_shape, forward_index)
                           : "Layout(" + shape_string(input_shape) + ", ...)";
    user_error("invalid layout " + text + ": " + *p);
  }
  auto node = std::make_shared<LayoutNode>();
  node->iter_vars = std::move(iter_vars);
  node->input_shape = std::move(input_shape);
  node->forward_index = std::move(forward_index);
  node->output_shape = std::move(out_shape);
  return Layout(std::shared_ptr<const LayoutNode>(std::move(node)));
}

Layout Layout::from_fn(std::vector<int64_t> input_shape,
                       const std::function<std::vector<Expr>(const std::vector<Var>&)>& fn) {
  std::vector<Var> vars = detail::fresh_iter_vars(input_shape.size());
  std::vector<Expr> outputs = fn(vars);
  return make(std::move(vars), std::move(input_shape), std::move(outputs));
}

namespace {

/// Requires of a shape whose strides are computed before Layout::make validates it: extents of
/// at least 1 and at most 2^40 points (so no stride overflows).
void require_stride_shape(const char* name, const std::vector<int64_t>& shape) {
  if (shape.size() > static_cast<size_t>(kMaxLayoutRank)) {
    user_error(std::string(name) + ": " + std::to_string(shape.size()) + " dimensions; at most " +
               std::to_string(kMaxLayoutRank) + " are supported");
  }
  std::string call = std::string(name) + "(";
  for (size_t k = 0; k < shape.size(); ++k) call += (k ? ", " : "") + std::to_string(shape[k]);
  call += ")";
  for (int64_t e : shape) {
    if (e < 1) user_error(call + ": every extent must be at least 1");
  }
  auto size = detail::box_size(shape);
  if (!size || *size > (int64_t{1} << 40)) user_error(call + ": more than 2^40 points");
}

}  // namespace

Layout Layout::row_major(std::vector<int64_t> shape) {
  require_stride_shape("row_major", shape);
  return from_fn(shape, [&](const std::vector<Var>& v) {
    Expr offset = 0;
    int64_t stride = 1;
    for (size_t k = shape.size(); k-- > 0;) {
      offset = Expr(v[k]) * make_int(stride) + offset;
      stride *= std::max<int64_t>(shape[k], 1);
    }
    return std::vector<Expr>{offset};
  });
}

Layout Layout::column_major(std::vector<int64_t> shape) {
  require_stride_shape("column_major", shape);
  return from_fn(shape, [&](const std::vector<Var>& v) {
    Expr offset = 0;
    int64_t stride = 1;
    for (size_t k = 0; k < shape.size(); ++k) {
      offset = offset + Expr(v[k]) * make_int(stride);
      stride *= std::max<int64_t>(shape[k], 1);
    }
    return std::vector<Expr>{offset};
  });
}

namespace {
const LayoutNode& deref(const std::shared_ptr<const LayoutNode>& n) {
  internal_check(n != nullptr, "use of an undefined Layout");
  return *n;
}
}  // namespace

const std::vector<Var>& Layout::iter_vars() const { return deref(node_).iter_vars; }
const std::vector<int64_t>& Layout::input_shape() const { return deref(node_).input_shape; }
const std::vector<Expr>& Layout::forward_index() const { return deref(node_).forward_index; }
const std::vector<int64_t>& Layout::output_shape() const { return deref(node_).output_shape; }
int64_t Layout::input_size() const { return *detail::box_size(input_shape()); }
int64_t Layout::output_size() const {
  auto n = detail::box_size(output_shape());
  if (!n) user_error("the output box of " + to_string() + " has more than 2^62 points");
  return *n;
}

std::vector<int64_t> Layout::map(const std::vector<int64_t>& index) const {
  if (index.size() != input_rank()) {
    user_error("layout " + to_string() + " takes " + std::to_string(input_rank()) +
               " indices, got " + std::to_string(index.size()) + " " + detail::index_string(index));
  }
  detail::BoxEvaluator ev(iter_vars());
  ev.set(index);
  std::vector<int64_t> out;
  for (const Expr& e : forward_index()) out.push_back(ev.eval(e));
  return out;
}

std::vector<Expr> Layout::forward(const std::vector<Expr>& index) const {
  if (index.size() != input_rank()) {
    user_error("layout " + to_string() + " takes " + std::to_string(input_rank()) +
               " indices, got " + std::to_string(index.size()));
  }
  return substitute_all(forward_index(), iter_vars(), index);
}

Layout Layout::then(const Layout& next) const {
  if (output_shape() != next.input_shape()) {
    user_error("cannot compose " + to_string() + " (output shape " + shape_string(output_shape()) +
               ") with " + next.to_string() + " (input shape " + shape_string(next.input_shape()) +
               "); the shapes must match");
  }
  std::vector<Expr> composed = next.forward(forward_index());
  for (Expr& e : composed) e = detail::simplify_in_box(e, iter_vars(), input_shape());
  return make(iter_vars(), input_shape(), std::move(composed));
}

Layout Layout::reshape(std::vector<int64_t> shape) const {
  auto size = detail::box_size(shape);
  if (!size || *size != input_size()) {
    user_error("cannot reshape " + to_string() + " to " + shape_string(shape) +
               ": the number of elements must stay " + std::to_string(input_size()));
  }
  std::vector<Var> vars = detail::fresh_iter_vars(shape.size());
  Expr flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * make_int(shape[k]) + Expr(vars[k]);
  std::vector<Expr> old_index(input_rank());
  Expr rest = flat;
  for (size_t k = input_rank(); k-- > 0;) {
    old_index[k] = k == 0 ? rest : floormod(rest, make_int(input_shape()[k]));
    rest = floordiv(rest, make_int(input_shape()[k]));
  }
  std::vector<Expr> outputs = forward(old_index);
  for (Expr& e : outputs) e = detail::simplify_in_box(e, vars, shape);
  return make(std::move(vars), std::move(shape), std::move(outputs));
}

bool Layout::structurally_equal(const Layout& other) const {
  if (!defined() || !other.defined()) return defined() == other.defined();
  if (input_shape() != other.input_shape() || output_rank() != other.output_rank()) return false;
  std::vector<Expr> ours(iter_vars().begin(), iter_vars().end());
  std::vector<Expr> renamed = substitute_all(other.forward_index(), other.iter_vars(), ours);
  for (size_t d = 0; d < output_rank(); ++d) {
    if (!structural_equal(forward_index()[d], renamed[d])) return false;
  }
  return true;
}

std::string Layout::to_string() const {
  if (!defined()) return "Layout(<undefined>)";
  return layout_text(iter_vars(), input_shape(), forward_index());
}

std::optional<std::string> Layout::check_invariants() const {
  if (!defined()) return std::string("the layout is undefined");
  std::vector<int64_t> out_shape;
  if (auto p = detail::validate_layout(iter_vars(), input_shape(), forward_index(), &out_shape))
    return p;
  if (out_shape != output_shape()) {
    return "the stored output shape " + shape_string(output_shape()) + " differs from the bounds " +
           shape_string(out_shape);
  }
  return std::nullopt;
}

Layout Layout::inverse() const {
  std::vector<Var> out_vars = detail::fresh_iter_vars(output_rank());
  std::vector<Expr> back =
      detail::invert_bijection(iter_vars(), input_shape(), forward_index(), output_shape(),
                               out_vars, "cannot invert " + to_string());
  return make(std::move(out_vars), output_shape(), std::move(back));
}

namespace {

/// User error when `a` has more points than a comparison point by point may visit.
void require_comparable(const Layout& a, int64_t max_points) {
  if (a.input_size() > max_points) {
    user_error("cannot compare " + a.to_string() +
               " point by point: " + std::to_string(a.input_size()) +
               " points exceed the limit of " + std::to_string(max_points));
  }
}

}  // namespace

bool equal_by_evaluation(const Layout& a, const Layout& b, int64_t max_points) {
  if (a.input_shape() != b.input_shape() || a.output_rank() != b.output_rank()) return false;
  require_comparable(a, max_points);
  detail::BoxEvaluator ea(a.iter_vars()), eb(b.iter_vars());
  bool equal = true;
  for_each_index(a.input_shape(), [&](const std::vector<int64_t>& p) {
    if (!equal) return;
    ea.set(p);
    eb.set(p);
    for (size_t d = 0; d < a.output_rank() && equal; ++d) {
      equal = ea.eval(a.forward_index()[d]) == eb.eval(b.forward_index()[d]);
    }
  });
  return equal;
}

bool equal_offsets_by_evaluation(const Layout& a, const Layout& b, int64_t max_points) {
  if (a.input_shape() != b.input_shape() || a.output_size() != b.output_size()) return false;
  require_comparable(a, max_points);
  auto offset = [](const Layout& l, const std::vector<int64_t>& out) {
    int64_t flat = 0;
    for (size_t d = 0; d < out.size(); ++d) flat = flat * l.output_shape()[d] + out[d];
    return flat;
  };
  bool equal = true;
  for_each_index(a.input_shape(), [&](const std::vector<int64_t>& p) {
    if (equal) equal = offset(a, a.map(p)) == offset(b, b.map(p));
  });
  return equal;
}

}  // namespace tessel
