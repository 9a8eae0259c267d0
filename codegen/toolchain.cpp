// Finding and running the device compilers.
#include "codegen/toolchain.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace tessel {

namespace {

/// Runs `command` with stdout and stderr captured; returns the exit status.
int run(const std::string& command, std::string& output) {
  std::string full = command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

/// 16 hex digits of a hash of `text`.
std::string hex_hash(const std::string& text) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016zx", std::hash<std::string>{}(text));
  return buf;
}

std::optional<std::string> on_path(const std::string& name) {
  std::string out;
  if (run("command -v " + name, out) == 0 && !out.empty()) {
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> find_nvcc() {
  if (const char* env = std::getenv("TESSEL_NVCC"); env && *env) return std::string(env);
  if (auto p = on_path("nvcc")) return p;
  if (std::filesystem::exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return std::nullopt;
}

std::optional<std::string> find_amd_clang(const std::string& arch) {
  static std::mutex mu;
  static std::map<std::string, std::optional<std::string>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(arch); it != cache.end()) return it->second;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("TESSEL_HIP_CLANG"); env && *env) candidates.push_back(env);
  for (const char* n : {"clang++-20", "clang++-19", "clang++-18", "clang++-17", "clang++"}) {
    if (auto p = on_path(n)) candidates.push_back(*p);
  }
  std::optional<std::string> found;
  for (const std::string& c : candidates) {
    std::string out;
    // A compiler that knows the target accepts it for an empty device-only translation unit.
    if (run(quote(c) + " -x hip --offload-arch=" + arch +
                " -nogpulib -nogpuinc --cuda-device-only -S -o /dev/null /dev/null",
            out) == 0) {
      found = c;
      break;
    }
  }
  cache[arch] = found;
  return found;
}

CompileResult compile_device_code(const EmittedSource& source, const Target& target,
                                  const std::string& dir) {
  CompileResult r;
  std::filesystem::create_directories(dir);
  const bool cuda = source.language == Language::kCuda;
  // Named by the process and the code too: two compilations at once (two lowerings of one
  // kernel, two processes) must never read or load each other's files.
  const std::string stem = dir + "/" + source.entry + "_" + target.name + "_" +
                           std::to_string(getpid()) + "_" + hex_hash(source.code);
  std::string src = stem + (cuda ? ".cu" : ".hip");
  std::ofstream(src) << source.code;
  std::string command;
  if (cuda) {
    auto nvcc = find_nvcc();
    if (!nvcc) {
      r.skipped = "no nvcc (looked at $TESSEL_NVCC, PATH and /usr/local/cuda/bin)";
      return r;
    }
    const std::string& arch = target.arch;
    r.output = stem + ".cubin";
    command =
        quote(*nvcc) + " -arch=" + arch + " -cubin -O3 -o " + quote(r.output) + " " + quote(src);
  } else {
    auto clang = find_amd_clang(target.arch);
    if (!clang) {
      r.skipped =
          "no clang that knows " + target.name + " (install clang-19, or set $TESSEL_HIP_CLANG)";
      return r;
    }
    r.output = stem + ".s";
    command = quote(*clang) + " -x hip --offload-arch=" + target.arch +
              " -nogpulib -nogpuinc --cuda-device-only -O3 -S -o " + quote(r.output) + " " +
              quote(src);
  }
  r.command = command;
  auto start = std::chrono::steady_clock::now();
  r.compiled = run(command, r.log) == 0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace tessel
