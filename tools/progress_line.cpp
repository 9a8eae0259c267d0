// The progress line of `tessel run` (see progress_line.h).
#include "tools/progress_line.h"

#include <chrono>
#include <cstdio>

namespace tessel::cli {

namespace {

std::string duration_text(double s) {
  char text[32];
  if (s < 120)
    std::snprintf(text, sizeof text, "%.0f s", s);
  else if (s < 7200)
    std::snprintf(text, sizeof text, "%.0f min", s / 60);
  else
    std::snprintf(text, sizeof text, "%.1f h", s / 3600);
  return text;
}

}  // namespace

std::string progress_text(const RunControl& control) {
  const int64_t done = control.blocks_done(), all = control.blocks();
  const double s = control.seconds();
  std::string text = std::string(control.level()) + ": " + std::to_string(done) + "/" +
                     std::to_string(all) + " blocks";
  char buf[64];
  std::snprintf(buf, sizeof buf, ", %.3g M steps", static_cast<double>(control.steps()) / 1e6);
  text += buf;
  const double level_s = control.level_seconds();
  if (done > 0 && level_s > 0) {
    double rate = static_cast<double>(done) / level_s;
    std::snprintf(buf, sizeof buf, ", %.3g blocks/s", rate);
    text += buf;
    text += ", ~" + duration_text(static_cast<double>(all - done) / rate) + " left";
  }
  return text + " (" + duration_text(s) + ")";
}

ProgressLine::ProgressLine(std::ostream& err, const RunControl& control, double delay_s)
    : err_(err), control_(control), thread_([this, delay_s] { loop(delay_s); }) {}

ProgressLine::~ProgressLine() {
  {
    std::lock_guard<std::mutex> guard(lock_);
    done_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (drawn_) err_ << "\r\033[K" << std::flush;
}

void ProgressLine::loop(double delay_s) {
  std::unique_lock<std::mutex> guard(lock_);
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(delay_s);
  if (wake_.wait_until(guard, until, [this] { return done_; })) return;
  while (!done_) {
    err_ << "\r\033[K" << progress_text(control_) << std::flush;
    drawn_ = true;
    wake_.wait_for(guard, std::chrono::milliseconds(500), [this] { return done_; });
  }
}

}  // namespace tessel::cli
