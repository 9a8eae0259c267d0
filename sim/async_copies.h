// The asynchronous-copy engine of cp.async (PTX ISA): each thread's copies join its open group,
// cp.async.commit_group closes the group, and cp.async.wait_group N lands every committed group
// but the newest N. Copies land only then; until they do, their data sits here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace tessel::sim {

/// One thread's copy into a shared buffer: `cells` (raw 8-byte element values, as the
/// interpreter stores them) go to elements [flat, flat + cells.size()) of `buffer`.
struct AsyncCopy {
  int buffer = -1;
  int64_t flat = 0;
  std::vector<uint64_t> cells;
  int site = -1;
  int thread = 0;
};

/// A TMA store in flight (cp.async.bulk.tensor shared -> global): the shared elements its async
/// proxy reads, and what it writes to global memory when it completes.
struct BulkStore {
  int shared_buffer = -1;
  std::vector<int64_t> flats;  ///< shared elements read
  int global_buffer = -1;
  std::vector<int64_t> gflats;  ///< per element its global element (-1: past the edges)
  std::vector<uint64_t> cells;  ///< the values, read at issue
  int site = -1;                ///< the site of its shared reads
  int global_site = -1;         ///< the site of its global writes
  int thread = 0;
};

class AsyncCopyEngine {
 public:
  explicit AsyncCopyEngine(int threads = 0) : open_(threads), committed_(threads) {}
  /// Queues a copy in its thread's open group.
  void issue(AsyncCopy copy);
  /// cp.async.commit_group for `thread` (an empty group when nothing is open, as in PTX).
  void commit(int thread);
  /// cp.async.wait_group n for `thread`: removes and returns the copies of every committed group
  /// except the newest `n`, oldest first. Copies not yet committed stay pending.
  std::vector<AsyncCopy> wait(int thread, int n);
  /// Every copy still pending, of every thread (the end of the block).
  std::vector<AsyncCopy> drain();
  /// Copies in flight, committed or not.
  int64_t pending() const;

 private:
  std::vector<std::vector<AsyncCopy>> open_;
  std::vector<std::deque<std::vector<AsyncCopy>>> committed_;
};

}  // namespace tessel::sim
