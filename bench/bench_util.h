// Shared helpers of the benchmark programs: medians, the date and the machine for CSV rows.
#pragma once

#include <sys/utsname.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

namespace tessel::bench {

/// The median (upper median for an even count). Requires: !v.empty().
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Today's date in UTC, YYYY-MM-DD.
inline std::string today() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

/// The CPU's model name from /proc/cpuinfo (the architecture where that is unavailable).
inline std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  utsname u{};
  uname(&u);
  return u.machine;
}

}  // namespace tessel::bench
