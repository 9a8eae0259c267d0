// Cross-block race detection on global memory. Blocks of one launch are unordered, so a plain
// store by one block to an element another block reads or writes is a race whatever order the
// blocks happen to run in. For every element the shadow keeps the first block that stored to it
// and who read it; blocks run concurrently on CPU threads, so every cell is a lock-free atomic.
// The cells (24 bytes an element) live in pages of kPageElements elements, allocated when a block
// first touches one: a run that simulates a few blocks of a paper-size grid (--blocks) holds the
// shadow of those blocks' footprint only, not of every tensor.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
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
  static constexpr int64_t kPageElements = 1024;
  /// 24 bytes an element: the writer and reader cells and the first store's value.
  static constexpr int64_t kPageBytes = 24 * kPageElements;

  /// `max_bytes`: the most the pages may take (0: no limit); past it an access is a user error
  /// that names the buffer and says to simulate fewer blocks.
  explicit GlobalShadow(int64_t max_bytes = 0) : max_bytes_(max_bytes) {}
  GlobalShadow(const GlobalShadow&) = delete;
  GlobalShadow& operator=(const GlobalShadow&) = delete;
  ~GlobalShadow();

  /// Makes room for buffer `id` (ids are dense from 0) of `size` elements named `name`.
  void add_buffer(int id, int64_t size, std::string name = "");
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
  /// Bytes of the pages allocated so far.
  int64_t bytes() const { return pages_ * kPageBytes; }

 private:
  /// The cells of kPageElements consecutive elements; value-initialised cells are 0 ("nobody").
  struct Page {
    std::atomic<uint64_t> writer[kPageElements], reader[kPageElements];
    uint64_t value[kPageElements];  ///< the first store's value (write_in_turn)
  };
  struct Buffer {
    std::string name;
    std::unique_ptr<std::atomic<Page*>[]> pages;  ///< null until first touched
    int64_t count = 0;
  };
  /// The page holding element `flat` of buffer `id`, allocated on first use (by whichever
  /// thread wins the race to install it).
  Page& page(int id, int64_t flat) {
    std::atomic<Page*>& slot = buffers_[id].pages[flat / kPageElements];
    Page* p = slot.load(std::memory_order_acquire);
    return p ? *p : allocate(id, slot);
  }
  Page& allocate(int id, std::atomic<Page*>& slot);

  int64_t max_bytes_ = 0;
  std::atomic<int64_t> pages_{0};
  std::vector<Buffer> buffers_;
};

}  // namespace tessel::sim
