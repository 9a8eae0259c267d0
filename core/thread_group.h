// Thread groups: the threads of a block that run a statement inside branches on the thread index
// (`with T.ws(g)`, `if tx < 128`). Tile operators inside such a branch are inferred and lowered
// for the group's threads only, with the thread index relative to the group's first thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/expr.h"
#include "core/kernel.h"

namespace tessel {

/// Which threads of a block take a nest of branches on the thread index: one flag per thread.
/// The whole block outside every branch.
class ThreadSet {
 public:
  /// Every thread of a block of `threads`.
  static ThreadSet all(int64_t threads);
  /// This set narrowed by a branch condition (`negate`: its else case). Returns nullopt when
  /// `cond` mentions anything but `thread` (a block index, a loop variable, a buffer) or is not
  /// integer arithmetic.
  [[nodiscard]] std::optional<ThreadSet> narrowed(const Expr& cond, const Var& thread,
                                                  bool negate) const;
  bool whole_block() const;
  /// The set as one range [first, first + count), when it is one.
  std::optional<std::pair<int64_t, int64_t>> range() const;
  /// "threads 128-255", "no thread", "threads 0-31 and 64-95".
  std::string to_string() const;
  bool operator==(const ThreadSet& o) const { return in_ == o.in_; }

 private:
  std::vector<bool> in_;
};

/// The threads a tile operator inside branches on the thread index is lowered for: the range
/// [first, first + count) of the block.
struct ThreadGroup {
  int64_t first = 0;
  int64_t count = 0;
};

/// The set as a group when it is one range of threads (nullopt otherwise).
std::optional<ThreadGroup> thread_group_of(const ThreadSet& set);

/// Calls `fn(s, threads)` for every statement of `kernel`'s body in program order, with the
/// number of threads that the lowering partitions a tile operator there over: the block's, or
/// inside branches on the thread index alone whose threads are one range, that range's.
void for_each_stmt_with_threads(const Kernel& kernel,
                                const std::function<void(const Stmt&, int)>& fn);

}  // namespace tessel
