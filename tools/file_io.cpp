// Bounded reads and checked writes of the command line's files (see file_io.h).
#include "tools/file_io.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "tools/cli.h"

namespace tessel::cli {

namespace {

std::string mib(int64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

std::string read_bounded(const std::string& path, int64_t max_bytes, const std::string& origin) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) {
    throw UsageError(origin + ": '" + path + "' is a directory, not a file");
  }
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    throw UsageError(origin + ": cannot read '" + path + "' (" + std::strerror(errno) + ")");
  }
  if (!std::filesystem::is_regular_file(status)) max_bytes = std::min(max_bytes, kMaxStreamBytes);
  std::string data;
  char chunk[1 << 16];
  while (true) {
    size_t n = std::fread(chunk, 1, sizeof chunk, f.get());
    if (static_cast<int64_t>(data.size() + n) > max_bytes) {
      std::string what = std::filesystem::is_regular_file(status) ? "a file" : "a device or pipe";
      throw UsageError(origin + ": '" + path + "' holds more than " + mib(max_bytes) + " (" + what +
                       " read stops there)");
    }
    data.append(chunk, n);
    if (n < sizeof chunk) break;
  }
  if (std::ferror(f.get())) {
    throw UsageError(origin + ": cannot read '" + path + "' (" + std::strerror(errno) + ")");
  }
  return data;
}

std::string read_kernel_text(const std::string& path) {
  const std::string origin = "kernel file '" + path + "'";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UsageError("'" + path + "' is a directory, not a kernel file");
  }
  std::string text;
  {
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
    if (!f) throw UsageError("cannot read the " + origin + " (" + std::strerror(errno) + ")");
  }
  text = read_bounded(path, kMaxKernelFileBytes, "the " + origin);
  if (text.empty()) throw UsageError(origin + " is empty; it should hold a @T.prim_func kernel");
  if (size_t nul = text.find('\0'); nul != std::string::npos) {
    throw UsageError(origin + " is not a text file (a NUL byte at offset " + std::to_string(nul) +
                     "); a kernel file is Python source in TileLang syntax");
  }
  if (text.find('\n') == std::string::npos && text.find('\r') != std::string::npos) {
    throw UsageError(origin +
                     " separates its lines with CR alone (old Mac OS line endings); save it "
                     "with LF (or CRLF) line endings");
  }
  return text;
}

void write_checked(const std::string& path, const std::string& data, const std::string& origin) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UsageError(origin + ": '" + path + "' is a directory; give a file path");
  }
  errno = 0;
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
  if (!f) {
    throw UsageError(origin + ": cannot open '" + path + "' for writing (" + std::strerror(errno) +
                     ")");
  }
  size_t written = std::fwrite(data.data(), 1, data.size(), f.get());
  int flushed = std::fflush(f.get());
  int error = errno;
  std::FILE* raw = f.release();
  int closed = std::fclose(raw);
  if (closed != 0 && error == 0) error = errno;
  if (written != data.size() || flushed != 0 || closed != 0) {
    throw UsageError(origin + ": writing " + std::to_string(data.size()) + " bytes to '" + path +
                     "' failed (" + std::strerror(error ? error : EIO) + ")");
  }
}

}  // namespace tessel::cli
