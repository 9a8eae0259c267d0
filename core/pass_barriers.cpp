// Pass insert_barriers: T.sync_threads() wherever shared memory changes hands. Walking each
// sequence in order, the pass tracks the shared (and global) buffers written and read since the
// last barrier; a statement that reads a buffer written since then (read after write) or writes
// one read or written since then (write after read/write) gets a barrier before it. Every such
// access is assumed to cross threads — lowering partitions loops differently per operator, so
// "the same thread" cannot be assumed. Loops are walked twice: the second walk starts from the
// state the body ends in, which finds the barrier the next iteration needs (the one before a copy
// that overwrites a tile the previous iteration's gemm still reads). Barriers go only where every
// thread of the block arrives: not inside a branch or loop whose condition depends on the thread.
// The user's own T.sync_threads() are kept and reset the state. A branch that depends on the
// thread and waits on an mbarrier (warp specialisation) is synchronised by its own barriers.
// cp.async writes land at a cp_async_wait_group, not where they are issued: after each wait,
// every buffer a cp.async of the kernel writes counts as written again.
#include <map>
#include <set>

#include "core/buffer_accesses.h"
#include "core/expr_functor.h"
#include "core/intrinsics.h"
#include "core/passes.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

struct Hazards {
  std::map<const BufferNode*, const StmtNode*> written;  ///< buffer -> the statement that wrote it
  std::set<const BufferNode*> read;
  std::set<const BufferNode*> atomic;  ///< updated by atomics only
  void clear() { written.clear(), read.clear(), atomic.clear(); }
};

struct Accesses {
  std::set<const BufferNode*> reads, writes;
  std::set<const BufferNode*> atomics;  ///< read-modify-written atomically
};

bool shared_state(const Buffer& b) {
  return b->scope != Scope::kLocal && b->scope != Scope::kFragment;
}

Accesses accesses_of(const Stmt& s) {
  Accesses a;
  for (const BufferAccess& x : buffer_accesses(s)) {
    if (!shared_state(x.buffer)) continue;
    (x.atomic ? a.atomics : x.write ? a.writes : a.reads).insert(x.buffer.get());
  }
  return a;
}

/// True when `node` is `s` or one of the statements inside it.
bool contains(const Stmt& s, const StmtNode* node) {
  bool found = false;
  for_each_stmt(s, [&](const Stmt& c) { found = found || c.get() == node; });
  return found;
}

/// True when `s` contains a call that waits for other threads (an mbarrier wait).
bool waits_on_mbarrier(const Stmt& s) {
  bool found = false;
  for_each_stmt(s, [&](const Stmt& c) {
    if (const auto* call = c.as<IntrinsicCallNode>())
      found = found || intrinsic_info(call->intrinsic).blocking;
  });
  return found;
}

/// Read after write, write after read, or write after another statement's write: the buffer
/// that changes hands (nullptr: none). (A statement rewriting its own buffer in a later loop
/// iteration writes other elements, or races anyway; a statement's own parts — the store under
/// a `let` or an `if` — count as itself.)
const BufferNode* conflict(const Accesses& a, const Hazards& h, const Stmt& self) {
  for (const auto* b : a.reads) {
    if (h.written.count(b) || h.atomic.count(b)) return b;
  }
  for (const auto* b : a.atomics) {  // after plain accesses, not after other atomics
    if (h.written.count(b) || h.read.count(b)) return b;
  }
  for (const auto* b : a.writes) {
    auto w = h.written.find(b);
    if ((w != h.written.end() && !contains(self, w->second)) || h.read.count(b) ||
        h.atomic.count(b)) {
      return b;
    }
  }
  return nullptr;
}

void record(const Accesses& a, Hazards& h, const StmtNode* self) {
  h.read.insert(a.reads.begin(), a.reads.end());
  h.atomic.insert(a.atomics.begin(), a.atomics.end());
  for (const auto* b : a.writes) h.written[b] = self;
}

class BarrierInserter {
 public:
  /// `need`: when set, the first barrier the walk inserts is described there.
  explicit BarrierInserter(const Var& thread, BarrierNeed* need = nullptr)
      : thread_(thread), need_(need) {}

