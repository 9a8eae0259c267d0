// Step and time limits of a run, and its progress counters (see run_control.h).
#include "interp/run_control.h"

#include <algorithm>
#include <cstdio>

namespace tessel {

RunControl::RunControl(int64_t max_steps, double timeout_seconds)
    : max_steps_(max_steps),
      timeout_(timeout_seconds),
      batch_(max_steps > 0 ? std::clamp<int64_t>(max_steps / 64, 1, kBatch) : kBatch),
      start_(std::chrono::steady_clock::now()) {}

void RunControl::begin(const char* level, int64_t blocks) {
  blocks_done_.store(0, std::memory_order_relaxed);
  blocks_.store(blocks, std::memory_order_relaxed);
  level_.store(level, std::memory_order_relaxed);
  level_start_.store(seconds(), std::memory_order_relaxed);
}

double RunControl::level_seconds() const {
  return seconds() - level_start_.load(std::memory_order_relaxed);
}

double RunControl::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string RunControl::add_steps(int64_t steps) {
  int64_t total = steps_.fetch_add(steps, std::memory_order_relaxed) + steps;
  if (max_steps_ > 0 && total >= max_steps_) {
    return "it reached the limit of " + std::to_string(max_steps_) + " steps (--max-steps)";
  }
  if (timeout_ > 0 && seconds() >= timeout_) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", timeout_);
    return std::string("it ran for longer than ") + text + " s (--timeout)";
  }
  return "";
}

void RunControl::stop(const std::string& reason, const std::string& where) const {
  throw RunStopped("stopped: " + where + ": " + reason + ", with " + std::to_string(blocks_done()) +
                   " of " + std::to_string(blocks()) + " blocks done at " + level() + " (" +
                   std::to_string(steps()) +
                   " steps); the kernel may loop for too long — check its loop bounds, or raise "
                   "the limit");
}

}  // namespace tessel
