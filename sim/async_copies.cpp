// cp.async groups per thread.
#include "sim/async_copies.h"

namespace tessel::sim {

void AsyncCopyEngine::issue(AsyncCopy copy) {
  int t = copy.thread;
  open_[t].push_back(std::move(copy));
}

void AsyncCopyEngine::commit(int thread) {
  committed_[thread].push_back(std::move(open_[thread]));
  open_[thread].clear();
}

std::vector<AsyncCopy> AsyncCopyEngine::wait(int thread, int n) {
  std::vector<AsyncCopy> landed;
  auto& groups = committed_[thread];
  while (static_cast<int>(groups.size()) > n) {
    for (AsyncCopy& c : groups.front()) landed.push_back(std::move(c));
    groups.pop_front();
  }
  return landed;
}

std::vector<AsyncCopy> AsyncCopyEngine::drain() {
  std::vector<AsyncCopy> landed;
  for (size_t t = 0; t < open_.size(); ++t) {
    for (auto& group : committed_[t]) {
      for (AsyncCopy& c : group) landed.push_back(std::move(c));
    }
    committed_[t].clear();
    for (AsyncCopy& c : open_[t]) landed.push_back(std::move(c));
    open_[t].clear();
  }
  return landed;
}

int64_t AsyncCopyEngine::pending() const {
  int64_t n = 0;
  for (size_t t = 0; t < open_.size(); ++t) {
    n += static_cast<int64_t>(open_[t].size());
    for (const auto& group : committed_[t]) n += static_cast<int64_t>(group.size());
  }
  return n;
}

}  // namespace tessel::sim
