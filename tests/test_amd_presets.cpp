// The paper presets on AMD's 64 KiB of LDS: MLA and Mamba-2 chunk_scan at their default tiles are
// refused with the buffers and their sizes, and the configurations README.md documents for
// gfx90a/gfx942 fit and prove every check. Sizes derived by hand (f16, 2 bytes an element).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_runner.h"

namespace {

nlohmann::json verify(std::vector<std::string> args) {
  args.insert(args.begin(), "verify");
  args.insert(args.end(), {"--target", "gfx942", "--json"});
  CliResult r = run_tessel(args);
  INFO(r.err);
  REQUIRE(!r.out.empty());
  return nlohmann::json::parse(r.out);
}

/// The failed checks' counterexamples.
std::vector<std::string> failures(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (const auto& c : j["checks"]) {
    if (c["result"] != "proved") out.push_back(c["counterexample"].dump());
  }
  return out;
}

}  // namespace

TEST_SUITE("AMD presets") {
  TEST_CASE("MLA0 at its default tiles is refused on gfx942, naming the buffers and the fix") {
    // block_H 16, block_N 32, two pipeline stages: KV_shared 2 x 32 x 512 x 2 = 65536 B alone
    // fills the 64 KiB; with Q_shared 16 x 512 x 2 = 16384, K_pe_shared 2 x 32 x 64 x 2 = 8192,
    // Q_pe_shared 2048, S_shared 16 x 32 x 2 = 1024 and two 2048-byte reduction workspaces of the
    // 128 threads: 97280 bytes.
    auto j = verify({"mla_decode", "-D", "preset=MLA0"});
    std::vector<std::string> f = failures(j);
    REQUIRE(f.size() == 1);
    CHECK(f[0].find("shared memory per block is 97280 bytes, over the 65536 bytes") !=
          std::string::npos);
    CHECK(f[0].find("KV_shared 65536 B") != std::string::npos);
    CHECK(f[0].find("Q_shared 16384 B") != std::string::npos);
    CHECK(f[0].find("fix: smaller tiles") != std::string::npos);
  }

  TEST_CASE("MLA0 with block_N 16 and one wave fits gfx942 and proves every check") {
    // KV_shared 2 x 16 x 512 x 2 = 32768, Q_shared 16384, K_pe_shared 2 x 16 x 64 x 2 = 4096,
    // Q_pe_shared 2048, S_shared 16 x 16 x 2 = 512; one wave reduces in registers (no
    // workspace): 55808 bytes. S_shared's 16-column rows are the swizzle_mfma row trade's case.
    auto j = verify({"mla_decode", "-D", "preset=MLA0", "-D", "block_N=16", "-D", "threads=64"});
    CHECK(failures(j).empty());
    bool seen = false;
    for (const auto& c : j["checks"]) {
      std::string what = c["what"].get<std::string>();
      if (what.find("capacity, shared memory per block: 55808 bytes") != std::string::npos)
        seen = true;
    }
    CHECK(seen);
  }

  TEST_CASE("the split-KV MLA0 with the same tiles fits gfx942 and proves every check") {
    auto j =
        verify({"mla_decode_split", "-D", "preset=MLA0", "-D", "block_N=16", "-D", "threads=64"});
    CHECK(failures(j).empty());
  }

  TEST_CASE("CC0 at its default tiles is refused on gfx942; with block_K 32 it fits and proves") {
    // Default: C_shared and state_shared 64 x 128 x 2 = 16384 each, cb_shared and x_shared two
    // stages of 64 x 64 x 2 = 16384 each, x_residual_shared 8192, dA_m 128, dA_k and dt 2 x 64 x
    // 2 = 256 each: 74368 bytes. block_K 32 halves cb_shared, x_shared, dA_k and dt: 57728.
    auto refused = verify({"chunk_scan", "-D", "preset=CC0"});
    std::vector<std::string> f = failures(refused);
    REQUIRE(f.size() == 1);
    CHECK(f[0].find("shared memory per block is 74368 bytes") != std::string::npos);
    auto fits = verify({"chunk_scan", "-D", "preset=CC0", "-D", "block_K=32"});
    CHECK(failures(fits).empty());
    bool seen = false;
    for (const auto& c : fits["checks"]) {
      if (c["what"].get<std::string>().find("shared memory per block: 57728 bytes") !=
          std::string::npos)
        seen = true;
    }
    CHECK(seen);
  }
}  // TEST_SUITE
