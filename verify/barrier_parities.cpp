// The parities of mbarrier waits (see barrier_parities.h). A ring of S barriers serves iteration
// i = k - min with entry i % S; its arrivals of iteration i complete phase floor(i / S) of that
// entry. A wait in iteration i waits for the phase of iteration i (delay 0: the consumer of a
// stage the producer fills in the same iteration) or of iteration i - S (delay S: the producer
// reusing a stage its consumers released in the previous round). Z3 decides which delay the
// parity expression encodes for every i; the iteration's order decides which it must be: the
// graph of one iteration's waits and arrivals (program order of each group of threads, and each
// delay-0 wait after the arrivals it waits for) says whether the barrier's arrivals come after
// the wait.
#include "verify/barrier_parities.h"

#include <map>
#include <optional>
#include <set>

#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"
#include "core/intrinsics.h"
#include "core/stmt_functor.h"
#include "verify/definition_parts.h"
#include "verify/enclosed_query.h"
#include "verify/kernel_accesses.h"
#include "verify/proof_parts.h"

namespace tessel {

using namespace proof_detail;  // NOLINT(google-build-using-namespace): Stopwatch

namespace {

/// A wait or an arrival on an mbarrier entry, with what encloses it.
struct Op {
  Stmt stmt;
  bool wait = false;
  Buffer barrier;
  Expr element;  ///< the entry (one index)
  Expr parity;   ///< waits only
  std::vector<Enclosing> frames;
  const ForNode* loop = nullptr;   ///< the innermost enclosing loop
  std::vector<Expr> thread_conds;  ///< enclosing conditions on the thread index
  bool decidable = true;           ///< no condition mixes the thread with other values
};

bool only_var(const Expr& e, const Var& v) {
  bool ok = true;
  pre_order_visit(e, [&](const Expr& x) {
    if (const auto* n = x.as<VarNode>(); n && n != v.operator->()) ok = false;
    if (x.as<BufferLoadNode>() || x.as<CallNode>()) ok = false;
  });
  return ok;
}

/// The waits and arrivals of the kernel, in program order, with their frames.
class OpCollector : public EnclosingWalker {
 public:
  explicit OpCollector(const Kernel& kernel) : kernel_(kernel) {}
  std::vector<Op> run() {
    visit(kernel_->body);
    return std::move(out_);
  }

 private:
  void visit_IntrinsicCall(const IntrinsicCallNode* c, const Stmt& s) override {
    const IntrinsicId id = c->intrinsic;
    const bool wait = id == IntrinsicId::kMbarrierWaitParity;
    if (!wait && id != IntrinsicId::kMbarrierArrive && id != IntrinsicId::kMbarrierArriveExpectTx)
      return;
    Op op;
    op.stmt = s;
    op.wait = wait;
    op.barrier = c->args[0].buffer;
    op.element = c->args[0].indices.size() == 1 ? c->args[0].indices[0] : Expr();
    if (wait) op.parity = c->args[1].value;
    op.frames = frames();
    for (auto it = op.frames.rbegin(); it != op.frames.rend(); ++it) {
      if (it->is_loop()) {
        op.loop = static_cast<const ForNode*>(it->node);
        break;
      }
    }
    for (const Enclosing& e : op.frames) {
      if (e.is_loop() || !e.cond.defined()) continue;
      if (!uses_var(e.cond, kernel_->thread_var)) continue;
      if (e.node->kind == StmtKind::kLet || !only_var(e.cond, kernel_->thread_var)) {
        op.decidable = false;
      } else {
        op.thread_conds.push_back(e.cond);
      }
    }
    out_.push_back(std::move(op));
  }

