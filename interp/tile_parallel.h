// The tile level's fast path for T.Parallel nests: each nest is compiled once per worker into
// closures over slot-indexed variables and buffers, so an element costs no hash lookup, no
// visitor dispatch over node kinds and no dtype switch for the common element types.
//
// The compiled nest is the generic interpreter's exact twin: the same values (bit for bit), the
// same statements counted as steps, the same errors in the same order. It runs one iteration
// after another in the context of one thread, as the generic path runs a nest, and refuses
// (compile returns null, the generic path runs it) nests holding what only the generic path
// runs: tile operators, allocations, prints, intrinsics, warp shuffles, vector dtypes.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "core/stmt.h"
#include "interp/block_state.h"
#include "interp/run_control.h"

namespace tessel {

namespace tile_parallel {
class Program;
}

/// The compiled nests of one kernel, by their outermost loop. Not shared between threads: each
/// worker of the tile level holds its own.
class ParallelCache {
 public:
  ParallelCache();
  ~ParallelCache();
  ParallelCache(const ParallelCache&) = delete;
  ParallelCache& operator=(const ParallelCache&) = delete;

  /// Runs the T.Parallel nest `loop` for thread `thread` of `block`, counting steps on `steps`,
  /// as the generic interpreter would after it counted the loop statement itself. Returns false,
  /// having run nothing, when the nest cannot run compiled (see the file comment) or a variable
  /// or buffer it uses is not bound in this block yet: the caller then runs it generically, which
  /// reports the error where it happens.
  bool run(const ForNode* loop, BlockState& block, int thread, StepCounter& steps);

 private:
  std::unordered_map<const ForNode*, std::unique_ptr<tile_parallel::Program>> programs_;
  // One run's frame, reused.
  std::vector<Value> slots_;
  std::vector<uint8_t> bound_, assigned_;
  std::vector<uint64_t> version_;
  uint64_t runs_ = 0;
  std::vector<HostTensor*> tensors_;
};

/// Whether the T.Parallel nest `loop` runs compiled: false when it holds something only the
/// generic path runs (see the file comment).
bool parallel_nest_compiles(const ForNode* loop);

}  // namespace tessel
