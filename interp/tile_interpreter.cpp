// The tile-level interpreter: lock-step execution of a block's threads, collective tile
// operators, and blocks spread over CPU threads.
#include "interp/tile_interpreter.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <optional>
#include <thread>
#include <unordered_set>

#include "core/capacity.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"
#include "core/intrinsics.h"
#include "core/printer.h"
#include "core/stmt_functor.h"
#include "core/tile_op.h"
#include "interp/print_output.h"
#include "interp/scalar_eval.h"
#include "interp/tile_parallel.h"

namespace tessel {

namespace {

/// The threads taking part in a statement.
using Lanes = std::vector<int>;

/// The Let and For statements of `kernel` whose value (bounds) is the same in every thread: it
/// reads no variable that differs between threads (the thread index and what is bound from it),
/// loads no per-thread buffer and takes no other lane's value. Run by all the block's threads,
/// such a statement evaluates once and binds its variable once for the block.
std::unordered_set<const StmtNode*> uniform_bindings(const Kernel& kernel) {
  std::unordered_set<const VarNode*> varying{static_cast<const VarNode*>(kernel->thread_var.get())};
  auto varies = [&](const Expr& e) {
    bool v = false;
    pre_order_visit(e, [&](const Expr& x) {
      if (const auto* var = x.as<VarNode>()) v = v || varying.count(var);
      if (const auto* load = x.as<BufferLoadNode>()) v = v || is_per_thread(load->buffer->scope);
      if (const auto* call = x.as<CallNode>()) v = v || is_shuffle(call->op);
    });
    return v;
  };
  std::unordered_set<const StmtNode*> uniform;
  for_each_stmt(kernel->body, [&](const Stmt& s) {  // a binding before its uses
    const VarNode* var = nullptr;
    bool varies_here = false;
    if (const auto* let = s.as<LetNode>()) {
      var = static_cast<const VarNode*>(let->var.get());
      varies_here = varies(let->value);
    } else if (const auto* loop = s.as<ForNode>()) {
      var = static_cast<const VarNode*>(loop->var.get());
      varies_here = varies(loop->min) || varies(loop->extent);
    }
    if (!var) return;
    if (varies_here) {
      varying.insert(var);
    } else {
      uniform.insert(s.get());
    }
  });
  return uniform;
}

/// Whether tile operator `op` writes only per-thread (T.alloc_local) buffers: then it is each
/// thread's own work (T.clear(acc) clears every thread's acc); any other runs once for the block.
bool writes_per_thread(const TileOp& op) {
  const std::vector<BufferRegion> writes = op.writes();
  return !writes.empty() && std::all_of(writes.begin(), writes.end(), [](const BufferRegion& r) {
    return is_per_thread(r.buffer->scope);
  });
}

/// writes_per_thread of every tile operator in `kernel`, decided once for all its blocks.
std::unordered_map<const TileOp*, bool> per_thread_operators(const Kernel& kernel) {
  std::unordered_map<const TileOp*, bool> ops;
  for_each_stmt(kernel->body, [&](const Stmt& s) {
    if (const auto* call = s.as<TileOpCallNode>())
      ops[call->op.get()] = writes_per_thread(*call->op);
  });
  return ops;
}

/// What the blocks of one run share, computed once from the kernel.
struct KernelFacts {
  std::unordered_set<const StmtNode*> uniform;             ///< uniform_bindings
  std::unordered_map<const TileOp*, bool> per_thread_ops;  ///< per_thread_operators

