// Fragment: construction and validation, evaluation, the Fig. 6 primitives (repeat,
// repeat_on_thread, replicate, condense_rep_var), inverse, reshape, equality and printing.
#include <algorithm>

#include "core/error.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/layout.h"
#include "core/layout_detail.h"

namespace tessel {

struct FragmentNode {
  Layout local;  ///< iter vars, input shape, {local index}, [local extent]
  Expr forward_thread;
  Var replicate_var;
  int64_t replicate = 1;
  int64_t thread_extent = 1;
};

namespace {

using detail::shape_string;

std::string fragment_text(const std::vector<Var>& vars, const std::vector<int64_t>& shape,
                          const Expr& thread, const Expr& local, int64_t replicate,
                          const Var& rep) {
  std::string s = "Fragment(" + shape_string(shape) + ", lambda ";
  for (size_t k = 0; k < vars.size(); ++k) s += (k ? ", " : "") + vars[k].name();
  if (replicate > 1 || (rep.defined() && thread.defined() && uses_var(thread, rep))) {
    s += ", " + rep.name();
  }
  s += ": (" + to_string(thread) + ", " + to_string(local) +
       "), replicate=" + std::to_string(replicate) + ")";
  return s;
}

/// Validates a fragment's parts; fills the local layout and thread extent.
std::optional<std::string> validate_fragment(const std::vector<Var>& vars,
                                             const std::vector<int64_t>& shape, const Expr& thread,
                                             const Expr& local, int64_t replicate, const Var& rep,
                                             std::optional<Layout>* local_layout,
                                             int64_t* thread_extent) {
  if (replicate < 1) {
    return "replicate is " + std::to_string(replicate) + "; it must be at least 1";
  }
  for (const Var& v : vars) {
    if (v.defined() && (v.same_as(rep) || v.name() == rep.name())) {
      return "the replicate variable `" + rep.name() + "` has the name of an index parameter";
    }
  }
  if (local.defined() && uses_var(local, rep)) {
    return "the local index `" + to_string(local) + "` uses the replicate variable `" + rep.name() +
           "`; every replica keeps an element at the same register";
  }
  std::vector<int64_t> local_shape;
  if (auto p = detail::validate_layout(vars, shape, {local}, &local_shape)) {
    return "local index: " + *p;
  }
  *local_layout = Layout::make(vars, shape, {local});
  std::vector<Var> all = vars;
  all.push_back(rep);
  std::vector<int64_t> box = shape;
  box.push_back(replicate);
  if (!thread.defined()) return std::string("the thread expression is undefined");
  bool bad = false;
  std::string problem;
  pre_order_visit(thread, [&](const Expr& x) {
    if (bad) return;
    if (x.dtype().is_float() || x.kind() == ExprKind::kBufferLoad || x.kind() == ExprKind::kCall) {
      bad = true;
      problem = "the thread `" + to_string(thread) + "` contains `" + to_string(x) +
                "`; it must be integer index arithmetic";
    } else if (const auto* v = x.as<VarNode>()) {
      bool ok = std::any_of(all.begin(), all.end(), [&](const Var& a) { return a.get() == v; });
      if (!ok) {
        bad = true;
        problem = "the thread `" + to_string(thread) + "` uses `" + v->name +
                  "`, which is not one of the lambda's parameters";
      }
    }
  });
  if (bad) return problem;
  auto b = detail::bound_in_box(thread, all, box);
  if (!b) return "the thread `" + to_string(thread) + "` cannot be bounded over the input shape";
  if (auto problem = detail::index_bound_problem(thread, all, box, *b)) {
    return "the thread `" + to_string(thread) + "` " + *problem;
  }
  *thread_extent = b->second + 1;
  return std::nullopt;
}

const FragmentNode& deref(const std::shared_ptr<const FragmentNode>& n) {
  internal_check(n != nullptr, "use of an undefined Fragment");
  return *n;
}

Expr substitute_vars(const Expr& e, const std::vector<Var>& from, const std::vector<Expr>& to) {
  return substitute(e, [&](const Var& v) -> Expr {
    for (size_t k = 0; k < from.size(); ++k) {
      if (from[k].same_as(v)) return to[k];
    }
    return Expr();
  });
}

}  // namespace

std::optional<Fragment> Fragment::try_make(std::vector<Var> iter_vars,
                                           std::vector<int64_t> input_shape, Expr forward_thread,
                                           Expr local_index, int64_t replicate, Var replicate_var) {
  if (!replicate_var.defined()) replicate_var = Var("rep");
  std::optional<Layout> local;
  int64_t threads = 0;
  if (validate_fragment(iter_vars, input_shape, forward_thread, local_index, replicate,
                        replicate_var, &local, &threads)) {
    return std::nullopt;
  }
  auto node = std::make_shared<FragmentNode>();
  node->local = *local;
  node->forward_thread = std::move(forward_thread);
  node->replicate_var = std::move(replicate_var);
  node->replicate = replicate;
  node->thread_extent = threads;
  return Fragment(std::shared_ptr<const FragmentNode>(std::move(node)));
}

Fragment Fragment::make(std::vector<Var> iter_vars, std::vector<int64_t> input_shape,
                        Expr forward_thread, Expr local_index, int64_t replicate,
                        Var replicate_var) {
  if (!replicate_var.defined()) replicate_var = Var("rep");
  std::optional<Layout> local;
  int64_t threads = 0;
  if (auto p = validate_fragment(iter_vars, input_shape, forward_thread, local_index, replicate,
                                 replicate_var, &local, &threads)) {
    std::string text =
        iter_vars.size() == input_shape.size() && forward_thread.defined() && local_index.defined()
            ? fragment_text(iter_vars, input_shape, forward_thread, local_index, replicate,
                            replicate_var)
            : "Fragment(" + shape_string(input_shape) + ", ...)";
    user_error("invalid fragment " + text + ": " + *p);
  }
  auto node = std::make_shared<FragmentNode>();
  node->local = *local;
  node->forward_thread = std::move(forward_thread);
  node->replicate_var = std::move(replicate_var);
  node->replicate = replicate;
  node->thread_extent = threads;
  return Fragment(std::shared_ptr<const FragmentNode>(std::move(node)));
}

Fragment Fragment::from_fn(
    std::vector<int64_t> input_shape,
    const std::function<std::pair<Expr, Expr>(const std::vector<Var>&, const Var& rep)>& fn,
    int64_t replicate) {
  std::vector<Var> vars = detail::fresh_iter_vars(input_shape.size());
  Var rep("rep");
  auto [thread, local] = fn(vars, rep);
  return make(std::move(vars), std::move(input_shape), thread, local, replicate, rep);
}

Fragment Fragment::fully_replicated(std::vector<int64_t> shape, int64_t threads) {
  Layout rm = Layout::row_major(shape);
  Var rep("rep");
  return make(rm.iter_vars(), shape, rep, rm.forward_index()[0], threads, rep);
}

const std::vector<Var>& Fragment::iter_vars() const { return deref(node_).local.iter_vars(); }
const std::vector<int64_t>& Fragment::input_shape() const {
  return deref(node_).local.input_shape();
}
const std::vector<Expr>& Fragment::forward_index() const {
  return deref(node_).local.forward_index();
}
const Expr& Fragment::local_index() const { return forward_index()[0]; }
const Expr& Fragment::forward_thread() const { return deref(node_).forward_thread; }
const Var& Fragment::replicate_var() const { return deref(node_).replicate_var; }
int64_t Fragment::replicate() const { return deref(node_).replicate; }
int64_t Fragment::thread_extent() const { return deref(node_).thread_extent; }
int64_t Fragment::local_extent() const { return output_shape()[0]; }
const std::vector<int64_t>& Fragment::output_shape() const {
  return deref(node_).local.output_shape();
}
int64_t Fragment::input_size() const { return deref(node_).local.input_size(); }
Layout Fragment::local_layout() const { return deref(node_).local; }

std::pair<int64_t, int64_t> Fragment::map_fragment(const std::vector<int64_t>& index,
                                                   int64_t rep) const {
  if (index.size() != input_rank()) {
    user_error("fragment " + to_string() + " takes " + std::to_string(input_rank()) +
               " indices, got " + std::to_string(index.size()) + " " + detail::index_string(index));
  }
  if (rep < 0 || rep >= replicate()) {
    user_error("replica " + std::to_string(rep) + " is out of range for " + to_string() +
               " (replicate=" + std::to_string(replicate()) + ")");
  }
  std::vector<Var> vars = iter_vars();
  vars.push_back(replicate_var());
  detail::BoxEvaluator ev(vars);
  ev.set(index);
  ev.set(vars.size() - 1, rep);
  return {ev.eval(forward_thread()), ev.eval(local_index())};
}

std::vector<int64_t> Fragment::map(const std::vector<int64_t>& index) const {
  return local_layout().map(index);
}

std::pair<Expr, Expr> Fragment::forward(const std::vector<Expr>& index, Expr rep) const {
  if (index.size() != input_rank()) {
    user_error("fragment " + to_string() + " takes " + std::to_string(input_rank()) +
               " indices, got " + std::to_string(index.size()));
  }
  std::vector<Var> from = iter_vars();
  from.push_back(replicate_var());
  std::vector<Expr> to = index;
  to.push_back(rep.defined() ? rep : Expr(0));
  return {substitute_vars(forward_thread(), from, to), substitute_vars(local_index(), from, to)};
}

Fragment Fragment::repeat(const std::vector<int64_t>& repeats, bool on_thread,
                          bool lower_dim_first) const {
  if (repeats.size() != input_rank()) {
    user_error("repeat of " + to_string() + " needs " + std::to_string(input_rank()) +
               " repeat counts, got " + shape_string(repeats));
  }
  for (int64_t r : repeats) {
    if (r < 1) user_error("repeat counts must be at least 1, got " + shape_string(repeats));
  }
  std::vector<int64_t> shape;
  std::vector<Var> vars = detail::fresh_iter_vars(input_rank());
  std::vector<Expr> base;
  for (size_t d = 0; d < input_rank(); ++d) {
    shape.push_back(input_shape()[d] * repeats[d]);
    base.push_back(repeats[d] == 1 ? Expr(vars[d]) : floormod(vars[d], make_int(input_shape()[d])));
  }
  // The copy number: row-major over the repeat grid (last dimension fastest) or column-major.
  Expr copy = 0;
  int64_t stride = 1;
  for (size_t n = 0; n < input_rank(); ++n) {
    size_t d = lower_dim_first ? input_rank() - 1 - n : n;
    if (repeats[d] == 1) continue;
    copy = copy + floordiv(vars[d], make_int(input_shape()[d])) * make_int(stride);
    stride *= repeats[d];
  }
  Var rep("rep");
  auto [thread, local] = forward(base, rep);
  if (on_thread) {
    thread = thread + copy * make_int(thread_extent());
  } else {
    local = local + copy * make_int(local_extent());
  }
  std::vector<Var> all = vars;
  all.push_back(rep);
  std::vector<int64_t> box = shape;
  box.push_back(replicate());
  thread = detail::simplify_in_box(thread, all, box);
  local = detail::simplify_in_box(local, vars, shape);
  return make(std::move(vars), std::move(shape), thread, local, replicate(), rep);
}

Fragment Fragment::repeat_on_thread(const std::vector<int64_t>& repeats,
                                    bool lower_dim_first) const {
  return repeat(repeats, true, lower_dim_first);
}

Fragment Fragment::replicate(int64_t n) const {
  if (n < 1) user_error("replicate(" + std::to_string(n) + "): the factor must be at least 1");
  Var rep("rep");
  int64_t r = replicate();
  std::vector<Expr> index(iter_vars().begin(), iter_vars().end());
  Expr old_rep = floormod(rep, make_int(r));
  Expr thread =
      forward(index, old_rep).first + floordiv(rep, make_int(r)) * make_int(thread_extent());
  std::vector<Var> all = iter_vars();
  all.push_back(rep);
  std::vector<int64_t> box = input_shape();
  box.push_back(r * n);
  thread = detail::simplify_in_box(thread, all, box);
  return make(iter_vars(), input_shape(), thread, local_index(), r * n, rep);
}

Fragment Fragment::condense_rep_var() const {
  int64_t r = replicate();
  if (r == 1) return *this;
  int64_t points = input_size();
  if (points * r > detail::kMaxExhaustivePoints) {
    user_error("cannot condense the replicate variable of " + to_string() + ": " +
               std::to_string(points * r) + " points are too many to evaluate");
  }
  // threads[rep][p]: the thread of point p in replica rep.
  std::vector<Var> vars = iter_vars();
  vars.push_back(replicate_var());
  detail::BoxEvaluator ev(vars);
  std::vector<std::vector<int64_t>> threads(r);
  for (int64_t q = 0; q < r; ++q) {
    ev.set(vars.size() - 1, q);
    for_each_index(input_shape(), [&](const std::vector<int64_t>& p) {
      ev.set(p);
      threads[q].push_back(ev.eval(forward_thread()));
    });
  }
  // Largest d | r such that the thread depends on rep only through rep // d.
  int64_t d = 1;
  for (int64_t cand = r; cand >= 1; --cand) {
    if (r % cand != 0) continue;
    bool ok = true;
    for (int64_t q = 0; q < r && ok; ++q) ok = threads[q] == threads[cand * (q / cand)];
    if (ok) {
      d = cand;
      break;
    }
  }
  // Smallest m | r / d such that it depends only on (rep // d) % m.
  int64_t quotient = r / d, m = quotient;
  for (int64_t cand = 1; cand <= quotient; ++cand) {
    if (quotient % cand != 0) continue;
    bool ok = true;
    for (int64_t q = 0; q < quotient && ok; ++q) ok = threads[d * q] == threads[d * (q % cand)];
    if (ok) {
      m = cand;
      break;
    }
  }
  Var rep("rep");
  std::vector<Expr> index(iter_vars().begin(), iter_vars().end());
  Expr thread = forward(index, Expr(rep) * make_int(d)).first;
  std::vector<Var> all = iter_vars();
  all.push_back(rep);
  std::vector<int64_t> box = input_shape();
  box.push_back(m);
  thread = detail::simplify_in_box(thread, all, box);
  return make(iter_vars(), input_shape(), thread, local_index(), m, rep);
}

Layout Fragment::inverse() const {
  std::vector<Var> in_vars = iter_vars();
  std::vector<int64_t> in_shape = input_shape();
  if (replicate() > 1) {
    in_vars.push_back(replicate_var());
    in_shape.push_back(replicate());
  }
  std::vector<Var> out_vars = {Var("thread"), Var("local")};
  std::vector<int64_t> out_shape = {thread_extent(), local_extent()};
  std::vector<Expr> back =
      detail::invert_bijection(in_vars, in_shape, {forward_thread(), local_index()}, out_shape,
                               out_vars, "cannot invert " + to_string());
  return Layout::make(std::move(out_vars), std::move(out_shape), std::move(back));
}

Fragment Fragment::reshape(std::vector<int64_t> shape) const {
  Layout reshaped_local = local_layout().reshape(shape);
  // Re-derive the old index from the new vars exactly as Layout::reshape does.
  const std::vector<Var>& vars = reshaped_local.iter_vars();
  Expr flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * make_int(shape[k]) + Expr(vars[k]);
  std::vector<Expr> old_index(input_rank());
  Expr rest = flat;
  for (size_t k = input_rank(); k-- > 0;) {
    old_index[k] = k == 0 ? rest : floormod(rest, make_int(input_shape()[k]));
    rest = floordiv(rest, make_int(input_shape()[k]));
  }
  Var rep("rep");
  Expr thread = forward(old_index, rep).first;
  std::vector<Var> all = vars;
  all.push_back(rep);
  std::vector<int64_t> box = shape;
  box.push_back(replicate());
  thread = detail::simplify_in_box(thread, all, box);
  return make(vars, shape, thread, reshaped_local.forward_index()[0], replicate(), rep);
}

bool Fragment::structurally_equal(const Fragment& other) const {
  if (!defined() || !other.defined()) return defined() == other.defined();
  if (input_shape() != other.input_shape() || replicate() != other.replicate()) return false;
  std::vector<Var> from = other.iter_vars();
  from.push_back(other.replicate_var());
  std::vector<Expr> to(iter_vars().begin(), iter_vars().end());
  to.push_back(replicate_var());
  return structural_equal(forward_thread(), substitute_vars(other.forward_thread(), from, to)) &&
         structural_equal(local_index(), substitute_vars(other.local_index(), from, to));
}

std::string Fragment::to_string() const {
  if (!defined()) return "Fragment(<undefined>)";
  return fragment_text(iter_vars(), input_shape(), forward_thread(), local_index(), replicate(),
                       replicate_var());
}

std::optional<std::string> Fragment::check_invariants() const {
  if (!defined()) return std::string("the fragment is undefined");
  std::optional<Layout> local;
  int64_t threads = 0;
  if (auto p = validate_fragment(iter_vars(), input_shape(), forward_thread(), local_index(),
                                 replicate(), replicate_var(), &local, &threads)) {
    return p;
  }
  if (threads != thread_extent()) return std::string("the stored thread extent is stale");
  return std::nullopt;
}

Fragment Layout::then(const Fragment& frag) const {
  if (output_shape() != frag.input_shape()) {
    user_error("cannot compose " + to_string() + " (output shape " + shape_string(output_shape()) +
               ") with " + frag.to_string() + " (input shape " + shape_string(frag.input_shape()) +
               "); the shapes must match");
  }
  Var rep("rep");
  auto [thread, local] = frag.forward(forward_index(), rep);
  std::vector<Var> all = iter_vars();
  all.push_back(rep);
  std::vector<int64_t> box = input_shape();
  box.push_back(frag.replicate());
  thread = detail::simplify_in_box(thread, all, box);
  local = detail::simplify_in_box(local, iter_vars(), input_shape());
  return Fragment::make(iter_vars(), input_shape(), thread, local, frag.replicate(), rep);
}

bool equal_by_evaluation(const Fragment& a, const Fragment& b, int64_t max_points) {
  if (a.input_shape() != b.input_shape() || a.replicate() != b.replicate()) return false;
  if (a.input_size() * a.replicate() > max_points) {
    user_error("cannot compare " + a.to_string() + " point by point: too many points");
  }
  std::vector<Var> va = a.iter_vars(), vb = b.iter_vars();
  va.push_back(a.replicate_var());
  vb.push_back(b.replicate_var());
  detail::BoxEvaluator ea(va), eb(vb);
  std::vector<int64_t> box = a.input_shape();
  box.push_back(a.replicate());
  bool equal = true;
  for_each_index(box, [&](const std::vector<int64_t>& p) {
    if (!equal) return;
    ea.set(p);
    eb.set(p);
    equal = ea.eval(a.forward_thread()) == eb.eval(b.forward_thread()) &&
            ea.eval(a.local_index()) == eb.eval(b.local_index());
  });
  return equal;
}

}  // namespace tessel
