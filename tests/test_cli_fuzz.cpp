// Random command lines through the in-process CLI: whatever the arguments, `tessel` ends with
// exit 0, 1 or 2 (never 3, an internal error, and no exception escapes run_cli). A seeded
// generator mixes real commands, options and kernels with hostile values; the loop stops at a
// count or a time budget, so the test stays within a few seconds. Options that write files (-o,
// --save, --svg) are left out (they would write into the working folder) and so is `verify`
// (a Z3 proof per kernel would spend the budget); hostile_cli tests those one by one.
#include <doctest/doctest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "tests/cli_runner.h"

namespace {

const std::vector<std::string> kCommands = {"list",  "print", "run", "layout", "banks",
                                            "lower", "emit",  "",    "--json"};
const std::vector<std::string> kKernels = {
    "softmax", "elementwise", "transpose_shared", "nosuch", "/dev/null", "/", "x.py", ""};
const std::vector<std::string> kOptions = {
    "--json",           "-D",         "--seed",    "--workers",   "--level",
    "--target",         "--schedule", "--repeats", "--max-steps", "--timeout",
    "--kernel",         "--width",    "--lanes",   "--range",     "--access",
    "--layout",         "--dtype",    "--at",      "--check",     "--prove",
    "--input",          "--expect",   "--atol",    "--device",    "--help",
    "--print-after-all"};
const std::vector<std::string> kValues = {"0",
                                          "-1",
                                          "1",
                                          "4",
                                          "99999999999999999999",
                                          "-4",
                                          "M=16",
                                          "M=-1",
                                          "N=0",
                                          "M=big",
                                          "=",
                                          "M",
                                          "M=16=3",
                                          "thread",
                                          "tile",
                                          "sm80",
                                          "gfx942",
                                          "random:3",
                                          "random:",
                                          "f16",
                                          "f99",
                                          "nan",
                                          "inf",
                                          "1e300",
                                          "0.0001",
                                          "/dev/full",
                                          "/nonexistent/x",
                                          "row_major(4, 4)",
                                          "lambda lane: (lane, 0)",
                                          "lambda lane: (lane % 4, 0)",
                                          "k=0:3",
                                          "swizzle_128b(64, 64, f16)",
                                          "(",
                                          ")",
                                          "",
                                          "-",
                                          "--",
                                          "\xff\xfe",
                                          "0,0",
                                          "1,2,3"};

}  // namespace

TEST_SUITE("cli fuzz") {
  TEST_CASE("random argument vectors end in exit 0, 1 or 2") {
    std::mt19937_64 rng(20261126);
    auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
    auto start = std::chrono::steady_clock::now();
    int runs = 0;
    for (; runs < 3000; ++runs) {
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(4)) break;
      std::vector<std::string> args;
      std::string command = pick(kCommands);
      if (!command.empty()) args.push_back(command);
      // A kernel for the commands that take one; layout takes a SPEC.
      if (command == "layout")
        args.push_back(pick(kValues));
      else if (rng() % 4 != 0)
        args.push_back(pick(kKernels));
      int extra = static_cast<int>(rng() % 5);
      for (int i = 0; i < extra; ++i) {
        args.push_back(pick(kOptions));
        if (rng() % 3 != 0) args.push_back(pick(kValues));
      }
      // Keep every run short: small sizes, one worker, a step limit where it applies.
      if (command == "run") {
        for (const char* a : {"-D", "M=16"}) args.push_back(a);
      }
      std::string line;
      for (const std::string& a : args) line += "'" + a + "' ";
      CliResult r{-1, "", ""};
      try {
        r = run_tessel(args);
      } catch (const std::exception& e) {
        FAIL("an exception escaped run_cli for tessel " << line << ": " << e.what());
      }
      INFO("tessel " << line << "\nstatus " << r.status << "\nstderr: " << r.err);
      REQUIRE(r.status >= 0);
      REQUIRE(r.status <= 2);
    }
    MESSAGE("random command lines run: " << runs);
    CHECK(runs >= 100);
  }
}
