// Internals of the thread-level interpreter, shared by its .cpp files: the block executor, the
// per-warp SIMT executor, and the coroutine that lets a warp stop at a barrier and resume.
//
// Execution model. A block's threads form warps of the target's size. A warp executes every
// statement for all its active lanes at once (one expression node evaluated for 32/64 lanes, one
// warp-wide memory request presented to sim/), with an active mask narrowed by `if` and by loops
// whose trip count differs between lanes. Warps run one after another; a warp runs until it
// reaches a barrier or finishes. When every warp waits or has finished, the barrier round ends
// (sim checks that everyone met at the same barrier) and the next round starts — so everything a
// warp does between two barriers happens before or after everything another warp does between
// them, in the order --schedule picks. Statements that contain no barrier are executed by plain
// recursion; only those that do are coroutines, so a warp can stop inside nested loops.
#pragma once

#include <array>
#include <bit>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "core/target.h"
#include "interp/host_tensor.h"
#include "interp/thread_interpreter.h"
#include "interp/thread_program.h"
#include "sim/block_sim.h"

namespace tessel::thread_detail {

/// A lazily started coroutine that resumes its awaiter when it finishes (symmetric transfer),
/// so a barrier deep inside nested statements suspends the whole chain back to the scheduler.
class Task {
 public:
  struct promise_type {
    std::coroutine_handle<> continuation = std::noop_coroutine();
    std::exception_ptr error;
    Task get_return_object() {
      return Task(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct FinalAwaiter {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        return h.promise().continuation;
      }
      void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { error = std::current_exception(); }
  };

  Task() = default;
  explicit Task(std::coroutine_handle<promise_type> h) : h_(h) {}
  Task(Task&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = o.h_;
      o.h_ = nullptr;
    }
    return *this;
  }
  Task(const Task&) = delete;
  ~Task() {
    if (h_) h_.destroy();
  }

  // Awaiting a task starts it; the awaiter continues when it finishes.
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> parent) noexcept {
    h_.promise().continuation = parent;
    return h_;
  }
  void await_resume() const {
    if (h_.promise().error) std::rethrow_exception(h_.promise().error);
  }

  std::coroutine_handle<promise_type> handle() const { return h_; }

 private:
  std::coroutine_handle<promise_type> h_;
};

/// One warp's registers and scheduling state.
struct WarpState {
  int id = 0;
  int first_thread = 0;
  uint64_t live = 0;             ///< lanes that exist (a last partial warp has fewer)
  std::vector<LaneValues> regs;  ///< one per variable slot; written through write_reg
  /// Values of the thread-invariant trees (CExpr::cache), and the lanes each holds.
  std::vector<LaneValues> cached;
  std::vector<uint64_t> cached_lanes;
  /// Values of the repeated trees (CExpr::reuse), the lanes each holds, and the count of
  /// register writes when they were computed: a later write makes them stale.
  std::vector<LaneValues> reused;
  std::vector<uint64_t> reused_lanes;
  std::vector<uint64_t> reused_at;
  uint64_t reg_writes = 0;
  /// Variable slot `slot`, to be written.
  LaneValues& write_reg(int slot) {
    ++reg_writes;
    return regs[slot];
  }
  Task task;                       ///< the warp's program, when it contains barriers
  std::coroutine_handle<> resume;  ///< where to continue after a barrier
  bool started = false;
  bool done = false;
  int barrier_site = -1;  ///< the barrier it waits at
  uint64_t barrier_mask = 0;
  /// Blocked on an mbarrier phase (mbar_site >= 0): the wait call's site, the barrier and the
  /// parity it waits for, and the lane that waits.
  int mbar_site = -1;
  int mbar_buffer = -1;
  int64_t mbar_flat = 0;
  int64_t mbar_parity = 0;
  int mbar_lane = 0;
};

/// One buffer's storage in a block: 8-byte cells (int64 or double bits) for shared and local
/// buffers, the host tensor for globals.
struct Storage {
  std::vector<uint64_t> cells;  ///< shared: [size]; local: [threads * size]
  int64_t size = 0;             ///< elements per block (shared) or per thread (local)
  HostTensor* tensor = nullptr;
  bool is_float = false;
  /// Globals of float16 (1) or float32 (2): read straight from the tensor's bytes, decoded as
  /// HostTensor::at does. 0: through HostTensor::at.
  uint8_t direct = 0;
  bool allocated = false;
};

/// Everything a block run shares with the others.
struct LaunchContext {
  const ThreadProgram& prog;
  sim::SimRun& sim;
  std::vector<HostTensor*> tensors;     ///< by parameter
  std::vector<int64_t> dynamic_values;  ///< by program.dynamic_slots
  std::vector<int64_t> grid;
  int warp_size = 32;
  Schedule schedule;
  /// Held by a warp-wide atomic on global memory: blocks run on several CPU threads, and each
  /// lane's read-modify-write must see the previous one.
  std::mutex global_atomics{};
  RunControl* control = nullptr;   ///< step and time limits, progress counters (optional)
  const Target* target = nullptr;  ///< the limits each allocation is checked against; the
                                   ///< instruction families the kernel may call
};

class WarpExec;

/// The memory requests of one T.vectorized loop, held back while its iterations run and then
/// presented to sim/ as the hardware issues them (thread_vector.cpp). A site that every
/// iteration v executes once, with the same lanes, each lane's element being its iteration-0
/// element + v along the last dimension, a run of 2, 4, 8 or 16 bytes aligned to its size,
/// becomes ONE request with `vector` = V (a 16-byte f16 copy: 4 phases of 8 lanes, not 8
/// requests of 2 bytes); any other site's requests are presented one per iteration, unchanged.
/// Values are read and written when each iteration runs, as in a serial loop; only what the
/// models see is grouped.
class VectorGroup {
 public:
  /// Starts holding the requests of a loop of `extent` iterations.
  void begin(int extent);
  bool active() const { return extent_ > 0; }
  void set_iteration(int v) { iteration_ = v; }
  /// Keeps `req` (its index arrays are copied), its resolution and, for stores, the lanes that
  /// wrote the value already held.
  void hold(const sim::WarpRequest& req, const sim::Resolved& r, uint64_t same, int rank);
  /// Presents the held requests in program order (a merged site at its iteration-0 place) and
  /// stops holding.
  void flush(sim::BlockSim& sim);

