// A loop whose iterations run on the machine's cores: the one helper the host tensors' fill and
// comparison, the examples' references and the tensor fingerprints share.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tessel {

/// Runs body(i) for every i in [0, count) on min(workers, count) threads (workers <= 0: one per
/// core), each taking the next i in turn. Requires: the iterations write disjoint elements of
/// tensors of whole-byte dtypes (no two share a byte) and read nothing another one writes. When
/// body throws, no further i starts, and the exception of the smallest i that threw is rethrown
/// once every thread has stopped.
template <typename Body>
void parallel_for(int64_t count, Body&& body, int workers = 0) {
  // hardware_concurrency() reads sysfs: not asked for a single iteration (a block's small
  // buffers allocate through here).
  if (workers <= 0 && count > 1)
    workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t threads = std::min<int64_t>(workers, count);
  if (threads <= 1) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::mutex lock;
  std::exception_ptr error;
  int64_t error_at = count;
  auto worker = [&] {
    for (int64_t i = next++; i < count; i = next++) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> hold(lock);
        if (i < error_at) {
          error_at = i;
          error = std::current_exception();
        }
        next = count;  // no further i starts
      }
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace tessel
