// The files the command line reads and writes, with every failure a usage error naming the option
// and the path: bounded reads (a device such as /dev/zero, a fifo or a huge file never fills
// memory), and checked writes (a full disk, /dev/full or an unwritable path is an error, never a
// silent exit 0).
#pragma once

#include <cstdint>
#include <string>

namespace tessel::cli {

/// The largest kernel file read: kernel sources are a few KB; 4 MiB leaves room for generated ones.
constexpr int64_t kMaxKernelFileBytes = int64_t{4} << 20;

/// The most bytes read from a device or a pipe, whose size is not known before reading.
constexpr int64_t kMaxStreamBytes = int64_t{256} << 20;

/// The bytes of the file at `path`, at most `max_bytes` (kMaxStreamBytes for a device or pipe).
/// UsageError starting with `origin` when it does not exist, is a directory, cannot be read, or
/// holds more than `max_bytes` (read no further).
std::string read_bounded(const std::string& path, int64_t max_bytes, const std::string& origin);

/// The text of a kernel file: read_bounded with kMaxKernelFileBytes, and UsageError when it is
/// empty, binary (a NUL byte) or separates its lines with CR alone (old Mac line endings).
std::string read_kernel_text(const std::string& path);

/// Writes `data` to `path` (replacing it) and checks that every byte reached the file, closing
/// included. UsageError starting with `origin` (e.g. "-o out.cu") naming the reason otherwise.
void write_checked(const std::string& path, const std::string& data, const std::string& origin);

}  // namespace tessel::cli
