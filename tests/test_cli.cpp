// The `tessel` command line: list, print and run, their JSON and their exit statuses.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "tests/cli_runner.h"

namespace {}  // namespace

TEST_SUITE("cli") {
  TEST_CASE("run gemm with ragged edges at tile level passes with JSON keys of DESIGN.md") {
    CliResult r = run_tessel(
        {"run", "gemm", "-D", "M=200", "-D", "N=136", "-D", "K=72", "--level", "tile", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["max_abs_err"].get<double>() < 1e-3);
    CHECK(j.contains("max_rel_err"));
    CHECK(j["blocks"] == 4);
  }

  TEST_CASE("run prints a human report by default") {
    CliResult r = run_tessel({"run", "softmax", "-D", "M=64"});
    CHECK(r.status == 0);
    CHECK(r.out.find("Y: matches the reference") != std::string::npos);
    CHECK(r.out.find("PASSED") != std::string::npos);
  }

  TEST_CASE("an unknown -D name is a usage error listing the parameters") {
    CliResult r = run_tessel({"run", "gemm", "-D", "Q=3"});
    CHECK(r.status == 2);
    CHECK(r.err.find("kernel 'gemm' has no parameter 'Q'; its parameters are M, N, K") !=
          std::string::npos);
  }

  TEST_CASE("a -D without '=' is a usage error") {
    CliResult r = run_tessel({"run", "gemm", "-D", "M"});
    CHECK(r.status == 2);
    CHECK(r.err.find("expected NAME=VALUE") != std::string::npos);
  }

  TEST_CASE("a parameter value that makes the kernel invalid is a kernel error naming it") {
    CliResult r = run_tessel({"run", "gemm", "-D", "threads=2048"});
    CHECK(r.status == 1);
    CHECK(r.err.find("kernel 'gemm': threads=2048 must be between 1 and 1024") !=
          std::string::npos);
  }

  TEST_CASE("a non-numeric parameter value is a usage error naming the parameter") {
    CliResult r = run_tessel({"run", "gemm", "-D", "M=big"});
    CHECK(r.status == 2);
    CHECK(r.err.find("parameter M=big is not an integer") != std::string::npos);
  }

  TEST_CASE("an unknown kernel name is a usage error listing the built-ins") {
    CliResult r = run_tessel({"print", "nosuch"});
    CHECK(r.status == 2);
    CHECK(r.err.find("no built-in kernel named 'nosuch'") != std::string::npos);
  }

  TEST_CASE("an unknown flag is a usage error") {
    CliResult r = run_tessel({"run", "gemm", "--frobnicate"});
    CHECK(r.status == 2);
  }

  TEST_CASE("an unsupported level is a usage error") {
    CliResult r = run_tessel({"run", "gemm", "--level", "warp"});
    CHECK(r.status == 2);
  }

  TEST_CASE("list names every example with its parameters") {
    CliResult r = run_tessel({"list", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    std::vector<std::string> names;
    for (const auto& k : j["kernels"]) names.push_back(k["name"]);
    for (const char* want : {"gemm", "gemm_transpose_b", "gemm_rs", "softmax", "elementwise"}) {
      CHECK(std::find(names.begin(), names.end(), want) != names.end());
    }
  }

  TEST_CASE("print shows the tile-level IR with -D applied") {
    CliResult r = run_tessel({"print", "gemm", "-D", "block_K=64"});
    CHECK(r.status == 0);
    CHECK(r.out.find("A_shared = T.alloc_shared((128, 64), \"float16\")") != std::string::npos);
  }

}  // TEST_SUITE

TEST_SUITE("cli limits") {
  TEST_CASE("sizes too large for host memory are a kernel error naming the tensor") {
    // 2^20 x 2^20 fp16 elements = 2 TiB for A alone, far beyond any test machine.
    CliResult r = run_tessel({"run", "gemm", "-D", "M=1048576", "-D", "K=1048576"});
    CHECK(r.status == 1);
    CHECK(r.err.find("its tensors would need") != std::string::npos);
    CHECK(r.err.find("A (1048576, 1048576) float16 = 2097152 MiB") != std::string::npos);
  }

}  // TEST_SUITE

TEST_CASE("a kernel of hardware instructions at tile level asks for the thread level") {
  CliResult r = run_tessel({"run", "gemm_mma", "--level", "tile"});
  CHECK(r.status == 1);
  CHECK(r.err.find("is warp-level code that the tile level does not model; run this kernel with "
                   "--level thread") != std::string::npos);
}

TEST_CASE("a zero tile size is a usage error naming the parameter") {
  CliResult r = run_tessel({"run", "gemm", "-D", "block_M=0"});
  CHECK(r.status == 2);
  CHECK(r.err.find("kernel 'gemm': parameter block_M=0 must be at least 1") != std::string::npos);
}
