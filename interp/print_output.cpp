// T.print's output of the interpreters.
#include "interp/print_output.h"

#include <iostream>
#include <mutex>
#include <sstream>

namespace tessel {

namespace {

std::mutex& print_mutex() {
  static std::mutex m;
  return m;
}

std::ostream*& print_stream() {
  static std::ostream* out = nullptr;
  return out;
}

}  // namespace

void set_print_output(std::ostream* out) {
  std::lock_guard<std::mutex> lock(print_mutex());
  print_stream() = out;
}

void write_print(const SourceLoc& loc, const std::string& msg, const std::vector<int64_t>& block,
                 std::optional<int> thread, DataType dtype, double value, int64_t int_value) {
  std::ostringstream line;
  line << "T.print" << (loc.known() ? " at " + loc.str() : "") << ": block (";
  for (size_t d = 0; d < block.size(); ++d) line << (d ? ", " : "") << block[d];
  line << ")";
  if (thread) line << ", thread " << *thread;
  line << ": " << (msg.empty() ? "" : msg + " = ");
  if (dtype.is_bool()) {
    line << (int_value ? "True" : "False");
  } else if (dtype.is_integral()) {
    line << int_value;
  } else {
    line.precision(9);
    line << value;
  }
  line << "\n";
  std::lock_guard<std::mutex> lock(print_mutex());
  std::ostream& out = print_stream() ? *print_stream() : std::cerr;
  out << line.str() << std::flush;
}

}  // namespace tessel
