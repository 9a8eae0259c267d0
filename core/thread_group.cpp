// Thread sets of branches on the thread index, found by evaluating the condition per thread.
#include "core/thread_group.h"

#include "core/error.h"
#include "core/expr_functor.h"
#include "core/int_eval.h"

namespace tessel {

ThreadSet ThreadSet::all(int64_t threads) {
  ThreadSet s;
  s.in_.assign(static_cast<size_t>(threads), true);
  return s;
}

std::optional<ThreadSet> ThreadSet::narrowed(const Expr& cond, const Var& thread,
                                             bool negate) const {
  bool only_thread = true;
  pre_order_visit(cond, [&](const Expr& x) {
    if (x.as<VarNode>() && !x.same_as(thread)) only_thread = false;
    if (x.as<BufferLoadNode>() || x.as<CallNode>()) only_thread = false;
  });
  if (!only_thread) return std::nullopt;
  ThreadSet out = *this;
  IntEnv env;
  try {
    for (size_t t = 0; t < in_.size(); ++t) {
      if (!in_[t]) continue;
      env[static_cast<const VarNode*>(thread.get())] = static_cast<int64_t>(t);
      bool taken = eval_int(cond, env) != 0;
      out.in_[t] = taken != negate;
    }
  } catch (const UserError&) {
    return std::nullopt;  // not an integer condition (a float comparison): not a thread group
  }
  return out;
}

bool ThreadSet::whole_block() const {
  for (bool b : in_) {
    if (!b) return false;
  }
  return true;
}

std::optional<std::pair<int64_t, int64_t>> ThreadSet::range() const {
  int64_t first = -1, last = -1;
  for (size_t t = 0; t < in_.size(); ++t) {
    if (!in_[t]) continue;
    if (first < 0) first = static_cast<int64_t>(t);
    if (last >= 0 && last != static_cast<int64_t>(t) - 1) return std::nullopt;
    last = static_cast<int64_t>(t);
  }
  if (first < 0) return std::nullopt;
  return std::make_pair(first, last - first + 1);
}

std::string ThreadSet::to_string() const {
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t t = 0; t < in_.size(); ++t) {
    if (!in_[t]) continue;
    if (!runs.empty() && runs.back().second == t - 1) {
      runs.back().second = t;
    } else {
      runs.push_back({t, t});
    }
  }
  if (runs.empty()) return "no thread";
  std::string out = runs.size() == 1 && runs[0].first == runs[0].second ? "thread " : "threads ";
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i > 0) out += i + 1 == runs.size() ? " and " : ", ";
    out += std::to_string(runs[i].first);
    if (runs[i].second != runs[i].first) out += "-" + std::to_string(runs[i].second);
  }
  return out;
}

std::optional<ThreadGroup> thread_group_of(const ThreadSet& set) {
  auto r = set.range();
  if (!r) return std::nullopt;
  return ThreadGroup{r->first, r->second};
}

namespace {

void walk(const Stmt& s, const Kernel& kernel, const ThreadSet& set,
          const std::function<void(const Stmt&, int)>& fn) {
  if (!s.defined()) return;
  std::optional<ThreadGroup> g = thread_group_of(set);
  fn(s, g ? static_cast<int>(g->count) : kernel->threads);
  if (const auto* seq = s.as<SeqNode>()) {
    for (const Stmt& c : seq->stmts) walk(c, kernel, set, fn);
  } else if (const auto* f = s.as<ForNode>()) {
    walk(f->body, kernel, set, fn);
  } else if (const auto* let = s.as<LetNode>()) {
    walk(let->body, kernel, set, fn);
  } else if (const auto* i = s.as<IfNode>()) {
    auto then_set = set.narrowed(i->cond, kernel->thread_var, false);
    walk(i->then_case, kernel, then_set.value_or(set), fn);
    if (i->else_case.defined()) {
      auto else_set = set.narrowed(i->cond, kernel->thread_var, true);
      walk(i->else_case, kernel, else_set.value_or(set), fn);
    }
  }
}

}  // namespace

void for_each_stmt_with_threads(const Kernel& kernel,
                                const std::function<void(const Stmt&, int)>& fn) {
  walk(kernel->body, kernel, ThreadSet::all(kernel->threads), fn);
}

}  // namespace tessel
