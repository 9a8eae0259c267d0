// Stops and watches a long run: a limit on the steps executed and on the wall time, checked by
// both interpreters as they go, and counters a progress display reads from another thread.
// A step is one statement executed by one block (tile level) or by one warp (thread level), so
// `T.serial(10**9)` is 10**9 steps of its body and a limit stops it within a few microseconds.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "core/error.h"

namespace tessel {

/// The run went past --max-steps or --timeout; the message says which, where it was and how far
/// it got. A user error (exit 1): the kernel did not finish.
class RunStopped : public UserError {
 public:
  explicit RunStopped(const std::string& message) : UserError(message) {}
};

/// Shared by the workers of one run (and by the two levels of a thread-level run).
class RunControl {
 public:
  /// `max_steps` 0 and `timeout_seconds` 0 mean no limit.
  RunControl(int64_t max_steps = 0, double timeout_seconds = 0);

  int64_t max_steps() const { return max_steps_; }
  double timeout_seconds() const { return timeout_; }
  bool limited() const { return max_steps_ > 0 || timeout_ > 0; }

  /// A level starts running `blocks` blocks ("tile level", "thread level").
  void begin(const char* level, int64_t blocks);
  void block_done() { blocks_done_.fetch_add(1, std::memory_order_relaxed); }

  /// Adds `steps` steps; the reason to stop ("" to go on). Called every kBatch steps or so.
  std::string add_steps(int64_t steps);
  /// Steps are counted locally and handed over in batches of at most this many.
  static constexpr int64_t kBatch = 4096;
  /// The batch of this run: smaller under a small --max-steps, so the stop comes close to it.
  int64_t batch() const { return batch_; }

  /// The RunStopped error for `reason`, naming the kernel, where it was and the progress.
  [[noreturn]] void stop(const std::string& reason, const std::string& where) const;

  // Read by the progress display.
  const char* level() const { return level_.load(std::memory_order_relaxed); }
  int64_t blocks() const { return blocks_.load(std::memory_order_relaxed); }
  int64_t blocks_done() const { return blocks_done_.load(std::memory_order_relaxed); }
  int64_t steps() const { return steps_.load(std::memory_order_relaxed); }
  double seconds() const;
  /// Seconds since the level now running began (the rate of blocks is measured over these).
  double level_seconds() const;

 private:
  int64_t max_steps_;
  double timeout_;
  int64_t batch_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<const char*> level_{""};
  std::atomic<int64_t> blocks_{0}, blocks_done_{0}, steps_{0};
  std::atomic<double> level_start_{0};  ///< seconds() when the level now running began
};

/// Counts the steps of one block and hands them to the run's control in batches.
class StepCounter {
 public:
  explicit StepCounter(RunControl* control)
      : control_(control),
        batch_(control ? control->batch() : 0),
        limited_(control && control->limited()) {}
  /// One step; `where` (called only when the run must stop) describes what was running.
  template <typename Where>
  void step(Where&& where) {
    if (!control_ || ++pending_ < batch_) return;
    flush(where);
  }
  /// n steps at once, when no stop can fall among them (the run has no limits, or they stay
  /// short of the next hand-over): true. False, counting nothing, when the caller must count
  /// them one by one with step() to stop where a run of single steps stops.
  bool steps_within_batch(int64_t n) {
    if (!control_) return true;
    if (!limited_) {
      pending_ += n;
      if (pending_ >= batch_) {  // the progress display's count; no reason to stop can come back
        control_->add_steps(pending_);
        pending_ = 0;
      }
      return true;
    }
    if (pending_ + n >= batch_) return false;
    pending_ += n;
    return true;
  }
  /// Hands over the steps counted so far (at the end of a block).
  template <typename Where>
  void flush(Where&& where) {
    if (!control_ || pending_ == 0) return;
    std::string reason = control_->add_steps(pending_);
    pending_ = 0;
    if (!reason.empty()) control_->stop(reason, where());
  }

 private:
  RunControl* control_;
  int64_t batch_;
  bool limited_;  ///< the run has a step or time limit (a hand-over may stop it)
  int64_t pending_ = 0;
};

}  // namespace tessel