  bool per_thread(const TileOp& op) const {
    auto it = per_thread_ops.find(&op);
    return it != per_thread_ops.end() ? it->second : writes_per_thread(op);
  }
};

/// Makes the tile atomics of a run land in the order the blocks are handed out, whatever the
/// number of workers: a block's first atomic waits until every block handed out before it has
/// finished. Floating-point addition does not associate, so split-K sums would otherwise depend
/// on how the workers interleave; this way they are those of one worker, while the blocks' work
/// before their first atomic still overlaps.
class AtomicOrder {
 public:
  explicit AtomicOrder(int64_t count) : done_(static_cast<size_t>(count), 0) {}
  /// Blocks until blocks 0 .. id-1 (in hand-out order) have all finished.
  void wait_for_earlier(int64_t id) {
    std::unique_lock<std::mutex> lock(mutex_);
    earlier_done_.wait(lock, [&] { return prefix_ >= id; });
  }
  /// Block `id` finished (or failed: the blocks after it must not wait for it forever).
  void finish(int64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    done_[static_cast<size_t>(id)] = 1;
    while (prefix_ < static_cast<int64_t>(done_.size()) && done_[static_cast<size_t>(prefix_)])
      ++prefix_;
    earlier_done_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable earlier_done_;
  std::vector<uint8_t> done_;
  int64_t prefix_ = 0;  ///< blocks 0 .. prefix_-1 have finished
};

/// Where a block stands in its run's atomic order.
struct AtomicTurn {
  AtomicOrder* order = nullptr;
  int64_t id = 0;
  bool waited = false;
};

/// TileExec for one operator call: evaluates in the representative thread's context.
class OpExec : public TileExec {
 public:
  OpExec(BlockState& block, int thread, AtomicTurn& turn)
      : block_(block), thread_(thread), turn_(turn) {}
  int64_t eval_int(const Expr& e) override { return eval_scalar(e, block_, thread_).i; }
  double eval_value(const Expr& e) override {
    return eval_scalar(e, block_, thread_).as_double(e.dtype());
  }
  TensorView view(const Buffer& buffer) override {
    return block_.storage(buffer, thread_).view(buffer.get());
  }
  std::unique_lock<std::mutex> lock_atomics() override {
    if (turn_.order && !turn_.waited) {
      turn_.order->wait_for_earlier(turn_.id);
      turn_.waited = true;
    }
    return std::unique_lock<std::mutex>(block_.global().atomics);
  }

 private:
  BlockState& block_;
  int thread_;
  AtomicTurn& turn_;
};

class BlockRunner {
 public:
  /// `parallel`: where T.Parallel nests run compiled (null: every nest runs generically);
  /// `turn`: the block's place in the order of atomics.
  /// `facts`: what the kernel's blocks share (KernelFacts).
  BlockRunner(BlockState& block, RunControl* control, ParallelCache* parallel, AtomicTurn turn,
              const KernelFacts& facts)
      : block_(block), steps_(control), parallel_(parallel), facts_(facts), turn_(turn) {}

  void run() {
    Lanes all(block_.num_threads());
    for (int t = 0; t < block_.num_threads(); ++t) all[t] = t;
    exec(block_.kernel()->body, all);
    steps_.flush([&] { return where(block_.kernel()->body); });
  }

