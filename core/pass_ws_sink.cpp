// Pass sink_consumer_code: in a warp-specialised kernel (an `if` whose branches both open with
// T.set_max_nreg: the producer warpgroup and the consumers), the guarded statements right before
// and right after it that only consumer threads run (`if tx < 128:` around a fragment's clear or
// the epilogue's stores) are moved into the consumer branch, after its set_max_nreg.
//
// Why: nvcc sees the fragment (128 accumulator registers) live from its clear to the epilogue
// across the producer branch too, whose setmaxnreg gives it 40 registers, and spills the whole
// accumulator there (1056 bytes on the Fig. 16 GEMM for sm_90a). Inside the consumer branch it
// is never live on the producer's path.
//
// Soundness: a statement `if c: S` is moved only when the analyzer proves that c excludes every
// thread of the other branch. A consumer thread then runs the same statements in the same order
// as before (its branch, then S), except that a moved preceding S now runs after set_max_nreg,
// which changes no value; a producer thread skipped S before and still does. No thread's
// sequence of memory accesses and barriers changes, so nothing another thread observes changes.
#include <optional>

#include "core/analyzer.h"
#include "core/intrinsics.h"
#include "core/passes.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

std::vector<Stmt> statements(const Stmt& s) {
  if (const auto* seq = s.as<SeqNode>()) return seq->stmts;
  return {s};
}

bool opens_with_set_max_nreg(const Stmt& s) {
  if (!s.defined()) return false;
  std::vector<Stmt> body = statements(s);
  if (body.empty()) return false;
  const auto* c = body.front().as<IntrinsicCallNode>();
  return c && c->intrinsic == IntrinsicId::kSetMaxNreg;
}

class Sinker : public StmtMutator {
 public:
  explicit Sinker(const Kernel& kernel) {
    analyzer_.bind(kernel->thread_var, 0, kernel->threads);
    for (size_t d = 0; d < kernel->grid.size(); ++d) {
      if (auto g = as_const_int(kernel->grid[d])) analyzer_.bind(kernel->block_vars[d], 0, *g);
    }
  }
  bool changed() const { return changed_; }

 protected:
  Stmt visit_Seq(const SeqNode* op, const Stmt& s) override {
    Stmt rebuilt = StmtMutator::visit_Seq(op, s);
    const auto* seq = rebuilt.as<SeqNode>();
    if (!seq) return rebuilt;
    std::vector<Stmt> stmts = seq->stmts;
    for (size_t i = 0; i < stmts.size(); ++i) {
      const auto* ws = stmts[i].as<IfNode>();
      if (!ws || !opens_with_set_max_nreg(ws->then_case) ||
          !opens_with_set_max_nreg(ws->else_case)) {
        continue;
      }
      // The consumers run the else branch: a statement guarded by c is theirs alone when c
      // implies not ws->cond.
      auto consumers_only = [&](const Stmt& x) {
        const auto* guard = x.as<IfNode>();
        if (!guard || guard->else_case.defined()) return false;
        Analyzer::ConstraintScope scope(analyzer_, guard->cond);
        return analyzer_.can_prove(!ws->cond);
      };
      size_t first = i, last = i + 1;
      while (first > 0 && consumers_only(stmts[first - 1])) --first;
      while (last < stmts.size() && consumers_only(stmts[last])) ++last;
      if (first == i && last == i + 1) continue;
      std::vector<Stmt> consumer = statements(ws->else_case);
      std::vector<Stmt> body{consumer.front()};  // set_max_nreg stays first
      body.insert(body.end(), stmts.begin() + first, stmts.begin() + i);
      body.insert(body.end(), consumer.begin() + 1, consumer.end());
      body.insert(body.end(), stmts.begin() + i + 1, stmts.begin() + last);
      Stmt moved = IfNode::make(ws->cond, ws->then_case, SeqNode::make(std::move(body)), ws->loc);
      stmts.erase(stmts.begin() + first, stmts.begin() + last);
      stmts.insert(stmts.begin() + first, moved);
      i = first;
      changed_ = true;
    }
    return SeqNode::make(std::move(stmts));
  }

 private:
  Analyzer analyzer_;
  bool changed_ = false;
};

}  // namespace

Kernel sink_consumer_code(const Kernel& kernel) {
  Sinker sinker(kernel);
  Stmt body = sinker.mutate(kernel->body);
  return sinker.changed() ? with_body(kernel, body) : kernel;
}

}  // namespace tessel
