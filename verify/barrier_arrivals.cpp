// The arrival counts of mbarriers (see barrier_arrivals.h). A phase completes after `count`
// arrivals; when every phase's arrivals come from one site — the producer's or the consumers'
// `T.mbarrier_arrive` in a warp-specialised loop — the site must be reached by exactly `count`
// threads: more completes phases early (a race), fewer never completes them (a deadlock). The
// threads reaching a site are counted by evaluating its enclosing conditions for every thread
// index of the block, which is exact for conditions on the thread index alone.
#include "verify/barrier_arrivals.h"

#include <chrono>
#include <map>
#include <optional>

#include "core/expr_functor.h"
#include "core/int_eval.h"
#include "core/intrinsics.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

struct Site {
  SourceLoc loc;
  std::vector<Expr> conditions;  ///< enclosing conditions (negated for else branches)
};

struct Barrier {
  Buffer buffer;
  std::map<int64_t, int64_t> counts;  ///< entry -> arrivals per phase (constant inits)
  bool unknown_count = false;         ///< an init with a non-constant entry or count
  std::vector<Site> sites;
};

class Collector : public StmtVisitor {
 public:
  std::map<const BufferNode*, Barrier> barriers;

 protected:
  void visit_If(const IfNode* op, const Stmt&) override {
    conditions_.push_back(op->cond);
    visit(op->then_case);
    conditions_.back() = !op->cond;
    if (op->else_case.defined()) visit(op->else_case);
    conditions_.pop_back();
  }
  void visit_Let(const LetNode* op, const Stmt&) override {
    lets_.push_back({op->var, op->value});
    visit(op->body);
    lets_.pop_back();
  }
  void visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt& s) override {
    const IntrinsicId id = op->intrinsic;
    if (id != IntrinsicId::kMbarrierInit && id != IntrinsicId::kMbarrierArrive &&
        id != IntrinsicId::kMbarrierArriveExpectTx) {
      return;
    }
    const IntrinsicArg& bar = op->args[0];
    Barrier& b = barriers[bar.buffer.get()];
    b.buffer = bar.buffer;
    if (id == IntrinsicId::kMbarrierInit) {
      std::optional<int64_t> entry =
          bar.indices.size() == 1 ? as_const_int(bar.indices[0]) : std::nullopt;
      std::optional<int64_t> count = as_const_int(op->args[1].value);
      if (entry && count) {
        b.counts[*entry] = *count;
      } else {
        b.unknown_count = true;
      }
      return;
    }
    std::vector<Expr> conds;
    for (const Expr& c : conditions_) conds.push_back(inline_lets(c));
    b.sites.push_back({s->loc, conds});
  }

 private:
  Expr inline_lets(Expr e) const {
    for (auto it = lets_.rbegin(); it != lets_.rend(); ++it) {
      const Var& v = it->first;
      const Expr& value = it->second;
      e = substitute(e, [&](const Var& x) { return x.same_as(v) ? value : Expr(); });
    }
    return e;
  }
  std::vector<Expr> conditions_;
  std::vector<std::pair<Var, Expr>> lets_;
};

bool only_thread(const Expr& e, const Var& thread) {
  bool ok = true;
  pre_order_visit(e, [&](const Expr& x) {
    if (const auto* v = x.as<VarNode>(); v && v != thread.operator->()) ok = false;
    if (x.as<BufferLoadNode>() || x.as<CallNode>()) ok = false;
  });
  return ok;
}

/// "0-127", "128-255", "0-63, 128-191".
std::string ranges(const std::vector<int>& threads) {
  std::string out;
  for (size_t i = 0; i < threads.size();) {
    size_t j = i;
    while (j + 1 < threads.size() && threads[j + 1] == threads[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(threads[i]);
    if (j > i) out += "-" + std::to_string(threads[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::vector<KernelCheck> prove_barrier_arrivals(const Kernel& kernel) {
  Collector collector;
  collector.visit(kernel->body);
  std::vector<KernelCheck> out;
  for (const auto& [_, b] : collector.barriers) {
    if (b.sites.empty() || b.counts.empty() || b.unknown_count) continue;
    const int64_t count = b.counts.begin()->second;
    bool uniform = true;
    for (const auto& [entry, c] : b.counts) uniform = uniform && c == count;
    // A condition without the thread index lets all threads through or none (a loop bound, a
    // drain): it does not change who arrives. One mixing the thread with other values does.
    bool decidable = true;
    std::vector<std::vector<Expr>> by_thread;
    for (const Site& site : b.sites) {
      by_thread.emplace_back();
      for (const Expr& c : site.conditions) {
        if (!uses_var(c, kernel->thread_var)) continue;
        decidable = decidable && only_thread(c, kernel->thread_var);
        by_thread.back().push_back(c);
      }
    }
    if (!uniform || !decidable) continue;
    auto start = std::chrono::steady_clock::now();
    KernelCheck check;
    check.what = "mbarrier arrivals on '" + b.buffer->name + "': every arrive site (" +
                 std::to_string(b.sites.size()) + ") is reached by exactly the " +
                 std::to_string(count) + " threads each phase waits for";
    check.result = "proved";
    for (size_t i = 0; i < b.sites.size(); ++i) {
      const Site& site = b.sites[i];
      std::vector<int> threads;
      for (int t = 0; t < kernel->threads; ++t) {
        IntEnv env;
        env[kernel->thread_var.operator->()] = t;
        bool reached = true;
        for (const Expr& c : by_thread[i]) reached = reached && eval_int(c, env) != 0;
        if (reached) threads.push_back(t);
      }
      if (static_cast<int64_t>(threads.size()) == count) continue;
      check.result = "failed";
      check.counterexample =
          "'" + b.buffer->name + "' is initialised for " + std::to_string(count) +
          " arrivals per phase, but the arrive at " + site.loc.str() + " is reached by " +
          std::to_string(threads.size()) + " threads (" + ranges(threads) + "): its phases " +
          (static_cast<int64_t>(threads.size()) < count
               ? "never complete (the waiting warps deadlock)"
               : "complete before every arrival (a waiter may pass early)") +
          "; give T.alloc_barrier / T.mbarrier_init the number of threads that arrive";
      break;
    }
    check.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    out.push_back(std::move(check));
  }
  return out;
}

}  // namespace tessel
