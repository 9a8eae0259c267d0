// Where T.print writes while a kernel runs on the CPU: one line per printing thread, naming the
// statement, the block and the thread, written whole under a lock (blocks run concurrently).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace tessel {

/// Writes `T.print at LOC: block (b0, b1), thread T: MSG = VALUE` (`thread T` left out when
/// `thread` is empty, `MSG = ` when msg is). `value` is the value as a double, or `int_value`
/// for integral dtypes.
void write_print(const SourceLoc& loc, const std::string& msg, const std::vector<int64_t>& block,
                 std::optional<int> thread, DataType dtype, double value, int64_t int_value);

/// Sends the lines to `out` (std::cerr when null) until the next call; for tests.
void set_print_output(std::ostream* out);

}  // namespace tessel
