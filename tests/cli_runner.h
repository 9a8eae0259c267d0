// Runs the `tessel` command line in-process for tests: its exit status, stdout and stderr.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "tools/cli.h"

struct CliResult {
  int status;
  std::string out;
  std::string err;
};

/// `tessel args...` (the program name is added).
inline CliResult run_tessel(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"tessel"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int status = tessel::cli::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {status, out.str(), err.str()};
}
