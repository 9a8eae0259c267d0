// The two error channels of Tessel: UserError for bad kernels and bad input, InternalError for bugs.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

namespace tessel {

/// Where in the user's kernel something was written: a C++ builder call or a line of a kernel file.
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;

  /// The location of the C++ caller (builder functions default their last argument to this).
  static SourceLoc here(std::source_location loc = std::source_location::current());
  bool known() const { return line > 0; }
  /// "file:line:column", or "" when unknown.
  std::string str() const;
};

/// A problem in the kernel or the input that the user can fix. The message names the kernel, the
/// operator, the buffers and indices involved, and the fix.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

/// A bug in Tessel itself; never caused by user input.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

[[noreturn]] void user_error(const std::string& message);
[[noreturn]] void internal_error(const std::string& message,
                                 std::source_location loc = std::source_location::current());

/// Throws InternalError when `condition` is false. For Tessel's own invariants, never user input.
inline void internal_check(bool condition, const char* what,
                           std::source_location loc = std::source_location::current()) {
  if (!condition) internal_error(what, loc);
}

}  // namespace tessel