 private:
  void exec(const Stmt& s, const Lanes& lanes) {
    if (lanes.empty()) return;
    if (s->loc.known()) block_.set_current_loc(s->loc);
    steps_.step([&] { return where(s); });
    switch (s.kind()) {
      case StmtKind::kSeq:
        for (const Stmt& c : s.as<SeqNode>()->stmts) exec(c, lanes);
        break;
      case StmtKind::kFor:
        exec_for(s.as<ForNode>(), lanes);
        break;
      case StmtKind::kIf: {
        const auto* op = s.as<IfNode>();
        Lanes yes, no;
        for (int t : lanes) (eval_scalar(op->cond, block_, t).i ? yes : no).push_back(t);
        exec(op->then_case, yes);
        if (op->else_case.defined()) exec(op->else_case, no);
        break;
      }
      case StmtKind::kStore:
        exec_store(s.as<StoreNode>(), lanes);
        break;
      case StmtKind::kAlloc: {
        const auto* op = s.as<AllocNode>();
        // A block's buffer (shared, fragment) is allocated once, as the first thread sees its
        // extents; a thread's own (T.alloc_local) once a thread.
        const bool per_thread = is_per_thread(op->buffer->scope);
        if (!per_thread) block_.allocate(op->buffer, lanes[0]);
        if (!per_thread && !op->init.defined()) break;
        for (int t : lanes) {
          if (per_thread) block_.allocate(op->buffer, t);
          if (op->init.defined()) {
            HostTensor& storage = block_.storage(op->buffer, t);
            for (int64_t i = 0; i < storage.size(); ++i) {
              storage.set(i, eval_scalar(op->init, block_, t).as_double(op->init.dtype()));
            }
          }
        }
        break;
      }
      case StmtKind::kLet: {
        const auto* op = s.as<LetNode>();
        const auto* var = static_cast<const VarNode*>(op->var.get());
        if (all_threads(s, lanes)) {
          block_.bind_uniform(var, eval_scalar(op->value, block_, lanes[0]));
        } else {
          for (int t : lanes) block_.thread(t).vars[var] = eval_scalar(op->value, block_, t);
        }
        exec(op->body, lanes);
        break;
      }
      case StmtKind::kBarrier:
        if (!in_parallel_ && static_cast<int>(lanes.size()) != block_.num_threads()) {
          user_error(where(s) + ": T.sync_threads() is reached by only " +
                     std::to_string(lanes.size()) + " of " + std::to_string(block_.num_threads()) +
                     " threads (it sits in a branch or loop that depends on the thread); every "
                     "thread of the block must reach the same barrier — move it out of the branch");
        }
        break;
      case StmtKind::kTileOpCall: {
        const TileOp& op = *s.as<TileOpCallNode>()->op;
        // Inside `with T.ws(g)` (a branch on the thread index) an operator runs for the
        // branch's threads, which must be one range of whole warps (the lowering partitions its
        // work over that range); it runs once, as on the whole block.
        const int n = static_cast<int>(lanes.size());
        if (!in_parallel_ && n != block_.num_threads() &&
            (lanes.back() - lanes.front() + 1 != n || lanes.front() % kNvidiaWarpSize != 0 ||
             n % kNvidiaWarpSize != 0)) {
          user_error(where(s) + ": " + op.describe() + " is executed by only " + std::to_string(n) +
                     " of " + std::to_string(block_.num_threads()) +
                     " threads, which are not one range of whole warps; a tile operator runs "
                     "on the whole block or on the warps of one `with T.ws(g)` branch");
        }
        if (!facts_.per_thread(op)) {
          OpExec ctx(block_, lanes[0], turn_);
          op.run_reference(ctx);
          break;
        }
        for (int t : lanes) {
          OpExec ctx(block_, t, turn_);
          op.run_reference(ctx);
        }
        break;
      }
      case StmtKind::kUseSwizzle:
        break;  // only the order of blocks changes
      case StmtKind::kPrint: {
        // Every thread that runs it prints; an iteration of T.Parallel belongs to no thread yet.
        const auto* op = s.as<PrintNode>();
        for (int t : lanes) {
          Value v = eval_scalar(op->value, block_, t);
          DataType dt = op->value.dtype();
          write_print(s->loc, op->msg, block_.block_index(),
                      in_parallel_ ? std::nullopt : std::optional<int>(t), dt,
                      dt.is_integral() ? 0.0 : v.as_double(dt), dt.is_integral() ? v.i : 0);
        }
        break;
      }
      case StmtKind::kIntrinsicCall: {
        // Synchronisation (mbarriers, fences) orders threads; the tile level runs them in
        // program order already, and checks that program order satisfies every mbarrier wait.
        track_mbarrier(s, lanes);
        if (intrinsic_info(s.as<IntrinsicCallNode>()->intrinsic).sync) break;
        std::string text = print_stmt(s);
        user_error(where(s) + ": the hardware instruction `" + text.substr(0, text.find('\n')) +
                   "` is warp-level code that the tile level does not model; run this kernel "
                   "with --level thread");
      }
    }
  }

  /// The phases of the block's mbarriers in program order: arrivals complete a phase every
  /// `count`; a wait for a phase that has not completed (a producer and a consumer loop in
  /// separate T.ws branches, which only run right when they run concurrently) is a user error
  /// instead of a wrong result.
  void track_mbarrier(const Stmt& s, const Lanes& lanes) {
    const auto* call = s.as<IntrinsicCallNode>();
    const IntrinsicId id = call->intrinsic;
    if (id != IntrinsicId::kMbarrierInit && id != IntrinsicId::kMbarrierArrive &&
        id != IntrinsicId::kMbarrierArriveExpectTx && id != IntrinsicId::kMbarrierWaitParity) {
      return;
    }
    const IntrinsicArg& bar = call->args[0];
    if (!bar.buffer.defined() || bar.indices.size() != 1) return;
    const int t = lanes[0];
    auto key = std::make_pair(bar.buffer.get(), eval_scalar(bar.indices[0], block_, t).i);
    if (id == IntrinsicId::kMbarrierInit) {
      mbarriers_[key] = TileBarrier{eval_scalar(call->args[1].value, block_, t).i, 0, 0};
      return;
    }
    auto it = mbarriers_.find(key);
    if (it == mbarriers_.end() || it->second.count <= 0) return;
    TileBarrier& b = it->second;
    if (id != IntrinsicId::kMbarrierWaitParity) {
      b.arrivals += static_cast<int64_t>(lanes.size());
      b.phase += b.arrivals / b.count;
      b.arrivals %= b.count;
      return;
    }
    const int64_t parity = eval_scalar(call->args[1].value, block_, t).i;
    if (floor_mod(b.phase, 2) != floor_mod(parity, 2)) return;  // that phase has completed
    user_error(where(s) + ": the wait for parity " + std::to_string(parity) + " of mbarrier '" +
               bar.buffer->name + "[" + std::to_string(key.second) +
               "]' would block: in program "
               "order, which the tile level runs, its phase " +
               std::to_string(b.phase) + " has " + std::to_string(b.arrivals) + " of " +
               std::to_string(b.count) +
               " arrivals. A kernel whose T.ws branches must run concurrently (a producer and a "
               "consumer loop, each in its own branch) has no program-order meaning; check it at "
               "thread level against its reference (tessel run --level thread), or put the loop "
               "around the branches, as TileLang's examples do");
  }

