// The progress line of a long `tessel run` on stderr: the level running, blocks done of all, the
// rate and the time left, redrawn in place twice a second from a thread of its own, and erased
// when the run ends. Shown when stderr is a terminal (or with --progress); stdout, and so
// --json, is never touched.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "interp/run_control.h"

namespace tessel::cli {

/// "thread level: 12/64 blocks, 3.1 blocks/s, ~10 s left" for `control` (no newline).
std::string progress_text(const RunControl& control);

class ProgressLine {
 public:
  /// Starts drawing on `err` after `delay_s` seconds (quick runs show nothing).
  ProgressLine(std::ostream& err, const RunControl& control, double delay_s = 1.0);
  ~ProgressLine();  ///< stops the thread and erases the line
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

 private:
  void loop(double delay_s);

  std::ostream& err_;
  const RunControl& control_;
  std::mutex lock_;
  std::condition_variable wake_;
  bool done_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

}  // namespace tessel::cli