 private:
  struct Held {
    sim::WarpRequest req;
    sim::Resolved res;
    uint64_t same = 0;
    int iteration = 0;
    int rank = 0;
    std::vector<int64_t> index;  ///< [dimension * kMaxLanes + lane]
  };
  /// A contiguous run whose first lane address is not a multiple of its size.
  struct Misaligned {
    int lane = -1;
    int64_t offset = 0;  ///< byte offset in the buffer
    int bytes = 0;
  };
  /// Whether the requests held[at[0]], held[at[1]], ... of one site form one vector request;
  /// when they would but for alignment, `*misaligned` says where.
  bool mergeable(const std::vector<int>& at, const sim::BufferDesc& desc,
                 Misaligned* misaligned) const;

  int extent_ = 0;
  int iteration_ = 0;
  std::vector<Held> held_;  ///< entries [0, count_) are in use; the rest keep their storage
  size_t count_ = 0;
};

/// Per-dimension index values of one warp-wide access (up to 8 dimensions).
using IndexScratch = std::array<LaneValues, 8>;

/// Runs one block: storage, warps, barrier rounds.
class BlockExec {
 public:
  /// `turn`: the block's place in the launch's block order; its cross-block checks wait for the
  /// blocks before it (sim::SimRun::wait_turn), so findings do not depend on the workers. -1:
  /// checked at once.
  BlockExec(LaunchContext& launch, uint32_t block_linear, int64_t turn = -1);
  /// Runs the block to its end and hands the models' results to the launch.
  void run();

  const ThreadProgram& prog() const { return launch_.prog; }
  sim::BlockSim& sim() { return sim_; }
  int warp_size() const { return launch_.warp_size; }
  const Target* target() const { return launch_.target; }
  int threads() const { return threads_; }
  const std::vector<int64_t>& block_index() const { return block_index_; }
  int64_t lane_ops = 0;
  /// Counts statements executed by the block's warps against the run's limits.
  StepCounter steps;

  // ---- Memory (thread_memory.cpp) -----------------------------------------------------------
  /// A warp-wide load of one element per lane (lanes outside the shape read 0).
  void load(const WarpState& w, int buffer, int site, uint64_t mask,
            const std::array<const int64_t*, 8>& index, LaneValues& out);
  /// A warp-wide store of one element per lane.
  void store(const WarpState& w, int buffer, int site, uint64_t mask,
             const std::array<const int64_t*, 8>& index, const LaneValues& values);
  /// The cell of element `flat` of a shared (thread ignored) or local buffer.
  uint64_t& cell(int buffer, int thread, int64_t flat) {
    Storage& s = storage_[buffer];
    return s.cells[launch_.prog.buffers[buffer].space == sim::Space::kLocal
                       ? static_cast<int64_t>(thread) * s.size + flat
                       : flat];
  }
  /// Element `flat` of a global tensor as a cell of `is_float` kind, and back.
  uint64_t global_cell(int buffer, int64_t flat) const;
  void set_global_cell(int buffer, int64_t flat, uint64_t cell);
  /// A TMA store completes: its values land in global memory, and the simulator checks its
  /// writes against the other accesses of the block and of other blocks.
  void land_bulk_store(const sim::BulkStore& store);
  Storage& storage(int buffer) { return storage_[buffer]; }
  /// The requests of the T.vectorized loop running now, if any.
  VectorGroup& vectors() { return vectors_; }
  /// The lock of atomics on global memory (shared by every block of the launch).
  std::mutex& global_atomics() { return launch_.global_atomics; }
  /// "kernel 'k', block (1, 0), thread 5" for messages.
  std::string where(int thread) const;