  void exec_for(const ForNode* op, const Lanes& lanes) {
    const auto* var = static_cast<const VarNode*>(op->var.get());
    if (op->for_kind == ForKind::kParallel && !in_parallel_) {
      // A T.Parallel nest is element-wise work of the whole block: run every iteration once,
      // in the context of the first thread.
      if (parallel_ && parallel_->run(op, block_, lanes[0], steps_)) return;
      in_parallel_ = true;
      exec_for_uniform(op, var, {lanes[0]});
      in_parallel_ = false;
      return;
    }
    exec_for_uniform(op, var, lanes);
  }

  /// Runs the loop for `lanes` in lock-step: iteration n runs for the lanes whose trip count
  /// exceeds n.
  void exec_for_uniform(const ForNode* op, const VarNode* var, const Lanes& lanes) {
    if (lanes.size() == 1) {  // one lane (every T.Parallel iteration): no per-iteration lists
      const int64_t lo = eval_scalar(op->min, block_, lanes[0]).i;
      const int64_t n = eval_scalar(op->extent, block_, lanes[0]).i;
      for (int64_t it = 0; it < n; ++it) {
        block_.thread(lanes[0]).vars[var] = Value::of_int(lo + it);
        exec(op->body, lanes);
      }
      return;
    }
    if (all_threads(op, lanes)) {  // the same bounds in every thread: bound once per iteration
      const int64_t lo = eval_scalar(op->min, block_, lanes[0]).i;
      const int64_t n = eval_scalar(op->extent, block_, lanes[0]).i;
      for (int64_t it = 0; it < n; ++it) {
        block_.bind_uniform(var, Value::of_int(lo + it));
        exec(op->body, lanes);
      }
      return;
    }
    std::vector<int64_t> lo(lanes.size()), n(lanes.size());
    int64_t most = 0;
    for (size_t k = 0; k < lanes.size(); ++k) {
      lo[k] = eval_scalar(op->min, block_, lanes[k]).i;
      n[k] = eval_scalar(op->extent, block_, lanes[k]).i;
      most = std::max(most, n[k]);
    }
    Lanes active;
    for (int64_t it = 0; it < most; ++it) {
      active.clear();
      for (size_t k = 0; k < lanes.size(); ++k) {
        if (it < n[k]) {
          active.push_back(lanes[k]);
          block_.thread(lanes[k]).vars[var] = Value::of_int(lo[k] + it);
        }
      }
      exec(op->body, active);
    }
  }

  /// Every lane evaluates its index and value before any lane writes, as in SIMT lock-step
  /// (so a lane reading another lane's storage or shuffling sees the old value).
  void exec_store(const StoreNode* op, const Lanes& lanes) {
    struct Pending {
      HostTensor* storage;
      int64_t flat;
      double value;
    };
    std::vector<int64_t>& idx = store_index_;  // reused: a store does not nest
    idx.resize(op->indices.size());
    if (lanes.size() == 1) {  // one lane: nothing to hold back
      const int t = lanes[0];
      for (size_t d = 0; d < idx.size(); ++d)
        idx[d] = eval_store_index(op->indices[d], op, block_, t);
      Value v = eval_scalar(op->value, block_, t);
      HostTensor& storage = block_.storage(op->buffer, t);
      storage.set(checked_flat_index(block_, t, op->buffer, storage, idx, "store to"),
                  v.as_double(op->value.dtype()));
      return;
    }
    std::vector<Pending> pending;
    pending.reserve(lanes.size());
    for (int t : lanes) {
      for (size_t d = 0; d < idx.size(); ++d)
        idx[d] = eval_store_index(op->indices[d], op, block_, t);
      Value v = eval_scalar(op->value, block_, t);
      HostTensor& storage = block_.storage(op->buffer, t);
      int64_t flat = checked_flat_index(block_, t, op->buffer, storage, idx, "store to");
      pending.push_back({&storage, flat, v.as_double(op->value.dtype())});
    }
    for (const Pending& p : pending) p.storage->set(p.flat, p.value);
  }