  const Kernel& kernel_;
  std::vector<Op> out_;
};

/// Whether `claim` holds for every value of the kernel's variables under `frames`: true, false
/// (with the loop variable's value of a counterexample in `at`), or nullopt when Z3 gave up.
std::optional<bool> holds(const Kernel& kernel, const std::vector<Enclosing>& frames,
                          const Expr& claim, const Var& loop_var, unsigned timeout_ms,
                          int64_t* at) {
  EnclosedQuery q(kernel, frames);
  if (!q.runs()) return true;
  z3::check_result r = q.find(!claim, {Expr(loop_var)}, timeout_ms);
  if (r == z3::unknown) return std::nullopt;
  if (r == z3::unsat) return true;
  if (at) *at = q.value(Expr(loop_var));
  return false;
}

std::string where(const Op& op) {
  std::string loc = op.stmt->loc.str();
  return loc.empty() ? "" : " at " + loc;
}

std::string op_text(const Op& op) {
  return std::string(op.wait ? "the wait" : "the arrive") + " on '" + op.barrier->name + "[" +
         (op.element.defined() ? to_string(op.element) : std::string("?")) + "]'" + where(op);
}

}  // namespace

std::vector<KernelCheck> prove_barrier_parities(const Kernel& kernel, unsigned timeout_ms) {
  std::vector<Op> ops = OpCollector(kernel).run();
  // The protocols: the ops of the barriers whose every wait and arrival is in loops over one
  // variable, grouped by that variable.
  std::map<const BufferNode*, std::set<const ExprNode*>> loop_vars;
  for (const Op& op : ops) {
    loop_vars[op.barrier.get()].insert(op.loop ? op.loop->var.get() : nullptr);
  }
  std::map<const ExprNode*, std::vector<size_t>> protocols;
  std::set<const ExprNode*> tainted;  // loops that also hold ops of barriers left out
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::set<const ExprNode*>& vars = loop_vars[ops[i].barrier.get()];
    if (vars.size() == 1 && *vars.begin() != nullptr) {
      protocols[*vars.begin()].push_back(i);
    } else if (ops[i].loop) {
      tainted.insert(ops[i].loop->var.get());
    }
  }
  std::vector<KernelCheck> out;
  for (const auto& [var_node, members] : protocols) {
    if (tainted.count(var_node)) continue;  // its order depends on barriers with no claim
    Stopwatch clock;
    // Every op: decidable thread conditions, a constant-size ring, the same loop range, entry
    // i % S; each barrier with both waits and arrivals.
    const ForNode* first = ops[members[0]].loop;
    const Var k = first->var;
    const Expr i = Expr(k) - first->min;
    std::map<const BufferNode*, std::pair<int, int>> counts;  // waits, arrivals
    bool recognised = true;
    for (size_t m : members) {
      const Op& op = ops[m];
      std::optional<int64_t> S =
          op.barrier->shape.size() == 1 ? as_const_int(op.barrier->shape[0]) : std::nullopt;
      recognised = recognised && op.decidable && op.element.defined() && S && *S >= 1 &&
                   structural_equal(op.loop->min, first->min) &&
                   structural_equal(op.loop->extent, first->extent);
      if (!recognised) break;
      std::optional<bool> ring =
          holds(kernel, op.frames, op.element == floormod(i, make_int(*S)), k, timeout_ms, nullptr);
      recognised = ring && *ring;
      (op.wait ? counts[op.barrier.get()].first : counts[op.barrier.get()].second) += 1;
    }
    for (const auto& [_, c] : counts) recognised = recognised && c.first > 0 && c.second > 0;
    if (!recognised) continue;

    // The delay each wait's parity encodes (0 or S), or a failure.
    std::map<size_t, int64_t> delay;
    std::map<std::string, KernelCheck> checks;  // by barrier name: a stable order
    auto check_of = [&](const Buffer& b) -> KernelCheck& {
      auto [it, fresh] = checks.try_emplace(b->name);
      if (fresh) {
        int waits = counts[b.get()].first;
        it->second.what = "mbarrier parities on '" + b->name + "': every wait (" +
                          std::to_string(waits) +
                          ") waits for the phase its arrivals complete in its iteration, or in "
                          "the stage's previous use when those arrivals come after it";
        it->second.result = "proved";
      }
      return it->second;
    };
    for (size_t m : members) check_of(ops[m].barrier);
    bool undecided = false;
    for (size_t m : members) {
      const Op& op = ops[m];
      if (!op.wait) continue;
      const Expr S = make_int(*as_const_int(op.barrier->shape[0]));
      const Expr round = floordiv(i, S);
      int64_t at = 0;
      std::optional<bool> now =
          holds(kernel, op.frames, op.parity == floormod(round, make_int(2)), k, timeout_ms, &at);
      std::optional<bool> before =
          holds(kernel, op.frames, op.parity == floormod(round + make_int(1), make_int(2)), k,
                timeout_ms, nullptr);
      if (!now || !before) {
        undecided = true;
        continue;
      }
      if (*now || *before) {
        delay[m] = *now ? 0 : *as_const_int(op.barrier->shape[0]);
        continue;
      }
      KernelCheck& c = check_of(op.barrier);
      if (c.result != "failed") {
        c.result = "failed";
        c.counterexample = op_text(op) + " waits for parity " + to_string(op.parity) +
                           ", which is neither the phase of its iteration (" +
                           to_string(floormod(round, make_int(2))) +
                           ") in every iteration (not at " + k.name() + " = " + std::to_string(at) +
                           ") nor that of the stage's previous use in every iteration";
      }
    }
    if (undecided) {
      for (auto& [_, c] : checks) {
        c.result = "undecided";
        c.counterexample = "Z3 gave up (timeout " + std::to_string(timeout_ms) + " ms)";
        c.ms = clock.ms();
        out.push_back(c);
      }
      continue;
    }

    // The groups of threads (each thread's sequence of these ops in one iteration) and the
    // iteration's graph: program order, and arrivals before the delay-0 waits on their barrier.
    std::map<std::vector<size_t>, int> group_ids;
    std::vector<std::vector<size_t>> groups;
    for (int t = 0; t < kernel->threads; ++t) {
      IntEnv env;
      env[kernel->thread_var.operator->()] = t;
      std::vector<size_t> seq;
      for (size_t m : members) {
        bool reached = true;
        for (const Expr& c : ops[m].thread_conds) reached = reached && eval_int(c, env) != 0;
        if (reached) seq.push_back(m);
      }
      if (!seq.empty() && group_ids.emplace(seq, static_cast<int>(groups.size())).second)
        groups.push_back(seq);
    }
    bool one_loop = true;
    for (const auto& g : groups) {
      for (size_t m : g) one_loop = one_loop && ops[m].loop == ops[g[0]].loop;
    }
    if (!one_loop) continue;
    // Nodes: (group, position); successors.
    std::vector<std::pair<int, int>> nodes;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t p = 0; p < groups[g].size(); ++p)
        nodes.emplace_back(static_cast<int>(g), static_cast<int>(p));
    }
    auto op_of = [&](size_t n) { return groups[nodes[n].first][nodes[n].second]; };
    std::vector<std::vector<size_t>> next(nodes.size());
    for (size_t a = 0; a < nodes.size(); ++a) {
      for (size_t b = 0; b < nodes.size(); ++b) {
        const Op &x = ops[op_of(a)], &y = ops[op_of(b)];
        bool program = nodes[a].first == nodes[b].first && nodes[b].second == nodes[a].second + 1;
        bool sync = !x.wait && y.wait && x.barrier.same_as(y.barrier) && delay.count(op_of(b)) &&
                    delay[op_of(b)] == 0;
        if (program || sync) next[a].push_back(b);
      }
    }
    for (size_t n = 0; n < nodes.size(); ++n) {
      const size_t m = op_of(n);
      if (!ops[m].wait || !delay.count(m)) continue;
      // The barrier's arrivals reachable from this wait in the same iteration.
      std::vector<bool> seen(nodes.size(), false);
      std::vector<size_t> stack = {n};
      std::optional<size_t> later;
      while (!stack.empty()) {
        size_t x = stack.back();
        stack.pop_back();
        for (size_t y : next[x]) {
          if (seen[y]) continue;
          seen[y] = true;
          stack.push_back(y);
          const Op& o = ops[op_of(y)];
          if (!o.wait && o.barrier.same_as(ops[m].barrier) && !later) later = op_of(y);
        }
      }
      const Op& op = ops[m];
      KernelCheck& c = check_of(op.barrier);
      if (c.result == "failed") continue;
      const int64_t S = *as_const_int(op.barrier->shape[0]);
      if (delay[m] == 0 && later) {
        c.result = "failed";
        c.counterexample =
            op_text(op) + " waits for the phase of its own iteration (parity " +
            to_string(op.parity) + "), but " + op_text(ops[*later]) +
            " completes that phase only after this wait, in the same iteration: the waiting "
            "warps deadlock; wait for the stage's previous use, parity (" +
            k.name() + " // " + std::to_string(S) + " + 1) % 2";
      } else if (delay[m] != 0 && !later) {
        c.result = "failed";
        std::string arrivals;
        for (size_t a : members) {
          if (!ops[a].wait && ops[a].barrier.same_as(op.barrier) && arrivals.empty())
            arrivals = op_text(ops[a]);
        }
        c.counterexample =
            op_text(op) + " waits for the phase of the stage's previous use, " + std::to_string(S) +
            " iterations before (parity " + to_string(op.parity) + "), but " + arrivals +
            " does not depend on this wait: the phase of its own iteration can complete first, "
            "and the wait passes on the older phase (a fresh barrier's at once) before that "
            "iteration's arrivals — what they publish is read before it is ready; wait for "
            "parity " +
            k.name() + " // " + std::to_string(S) + " % 2";
      }
    }
    for (auto& [_, c] : checks) {
      c.ms = clock.ms();
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace tessel
