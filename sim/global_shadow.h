// Cross-block race detection on global memory. Blocks of one launch are unordered, so a plain
// store by one block to an element another block reads or writes is a race whatever order the
// blocks happen to run in. For every element the shadow keeps the first block that stored to it
// and who read it; blocks run concurrently on CPU threads, so every cell is a lock-free atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "sim/sim_types.h"

namespace tessel::sim {

/// Who touched an element: a block (by linear id), a thread in it, and the site.
struct Toucher {
  uint32_t block = 0;
  int thread = 0;
  int site = -1;
  bool several = false;  ///< reads by several blocks (block/thread/site are not known)
};

/// What an access collided with.
struct GlobalConflict {
  FindingKind kind = FindingKind::kRace;
  bool benign = false;
  bool with_write = true;  ///< the earlier access was a store (else a read)
  Toucher other;
};

class GlobalShadow {
 public:
  /// Makes room for buffer `id` (ids are dense from 0) of `size` elements.
  void add_buffer(int id, int64_t size);
  /// Records a read of element `flat`; returns the conflict with a store by another block.
  std::optional<GlobalConflict> read(int id, int64_t flat, uint32_t block, int thread, int site);
  /// Records a plain store; returns the conflict with another block's store (write_conflict, or
  /// a benign race when `same_value`) or, failing that, with another block's read (race).
  std::optional<GlobalConflict> write(int id, int64_t flat, uint32_t block, int thread, int site,
                                      bool same_value);
  /// As write(), for accesses checked one block after another (SimRun::wait_turn, no other
  /// thread touches the shadow meanwhile): the first store keeps `value`, and a later store of
  /// another block is a benign race when it stores that same value, a write conflict otherwise.
  std::optional<GlobalConflict> write_in_turn(int id, int64_t flat, uint32_t block, int thread,
                                              int site, uint64_t value);

 private:
  struct Cells {
    std::unique_ptr<std::atomic<uint64_t>[]> writer, reader;
    std::unique_ptr<uint64_t[]> value;  ///< the first store's value (write_in_turn)
  };
  std::vector<Cells> buffers_;
};

}  // namespace tessel::sim
