// The lowering pipeline from tile level to thread level, one pass per file, run in order by
// `lower_kernel` (and printed after each pass by `tessel lower --print-after-all`):
//
//   rasterize_blocks   T.use_swizzle -> block indices remapped in panels (core/pass_rasterize.cpp)
//   plan_pipelines     stage and order of each statement of a T.Pipelined loop (pass_pipeline_plan)
//   infer_layouts      strict -> common -> free layout inference     (pass_layout_inference.cpp)
//   lower_tile_ops     tile operators and T.Parallel -> per-thread code; pipelined loops get
//                      multi-buffered tiles and cp.async groups (pass_lower_tile_ops.cpp,
//                      pipeline_inject.cpp)
//   warp_specialize    sm90: pipelined loops -> producer warpgroup + consumers on mbarriers
//                      (pass_warp_specialize.cpp; elsewhere lower_tile_ops pipelines them)
//   flatten_buffers    fragments -> registers, laid-out shared buffers -> 1-d (pass_flatten.cpp)
//   insert_barriers    T.sync_threads() where shared memory changes hands (pass_barriers.cpp)
//   simplify_indices   index arithmetic simplified over the known ranges (pass_simplify.cpp)
//   split_loops        loops split where masks are provably constant, then simplified again
//                      (pass_loop_split.cpp)
//   sink_consumer_code sm90: consumer-only statements around a warp-specialised split moved into
//                      the consumer branch (pass_ws_sink.cpp)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "core/lowering.h"
#include "core/pipeline_inject.h"
#include "core/target.h"

namespace tessel {

/// A kernel on its way down: the IR, the layouts inference chose, and the register buffers
/// that fragments became.
struct LoweringState {
  Kernel kernel;
  LayoutMap layouts;
  std::map<const BufferNode*, Buffer> registers;
  /// The T.Pipelined loops lower_tile_ops left to warp_specialize (by loop variable): their
  /// lowered statements with stage and order (the loop's body holds them too, for printing).
  std::map<const ExprNode*, std::vector<PipelineGroup>> deferred_pipelines;
  /// Why warp_specialize left the kernel's pipelines to the sm80 schedule (empty otherwise).
  std::string warp_specialize_blocker;
  /// Why warp_specialize's producer copies with cp.async instead of TMA (empty otherwise).
  std::string warp_specialize_cp_async_reason;
};

struct PassSnapshot {
  std::string pass;  ///< the pass's name
  std::string text;  ///< the IR after it (and, after inference, the layouts)
};

struct LowerOptions {
  bool print_after_all = false;  ///< keep a snapshot after every pass
  /// Test-only: software pipelines without their cp.async wait, so that tests can show the
  /// simulator catching the reads that race with the copies.
  bool drop_pipeline_wait = false;
  /// Peel the prologue and epilogue of software pipelines whose trip count is provably at least
  /// num_stages - 1 (core/pipeline_inject.h); false keeps one guarded loop (tests compare both).
  bool peel_pipelines = true;
  /// Refuse a kernel over the target's shared memory, registers or threads (core/capacity.h),
  /// before lowering and after. `tessel verify` turns it off and reports the limits as checks.
  bool check_capacity = true;
  /// sm90: T.Pipelined loops become a producer warpgroup and consumers ordered by mbarriers
  /// (warp_specialize); false keeps the sm80 schedule (cp.async multi-buffering).
  bool warp_specialize = true;
  /// With warp_specialize: the producer copies with TMA where every copy of the loop allows it
  /// (cp.async by all producer threads otherwise).
  bool warp_specialize_tma = true;
  /// With warp_specialize: setmaxnreg rebalances registers (producer down, consumers up).
  bool set_max_nreg = true;
  /// Test-only: a broken barrier protocol in warp_specialize's output, which the thread-level
  /// simulator must report: the consumers wait for the wrong parity of `full` (they pass
  /// before the data is there), or `empty` expects one arrival too many (the producer hangs).
  bool ws_wrong_parity = false;
  bool ws_wrong_arrival_count = false;
  /// Split serial loops where the conditions of their selects are provably constant (a causal
  /// mask below the diagonal) and fold them there (pass_loop_split.cpp); tests compare both.
  bool split_loops = true;
};

struct LoweredKernel {
  Kernel kernel;      ///< thread-level IR
  LayoutMap layouts;  ///< what inference chose (for reports and `tessel verify`)
  std::vector<PassSnapshot> snapshots;
  /// The IR flatten_buffers received (one-launch kernels): instructions still name their shared
  /// tiles' logical elements, which the TMA box proofs check against `layouts`.
  Kernel before_flatten;
  /// Why the lowering took a slower path than the target allows (`tessel lower` prints them):
  /// a pipeline left unsplit on sm90, a warp-specialised producer copying with cp.async.
  std::vector<std::string> notes;
};

/// Runs every pass for `target`. User errors name the kernel, the operator and the fix.
LoweredKernel lower_kernel(const Kernel& kernel, const Target& target,
                           const LowerOptions& options = {});

/// True when the kernel has tile operators or T.Parallel/T.Pipelined loops (it needs lowering
/// before the thread-level interpreter or codegen can take it).
bool is_tile_level(const Kernel& kernel);

// ---- The passes, in order --------------------------------------------------------------------
Kernel rasterize_blocks(const Kernel& kernel);
Kernel plan_pipelines(const Kernel& kernel);
LayoutMap infer_layouts(const Kernel& kernel, const Target& target);
LoweringState lower_tile_ops(const Kernel& kernel, const Target& target, LayoutMap layouts,
                             const LowerOptions& options = {});
/// True when lower_tile_ops leaves T.Pipelined loops to warp_specialize (sm90, option on, and a
/// kernel that does not already use mbarriers).
bool defers_pipelines(const Kernel& kernel, const Target& target, const LowerOptions& options);
LoweringState warp_specialize(LoweringState state, const LowerOptions& options);
Kernel flatten_buffers(const LoweringState& state);
Kernel insert_barriers(const Kernel& kernel);
/// The first block barrier insert_barriers would put inside `body` if every thread ran it: the
/// statement it would go before, the shared buffer that changes hands there and where the
/// access before it is. insert_barriers puts none inside a branch on the thread index (the other
/// threads never arrive), so the lowering of tile operators inside `with T.ws(g)` asks this.
struct BarrierNeed {
  const StmtNode* before = nullptr;
  std::string buffer;
  SourceLoc previous;  ///< the write before it (unknown for a write after a read)
};
std::optional<BarrierNeed> barrier_needed_within(const Stmt& body, const Var& thread);
Kernel simplify_indices(const Kernel& kernel);
/// Serial loops (with a nested loop) split into a prefix, middle and suffix by index range, with
/// the comparisons of their select and if conditions that are proved constant on the prefix or
/// suffix replaced by their values. `changed` (optional) tells whether any loop was split.
Kernel split_loops(const Kernel& kernel, bool* changed = nullptr);
/// The guarded statements right before and after a warp-specialised `if` (both branches open
/// with set_max_nreg) that only the else branch's threads run, moved into that branch.
Kernel sink_consumer_code(const Kernel& kernel);

/// A copy of `kernel` with another body.
Kernel with_body(const Kernel& kernel, Stmt body);

}  // namespace tessel