  /// Rewrites `s` given the hazards before it; updates them to those after it. A barrier goes
  /// before the outermost statement that needs it (before a loop, not inside it); statements
  /// inside loops and branches every thread takes alike are then walked for their own hazards.
  Stmt visit(const Stmt& s, Hazards& h) {
    if (s.as<BarrierNode>()) {
      h.clear();
      return s;
    }
    if (const auto* seq = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (const Stmt& c : seq->stmts) out.push_back(visit(c, h));
      return SeqNode::make(std::move(out));
    }
    Accesses a = accesses_of(s);
    const BufferNode* changes = conflict(a, h, s);
    bool barrier = changes != nullptr;
    if (barrier && need_ && !need_->before) {
      need_->before = s.get();
      need_->buffer = changes->name;
      auto w = h.written.find(changes);
      need_->previous = w != h.written.end() ? w->second->loc : SourceLoc{};
    }
    if (barrier) h.clear();
    Stmt m = visit_inside(s, a, h);
    if (const auto* call = s.as<IntrinsicCallNode>();
        call && intrinsic_info(call->intrinsic).family == IntrinsicFamily::kWaitGroup) {
      // The copies this wait lands were issued before earlier barriers (the peeled epilogue's
      // tiles were issued in the main loop): their writes count from here, so a reader in
      // another thread gets a barrier after the wait.
      for (const auto* b : async_destinations_) h.written[b] = s.get();
    }
    return barrier ? SeqNode::make({BarrierNode::make(s->loc), m}) : m;
  }

  /// Records the shared buffers that `body`'s cp.async instructions write.
  void find_async_destinations(const Stmt& body) {
    for_each_stmt(body, [&](const Stmt& c) {
      const auto* call = c.as<IntrinsicCallNode>();
      if (!call || intrinsic_info(call->intrinsic).family != IntrinsicFamily::kCpAsync) return;
      Accesses a = accesses_of(c);
      async_destinations_.insert(a.writes.begin(), a.writes.end());
    });
  }

 private:
  /// The statement with barriers inserted inside it where its own parts need them.
  Stmt visit_inside(const Stmt& s, const Accesses& a, Hazards& h) {
    if (const auto* f = s.as<ForNode>();
        f && f->for_kind != ForKind::kVectorized && uniform(f->min) && uniform(f->extent)) {
      Hazards end = h;
      visit(f->body, end);  // where iteration 1 ends
      Hazards start = h;    // any iteration starts from before the loop or a previous one
      merge(start, end);
      Stmt body = visit(f->body, start);
      merge(start, h);  // the loop may run zero times
      h = start;
      return ForNode::make(f->var, f->min, f->extent, f->for_kind, body, f->loc, f->pipeline);
    }
    if (const auto* i = s.as<IfNode>(); i && uniform(i->cond)) {
      Hazards t = h, e = h;
      Stmt then_case = visit(i->then_case, t);
      Stmt else_case = i->else_case.defined() ? visit(i->else_case, e) : i->else_case;
      merge(t, e);
      h = t;
      return IfNode::make(i->cond, then_case, else_case, i->loc);
    }
    if (const auto* let = s.as<LetNode>()) {
      if (!uniform(let->value)) varying_.insert(let->var.get());
      return LetNode::make(let->var, let->value, visit(let->body, h), let->loc);
    }
    // A branch that depends on the thread and waits on an mbarrier (a warp-specialised
    // producer or consumer) synchronises its shared accesses itself, as the user wrote them; the
    // thread-level simulator checks that order.
    if (s.as<IfNode>() && waits_on_mbarrier(s)) return s;
    record(a, h, s.get());  // a leaf, or control flow that depends on the thread
    return s;
  }

  /// True when `e` has the same value in every thread (it does not mention the thread index or
  /// a variable bound to something that does).
  bool uniform(const Expr& e) const {
    bool u = true;
    pre_order_visit(e, [&](const Expr& x) {
      if (x.same_as(thread_) || varying_.count(x.get())) u = false;
      if (x.as<BufferLoadNode>() || x.as<CallNode>()) u = false;
    });
    return u;
  }
  static void merge(Hazards& into, const Hazards& other) {
    for (const auto& [b, w] : other.written) into.written.emplace(b, w);
    into.atomic.insert(other.atomic.begin(), other.atomic.end());
    into.read.insert(other.read.begin(), other.read.end());
  }
  Var thread_;
  BarrierNeed* need_;
  std::set<const BufferNode*> async_destinations_;  ///< written by some cp.async of the kernel
  std::set<const ExprNode*> varying_;  ///< Let variables whose value differs between threads
};

}  // namespace

std::optional<BarrierNeed> barrier_needed_within(const Stmt& body, const Var& thread) {
  BarrierNeed need;
  Hazards h;
  BarrierInserter inserter(thread, &need);
  inserter.find_async_destinations(body);
  inserter.visit(body, h);
  if (!need.before) return std::nullopt;
  return need;
}

Kernel insert_barriers(const Kernel& kernel) {
  Hazards h;
  BarrierInserter inserter(kernel->thread_var);
  inserter.find_async_destinations(kernel->body);
  return with_body(kernel, inserter.visit(kernel->body, h));
}

}  // namespace tessel
