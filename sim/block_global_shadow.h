// Races between threads of one block on global memory. Per global element the block touched
// since its last barrier, the shadow keeps the last writing thread and the first two distinct
// reading threads; only global loads and plain stores touch it. Within one barrier interval, as
// in shared memory:
//   read  by t after a write by w != t   -> race (read-after-write)
//   write by t after a write by w != t   -> write_conflict, or a benign race (the same value)
//   write by t after a read by r != t    -> race (write-after-read)
// Atomics never reach it. Races between different blocks are GlobalShadow's.
//
// The elements live in an open-addressing hash table (linear probing) keyed by (buffer,
// element). Each slot carries the barrier interval it was filled in, and a slot of an older
// interval counts as empty, so a barrier clears the table in O(1) by starting a new interval;
// std::unordered_map, with a node per element and a clear() per barrier, made the simulated
// 256^3 tensor-core GEMM 25% slower, this table about 8%.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/sim_types.h"

namespace tessel::sim {

/// What an access collided with inside the block.
struct BlockConflict {
  FindingKind kind = FindingKind::kRace;
  bool benign = false;
  bool with_write = true;  ///< the earlier access was a store (else a read)
  int thread = -1;         ///< the other thread (in the block)
  int site = -1;           ///< its site
};

class BlockGlobalShadow {
 public:
  /// Records a read of element `flat` of global buffer `buffer`; returns the conflict with a
  /// store by another thread of the block since the last barrier.
  std::optional<BlockConflict> read(int buffer, int64_t flat, int thread, int site);
  /// Records a plain store; returns the conflict with another thread's store since the last
  /// barrier (write_conflict, or a benign race when `same_value`) or, failing that, with
  /// another thread's read (race).
  std::optional<BlockConflict> write(int buffer, int64_t flat, int thread, int site,
                                     bool same_value);
  /// A barrier: forgets every access before it.
  void barrier();
  /// Elements touched since the last barrier.
  size_t size() const { return used_; }

 private:
  static constexpr uint16_t kNone = 0xFFFF;
  /// 24 bytes: threads and sites in 16 bits (past 65534 they read as 65534), kNone for none.
  struct Slot {
    uint64_t key = 0;       ///< buffer << 48 | element
    uint32_t interval = 0;  ///< the barrier interval the slot was filled in (0: never)
    uint16_t writer = kNone, w_site = kNone;
    uint16_t reader = kNone, r_site = kNone, reader2 = kNone, r_site2 = kNone;
  };
  /// The slot of the element in the current interval, a fresh one if it has none.
  Slot& slot(int buffer, int64_t flat);
  /// Doubles the table, keeping the slots of the current interval.
  void grow();

  std::vector<Slot> slots_;  ///< a power of two in size (or empty), at most 3/4 full
  uint32_t interval_ = 1;    ///< the current barrier interval
  size_t used_ = 0;          ///< slots of the current interval
};

}  // namespace tessel::sim
