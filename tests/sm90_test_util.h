// Helpers shared by the sm90 tests (warp specialisation, mbarriers, TMA): examples by name, kernel
// files, TileLang sources run at thread level for sm90, findings by kind, and
// `tessel run --level thread --target sm90` held to no finding and no bank conflict.
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/target.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
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

/// `source` (a TileLang file's text, "kernel.py" in locations) lowered for sm90 and run at
/// thread level on `t` under `schedule`, one worker.
inline ThreadRunResult run_sm90(const std::string& source, TensorMap& t, const char* schedule) {
  ThreadRunOptions o;
  o.target = "sm90";
  o.schedule = *Schedule::parse(schedule);
  o.workers = 1;
  Kernel k = parse_kernel(source, "kernel.py").kernel;
  return run_thread_level(lower_kernel(k, find_target("sm90")).kernel, t, o);
}

/// The findings of `r` of kind `k`.
inline std::vector<const sim::Finding*> of_kind(const ThreadRunResult& r, sim::FindingKind k) {
  std::vector<const sim::Finding*> out;
  for (const sim::Finding& f : r.report.findings) {
    if (f.kind == k) out.push_back(&f);
  }
  return out;
}

}  // namespace tessel::testing