 private:
  /// Creates the storage of every allocation (shared: one per block; local: one per thread),
  /// uninitialised, and registers it with the models. Extents are evaluated in thread 0.
  void allocate();
  void run_warp(WarpState& w);
  /// Every live warp is blocked: records the deadlock with who waits where.
  void report_deadlock();
  std::vector<int> warp_order(int round);
  /// Hands a resolved load or store to the models, or to the T.vectorized loop holding them.
  void present(const sim::WarpRequest& req, const sim::Resolved& r, uint64_t same = 0);

  LaunchContext& launch_;
  uint32_t block_linear_;
  std::vector<int64_t> block_index_;
  int threads_;
  sim::BlockSim sim_;
  std::vector<Storage> storage_;
  std::vector<WarpState> warps_;
  std::vector<std::unique_ptr<WarpExec>> execs_;  ///< live as long as the warps' coroutines
  VectorGroup vectors_;
};

/// Executes statements and evaluates expressions for one warp.
class WarpExec {
 public:
  WarpExec(BlockExec& block, WarpState& warp) : block_(block), warp_(warp) {}

  /// The value of `e` in every lane of `mask`; the result lives in `scratch` or in a register
  /// or constant the node owns.
  const LaneValues& eval(const CExpr* e, uint64_t mask, LaneValues& scratch);
  /// Executes a statement without barriers.
  void exec(const CStmt* s, uint64_t mask);
  /// Executes a statement that contains barriers, suspending at each.
  Task exec_co(const CStmt* s, uint64_t mask);

 private:
  struct BarrierAwaiter {
    WarpState& warp;
    int site;
    uint64_t mask;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept {
      warp.resume = h;
      warp.barrier_site = site;
      warp.barrier_mask = mask;
    }
    void await_resume() const noexcept {}
  };
  /// Suspends a warp blocked on an mbarrier (WarpState::mbar_* say where).
  struct MbarrierAwaiter {
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept { warp.resume = h; }
    void await_resume() const noexcept {}
    WarpState& warp;
  };

  // thread_eval.cpp
  /// eval() without the thread-invariant and repeated-tree shortcuts of node `e` itself.
  const LaneValues& eval_fresh(const CExpr* e, uint64_t mask, LaneValues& scratch);
  /// eval() without the uniform and thread-invariant shortcuts of node `e` itself.
  const LaneValues& eval_node(const CExpr* e, uint64_t mask, LaneValues& scratch);
  /// eval() of a thread-invariant tree (CExpr::cache): from the warp's cache.
  const LaneValues& eval_cached(const CExpr* e, uint64_t mask, LaneValues& scratch);
  /// eval() of a repeated tree (CExpr::reuse): from the warp's values while no register changed.
  const LaneValues& eval_reused(const CExpr* e, uint64_t mask, LaneValues& scratch);
  void eval_binary(const CExpr* e, uint64_t mask, LaneValues& out);
  void eval_call(const CExpr* e, uint64_t mask, LaneValues& out);
  void eval_shuffle(const CExpr* e, uint64_t mask, LaneValues& out);
  void eval_load(const CExpr* e, uint64_t mask, LaneValues& out);
  /// The user error of a division `e` by zero in `lane`, naming the kernel, block, thread, the
  /// source line and, inside an index, the access (interp/division_error.h).
  [[noreturn]] void division_by_zero(const CExpr* e, int lane) const;
  // thread_exec.cpp
  void exec_for(const CStmt* s, uint64_t mask);
  void exec_store(const CStmt* s, uint64_t mask);
  void exec_alloc(const CStmt* s, uint64_t mask);
  // thread_vector.cpp
  /// A T.vectorized loop (s->vector > 0): the iterations run as in exec_for, their memory
  /// requests are grouped by block_.vectors().
  void exec_vectorized(const CStmt* s, uint64_t mask);
  // thread_intrinsics.cpp
  /// False when the call blocked (an mbarrier wait whose phase has not completed): the warp
  /// must suspend and run it again.
  bool exec_intrinsic(const CStmt* s, uint64_t mask);
  /// Evaluates an element operand's indices for the lanes of `mask` into `idx`.
  std::array<const int64_t*, 8> eval_indices(const std::vector<const CExpr*>& indices,
                                             uint64_t mask, IndexScratch& idx);

  friend class IntrinsicCallExec;  // thread_intrinsics.cpp: the families' WarpIntrinsicExec
  BlockExec& block_;
  WarpState& warp_;
  /// The access whose indices are being evaluated (access null outside an index), and the site
  /// of the statement running (for its source line; -1 when unknown).
  struct IndexOf {
    const char* access = nullptr;
    int buffer = -1;
    const std::vector<Expr>* indices = nullptr;
  };
  IndexOf index_of_;
  int site_ = -1;
};

/// Calls f(lane) for every set bit of `mask`, lowest first.
template <typename F>
inline void for_lanes(uint64_t mask, F&& f) {
  for (; mask; mask &= mask - 1) f(std::countr_zero(mask));
}

}  // namespace tessel::thread_detail
