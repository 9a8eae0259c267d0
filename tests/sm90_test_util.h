// Helpers shared by the sm90 warp-specialisation tests: examples by name, kernel files, and
// `tessel run --level thread --target sm90` held to no finding and no bank conflict.
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "examples/registry.h"
#include "examples/run_example.h"
#include "tests/cli_runner.h"

namespace tessel::testing {

inline bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

/// The built-in example `name` built with `defines` (as `-D name=value`).
inline Kernel example(const char* name, const std::map<std::string, std::string>& defines = {}) {
  const Example* e = find_example(name);
  REQUIRE(e != nullptr);
  return e->build(make_params(*e, defines));
}

/// The path of `examples/kernels/<name>` in the source tree.
inline std::string kernel_file(const char* name) {
  return std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/" + name;
}

/// `tessel <args> --json`, required to exit 0, parsed.
inline nlohmann::json run_json(std::vector<std::string> args) {
  args.push_back("--json");
  CliResult r = run_tessel(args);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

/// The thread-level sm90 run of `args` passed with no finding and no bank conflict.
inline void check_clean_sm90_run(std::vector<std::string> args) {
  args.insert(args.begin(), "run");
  for (const char* a : {"--level", "thread", "--target", "sm90"}) args.push_back(a);
  nlohmann::json j = run_json(args);
  INFO(j.dump(1));
  CHECK(j["passed"] == true);
  CHECK(j["sim"]["findings"].empty());
  CHECK(j["sim"]["shared"]["bank_conflicts"] == 0);
}

}  // namespace tessel::testing
