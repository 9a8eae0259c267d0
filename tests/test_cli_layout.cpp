// `tessel layout` and `tessel banks`: JSON keys of DESIGN.md, exit statuses, usage errors.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "tests/cli_runner.h"

namespace {

nlohmann::json json_of(const CliResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_SUITE("cli layout") {
  TEST_CASE("layout: a named swizzle is a bijection, with the JSON keys of DESIGN.md") {
    CliResult r = run_tessel({"layout", "swizzle_128b(64, 64, f16)", "--check", "--json"});
    REQUIRE(r.status == 0);
    auto j = json_of(r);
    CHECK(j["input_shape"] == nlohmann::json({64, 64}));
    CHECK(j.contains("output_shape"));
    CHECK(j["injective"] == true);
    CHECK(j["surjective"] == true);
    CHECK(j["bijective"] == true);
    CHECK(j["counterexample"].is_null());
  }

  TEST_CASE("layout --check: a colliding layout exits 1 with the two colliding indices") {
    CliResult r =
        run_tessel({"layout", "Layout([2, 65], lambda i, j: i * 64 + j)", "--check", "--json"});
    CHECK(r.status == 1);
    auto j = json_of(r);
    CHECK(j["injective"] == false);
    CHECK(j["bijective"] == false);
    CHECK(j["counterexample"] == nlohmann::json({{0, 64}, {1, 0}}));
  }

  TEST_CASE("layout without --check reports but exits 0; text names the collision") {
    CliResult r =
        run_tessel({"layout", "Layout([2, 65], lambda i, j: i * 64 + j)", "--name", "A_shared"});
    CHECK(r.status == 0);
    CHECK(r.out.find("A_shared[0, 64] and A_shared[1, 0] both map to offset 64") !=
          std::string::npos);
  }

  TEST_CASE("layout --at evaluates a layout and a fragment") {
    // padded(4, 4, 1): (2, 3) -> 2 * 5 + 3 = 13.
    auto j = json_of(run_tessel({"layout", "padded(4, 4, 1)", "--at", "2,3", "--json"}));
    CHECK(j["at"]["output"] == nlohmann::json({13}));
    CHECK(j["surjective"] == false);
    // mma C (f32), element (9, 2): lane g * 4 + t with g = 1, t = 1 -> thread 5, register 2.
    auto f = json_of(run_tessel({"layout", "mma_m16n8k16_c(f32)", "--at", "9,2", "--json"}));
    CHECK(f["at"]["thread"] == 5);
    CHECK(f["at"]["local"] == 2);
    CHECK(f["threads"] == 32);
    CHECK(f["replicate"] == 1);
    CHECK(f["replication_ok"] == true);
  }

  TEST_CASE("layout: a fragment whose registers collide fails --check") {
    CliResult r = run_tessel(
        {"layout", "Fragment([16, 8], lambda i, j: (i % 8 * 4 + j // 2, j % 2), replicate=1)",
         "--check", "--json"});
    CHECK(r.status == 1);
    CHECK(json_of(r)["replication_ok"] == false);
  }

  TEST_CASE(
      "layout: malformed specs and bad --at are usage errors (exit 2) pointing at the column") {
    CliResult r = run_tessel({"layout", "Layout([64, 64], lambda i, j: i * 64 +)"});
    CHECK(r.status == 2);
    CHECK(r.err.find("^") != std::string::npos);
    CHECK(run_tessel({"layout", "swizzle_129b(64, 64, f16)"}).status == 2);
    CHECK(run_tessel({"layout", "padded(4, 4, 1)", "--at", "1"}).status == 2);
    CHECK(run_tessel({"layout", "padded(4, 4, 1)", "--at", "9,0"}).status == 2);
    CHECK(run_tessel({"layout"}).status == 2);
  }

  TEST_CASE("layout --list prints the named layouts") {
    CliResult r = run_tessel({"layout", "--list"});
    CHECK(r.status == 0);
    CHECK(r.out.find("swizzle_128b") != std::string::npos);
    auto j = json_of(run_tessel({"layout", "--list", "--json"}));
    CHECK(j["layouts"].size() >= 10);
  }

  TEST_CASE("layout --svg writes a picture") {
    std::string path = (std::filesystem::temp_directory_path() / "tessel_test_layout.svg").string();
    std::remove(path.c_str());
    CHECK(run_tessel({"layout", "mma_m16n8k16_c(f32)", "--svg", path.c_str()}).status == 0);
    std::ifstream file(path);
    std::string head;
    std::getline(file, head);
    CHECK(head.find("<svg") != std::string::npos);
  }

  TEST_CASE("banks: a column read counts 32 wavefronts and --prove exits 1 with the lanes") {
    // 32x32 f32 row-major, lane l reads (l, 0): all in bank 0, 32 wavefronts, 31 conflicts.
    CliResult r =
        run_tessel({"banks", "--layout", "Layout([32, 32], lambda i, j: i * 32 + j)", "--dtype",
                    "f32", "--access", "lambda lane: (lane, 0)", "--prove", "--json"});
    CHECK(r.status == 1);
    auto j = json_of(r);
    CHECK(j["wavefronts"] == 32);
    CHECK(j["ideal_wavefronts"] == 1);
    CHECK(j["bank_conflicts"] == 31);
    CHECK(j["conflict_free"] == false);
    CHECK(j["counterexample"]["lanes"].size() == 32);
  }

  TEST_CASE("banks: a swizzled ldmatrix access is proved conflict-free for every k") {
    CliResult r = run_tessel({"banks", "--layout", "swizzle_64b(128, 32, f16)", "--dtype", "f16",
                              "--access", "lambda lane, k: (lane % 16, k * 16 + lane // 16 * 8)",
                              "--ldmatrix", "--range", "k=0:1", "--prove", "--json"});
    CHECK(r.status == 0);
    auto j = json_of(r);
    CHECK(j["wavefronts"] == 4);  // four 8-row phases, one wavefront each
    CHECK(j["bank_conflicts"] == 0);
    CHECK(j["conflict_free"] == true);
    CHECK(j["counterexample"].is_null());
  }

  TEST_CASE("banks: --width defaults to the dtype; 16-byte rows take four phases") {
    // f16 row read: 32 lanes x 2 bytes = 64 bytes, one phase, one wavefront.
    auto a = json_of(run_tessel({"banks", "--layout", "Layout([64], lambda i: i)", "--dtype", "f16",
                                 "--access", "lambda l: l", "--json"}));
    CHECK(a["wavefronts"] == 1);
    CHECK(a["access_bytes"] == 2);
    auto b = json_of(run_tessel({"banks", "--layout", "Layout([256], lambda i: i)", "--dtype",
                                 "f16", "--access", "lambda l: l * 8", "--width", "16", "--json"}));
    CHECK(b["wavefronts"] == 4);
    CHECK(b["bank_conflicts"] == 0);
  }

  TEST_CASE("banks: text output, -D fixes a symbol, AMD target") {
    CliResult r = run_tessel({"banks", "--layout", "Layout([64, 64], lambda i, j: i * 64 + j)",
                              "--dtype", "f32", "--access", "lambda lane, c: (lane, c)", "-D",
                              "c=3", "--target", "gfx942"});
    CHECK(r.status == 0);
    // 64 lanes, stride 64 words: bank 3 in both half-wave phases, 32 words each.
    CHECK(r.out.find("wavefronts  64 (ideal 2, 62 bank conflicts") != std::string::npos);
  }

  TEST_CASE("banks: malformed input is a usage error") {
    const char* layout = "Layout([32, 32], lambda i, j: i * 32 + j)";
    CHECK(run_tessel({"banks", "--layout", layout, "--dtype", "f32", "--access", "lane: lane"})
              .status == 2);
    CHECK(run_tessel(
              {"banks", "--layout", layout, "--dtype", "f32", "--access", "lambda lane: (lane,"})
              .status == 2);
    CHECK(
        run_tessel({"banks", "--layout", layout, "--dtype", "f32", "--access", "lambda lane: lane"})
            .status == 2);
    CHECK(
        run_tessel({"banks", "--layout", layout, "--dtype", "f99", "--access", "lambda l: (l, 0)"})
            .status == 2);
    CHECK(run_tessel({"banks", "--layout", layout, "--dtype", "f32", "--access", "lambda l: (l, 0)",
                      "--target", "sm7"})
              .status == 2);
    CHECK(run_tessel({"banks", "--layout", layout, "--dtype", "f32", "--access", "lambda l: (l, 0)",
                      "--width", "3"})
              .status == 2);
    CHECK(run_tessel(
              {"banks", "--layout", layout, "--dtype", "f32", "--access", "lambda l, k: (l, k)"})
              .status == 2);
  }

}  // TEST_SUITE