  /// Whether statement `s` binds a value that is the same in every thread (uniform_bindings) and
  /// all the block's threads run it.
  bool all_threads(const StmtNode* s, const Lanes& lanes) const {
    return static_cast<int>(lanes.size()) == block_.num_threads() && facts_.uniform.count(s);
  }
  bool all_threads(const Stmt& s, const Lanes& lanes) const { return all_threads(s.get(), lanes); }

  std::string where(const Stmt& s) const {
    return "kernel '" + block_.kernel()->name + "', " + block_.block_name() +
           (s->loc.known() ? " (at " + s->loc.str() + ")" : "");
  }

  /// An mbarrier in program order: arrivals per phase, those of the current phase, and the
  /// phases completed.
  struct TileBarrier {
    int64_t count = 0;
    int64_t arrivals = 0;
    int64_t phase = 0;
  };

  BlockState& block_;
  StepCounter steps_;
  ParallelCache* parallel_;
  const KernelFacts& facts_;
  AtomicTurn turn_;
  bool in_parallel_ = false;
  std::vector<int64_t> store_index_;
  std::map<std::pair<const BufferNode*, int64_t>, TileBarrier> mbarriers_;
};

}  // namespace

/// Binds symbolic dimensions from the tensors' shapes and checks each parameter's dtype and
/// shape against the signature.
IntEnv bind_tensors(const Kernel& kernel, const TensorMap& tensors) {
  IntEnv env;
  std::string k = "kernel '" + kernel->name + "'";
  for (const Buffer& b : kernel->params) {
    auto it = tensors.find(b->name);
    if (it == tensors.end()) user_error(k + ": no tensor given for parameter '" + b->name + "'");
    const HostTensor& t = it->second;
    if (t.dtype() != b->dtype) {
      user_error(k + ": tensor '" + b->name + "' is " + t.dtype().name() +
                 " but the signature says " + b->dtype.name());
    }
    if (t.shape().size() != b->ndim()) {
      user_error(k + ": tensor '" + b->name + "' has " + std::to_string(t.shape().size()) +
                 " dimensions but the signature has " + std::to_string(b->ndim()));
    }
    for (size_t d = 0; d < b->ndim(); ++d) {
      if (const auto* v = b->shape[d].as<VarNode>()) {
        auto [pos, inserted] = env.emplace(v, t.shape()[d]);
        if (!inserted && pos->second != t.shape()[d]) {
          user_error(k + ": symbolic dimension '" + v->name + "' is " +
                     std::to_string(pos->second) + " from one tensor but " +
                     std::to_string(t.shape()[d]) + " from '" + b->name + "'");
        }
      }
    }
  }
  for (const Buffer& b : kernel->params) {
    const HostTensor& t = tensors.at(b->name);
    for (size_t d = 0; d < b->ndim(); ++d) {
      int64_t want = eval_int(b->shape[d], env);
      if (want != t.shape()[d]) {
        user_error(k + ": tensor '" + b->name + "' has extent " + std::to_string(t.shape()[d]) +
                   " in dimension " + std::to_string(d) + " but the signature says " +
                   to_string(b->shape[d]) + " = " + std::to_string(want));
      }
    }
  }
  return env;
}

std::map<std::string, std::vector<int64_t>> param_shapes(
    const Kernel& kernel, const std::map<std::string, int64_t>& dims) {
  IntEnv env;
  for (const Var& v : kernel->dynamic_vars) {
    auto it = dims.find(v.name());
    if (it == dims.end()) {
      user_error("kernel '" + kernel->name + "': symbolic dimension '" + v.name() +
                 "' has no value; give it with -D " + v.name() + "=N");
    }
    env[static_cast<const VarNode*>(v.get())] = it->second;
  }
  std::map<std::string, std::vector<int64_t>> out;
  for (const Buffer& b : kernel->params) {
    for (const Expr& e : b->shape) out[b->name].push_back(eval_int(e, env));
  }
  return out;
}

std::vector<std::string> add_scratch_tensors(const Kernel& kernel, TensorMap& tensors) {
  IntEnv env = bind_tensors(kernel, tensors);
  std::vector<std::string> names;
  for (const Buffer& b : kernel->scratch) {
    if (tensors.count(b->name)) {
      user_error("kernel '" + kernel->name + "': a tensor named '" + b->name +
                 "' is given, but that is the name of its T.alloc_global scratch; the scratch is "
                 "made by the kernel, not passed in");
    }
    std::vector<int64_t> shape;
    for (const Expr& e : b->shape) shape.push_back(eval_int(e, env));
    tensors.emplace(b->name, HostTensor(b->dtype, shape, 0xFF));
    names.push_back(b->name);
  }
  return names;
}

void remove_scratch_tensors(const std::vector<std::string>& names, TensorMap& tensors) {
  for (const std::string& n : names) tensors.erase(n);
}

TileRunStats run_tile_level(const Kernel& kernel, TensorMap& tensors, TileRunOptions options) {
  if (is_multi_launch(kernel)) {
    // The launches run in order on the same tensors; the scratch lives from the first to the last.
    std::vector<std::string> scratch = add_scratch_tensors(kernel, tensors);
    TileRunStats total;
    try {
      for (const Kernel& launch : kernel->launches) {
        TileRunStats s = run_tile_level(launch, tensors, options);
        total.blocks += s.blocks;
        total.seconds += s.seconds;
      }
    } catch (...) {
      remove_scratch_tensors(scratch, tensors);
      throw;
    }
    remove_scratch_tensors(scratch, tensors);
    return total;
  }
  auto start = std::chrono::steady_clock::now();
  GlobalMemory global;
  IntEnv dyn = bind_tensors(kernel, tensors);
  check_capacity(kernel, nullptr, dyn);  // before a block allocates its buffers
  for (const Buffer& b : kernel->params) global.tensors[b.get()] = &tensors.at(b->name);
  const IntEnv& env = dyn;
  std::vector<int64_t> grid;
  int64_t blocks = 1;
  for (const Expr& g : kernel->grid) {
    int64_t n = eval_int(g, env);
    if (n <= 0) {
      user_error("kernel '" + kernel->name + "': grid extent " + to_string(g) + " = " +
                 std::to_string(n) + " for these shapes; every grid extent must be positive");
    }
    grid.push_back(n);
    blocks *= n;
  }

  int workers = options.workers > 0
                    ? options.workers
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t count =
      options.only_blocks ? static_cast<int64_t>(options.only_blocks->size()) : blocks;
  for (int64_t i = 0; options.only_blocks && i < count; ++i) {
    int64_t b = (*options.only_blocks)[i];
    internal_check(b >= 0 && b < blocks, "run_tile_level: only_blocks lies outside the grid");
  }
  workers = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(workers, count)));
  if (options.control) options.control->begin("tile level", count);
  const KernelFacts facts{uniform_bindings(kernel), per_thread_operators(kernel)};
  std::atomic<int64_t> next{0};
  // The error reported is the first failing block's in block order: blocks are handed out in
  // that order, so every block before a failing one has started and is let finish.
  std::exception_ptr failure;
  int64_t failed_block = count;
  std::mutex failure_lock;
  std::optional<AtomicOrder> order;
  if (workers > 1) order.emplace(count);
  auto worker = [&] {
    ParallelCache parallel;  // each worker compiles the nests it meets
    int64_t id = 0;
    try {
      for (id = next++; id < count; id = next++) {
        std::vector<int64_t> index(grid.size());
        int64_t rest = options.only_blocks ? (*options.only_blocks)[id] : id;
        for (size_t d = 0; d < grid.size(); ++d) {
          index[d] = rest % grid[d];
          rest /= grid[d];
        }
        BlockState block(kernel, global, index, dyn);
        AtomicTurn turn{order ? &*order : nullptr, id};
        BlockRunner(block, options.control, options.compiled_parallel ? &parallel : nullptr, turn,
                    facts)
            .run();
        if (order) order->finish(id);
        if (options.control) options.control->block_done();
      }
    } catch (...) {
      if (order && id < count) order->finish(id);
      std::lock_guard<std::mutex> lock(failure_lock);
      if (id < failed_block) {
        failure = std::current_exception();
        failed_block = id;
      }
      next = count;  // stop the other workers early
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);

  TileRunStats stats;
  stats.blocks = blocks;
  stats.ran = count;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace tessel
