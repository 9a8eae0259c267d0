// Sampled thread-level runs (`tessel run --level thread --blocks SPEC`): which blocks a spec
// selects, that a bug in an edge block is found only when that block is simulated, that the
// output stays complete and equal to the reference, that counters are scaled to the grid, and
// that malformed specs are usage errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "interp/block_selection.h"
#include "tests/cli_runner.h"

using namespace tessel;
using Ids = std::vector<int64_t>;

namespace {

std::string race_kernel() {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/edge_block_race.py";
}

Ids select(const std::string& spec, const std::vector<int64_t>& grid, uint64_t seed = 0) {
  return BlockSelection::parse(spec).resolve(grid, seed);
}

}  // namespace

TEST_SUITE("block sample") {
  TEST_CASE("edges are the border blocks of the grid") {
    // Grid (4, 3), id = x + 4y. Rows y = 0 and y = 2 are whole (0-3, 8-11); of row y = 1 only
    // x = 0 (id 4) and x = 3 (id 7) touch an edge.
    CHECK(select("edges", {4, 3}) == Ids{0, 1, 2, 3, 4, 7, 8, 9, 10, 11});
    // A dimension of extent 1 does not make every block an edge block.
    CHECK(select("edges", {4, 1}) == Ids{0, 3});
    CHECK(select("edges", {1, 1}) == Ids{0});
  }

  TEST_CASE("first, last, linear ids and coordinates name single blocks") {
    CHECK(select("first,last", {4, 3}) == Ids{0, 11});
    CHECK(select("0, 3,7", {4, 3}) == Ids{0, 3, 7});
    CHECK(select("(1, 2)", {4, 3}) == Ids{9});  // 1 + 4 * 2
    CHECK(select("(3,2),first", {4, 3}) == Ids{0, 11});
    CHECK(select("all", {2, 2}) == Ids{0, 1, 2, 3});
  }

  TEST_CASE("random:N draws N distinct blocks, the same for the same seed") {
    Ids a = select("random:5", {10, 10}, 7);
    REQUIRE(a.size() == 5);
    for (int64_t id : a) CHECK((id >= 0 && id < 100));
    CHECK(select("random:5", {10, 10}, 7) == a);
    CHECK(select("random:50", {4}, 1) == Ids{0, 1, 2, 3});  // more than the grid: all
  }

  TEST_CASE("malformed specs and blocks outside the grid are spec errors naming them") {
    CHECK_THROWS_WITH_AS(
        BlockSelection::parse("bogus"),
        doctest::Contains("--blocks bogus: 'bogus' is not a block spec; expected a "
                          "comma-separated list of: all, edges"),
        BlockSpecError);
    CHECK_THROWS_WITH_AS(BlockSelection::parse("random:0"),
                         doctest::Contains("needs a positive count"), BlockSpecError);
    CHECK_THROWS_WITH_AS(BlockSelection::parse("first,,last"), doctest::Contains("an empty item"),
                         BlockSpecError);
    CHECK_THROWS_WITH_AS(BlockSelection::parse("(1,2"), doctest::Contains("unbalanced"),
                         BlockSpecError);
    CHECK_THROWS_WITH_AS(select("12", {4, 3}),
                         doctest::Contains("block 12 is outside the grid (4, 3) of 12 blocks"),
                         BlockSpecError);
    CHECK_THROWS_WITH_AS(select("(1,2,0)", {4, 3}),
                         doctest::Contains("has 3 coordinate(s) but the grid (4, 3) has 2"),
                         BlockSpecError);
    CHECK_THROWS_WITH_AS(select("(4,0)", {4, 3}), doctest::Contains("outside the grid (4, 3)"),
                         BlockSpecError);
  }

  TEST_CASE("a race in the last block is found with --blocks edges and not with --blocks first") {
    CliResult edges = run_tessel({"run", race_kernel(), "--level", "thread", "--blocks", "edges",
                                  "--workers", "1", "--json"});
    CHECK(edges.status == 1);
    auto j = nlohmann::json::parse(edges.out);
    bool race_in_last = false;
    for (const auto& f : j["sim"]["findings"]) {
      if (f["kind"] == "race" && !f["benign"].get<bool>()) {
        for (const auto& b : f["blocks"]) race_in_last |= b == nlohmann::json::array({3, 2});
      }
    }
    CHECK_MESSAGE(race_in_last, j["sim"]["findings"].dump());
    CHECK(j["sampled"]["simulated_count"] == 10);  // the border of the 4 x 3 grid

    CliResult first = run_tessel({"run", race_kernel(), "--level", "thread", "--blocks", "first",
                                  "--workers", "1", "--json"});
    CHECK(first.status == 0);
    auto f = nlohmann::json::parse(first.out);
    CHECK(f["sim"]["findings"].empty());
    CHECK(f["sampled"]["simulated"] == nlohmann::json::array({0}));
    CHECK(f["tile"]["matches"] == true);  // the last block ran at tile level, in lock-step
  }

  TEST_CASE("a sampled GEMM's output is complete and equals the reference") {
    // 96 x 128 with 32 x 32 tiles: a (4, 3) grid; `first` simulates block 0, the other 11 run at
    // tile level, and every element of C is checked (NaN-filled before the run).
    CliResult r =
        run_tessel({"run", "gemm", "-D", "M=96", "-D", "N=128", "-D", "K=64", "-D", "block_M=32",
                    "-D", "block_N=32", "--level", "thread", "--blocks", "first", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["outputs"][0]["name"] == "C");
    CHECK(j["outputs"][0]["passed"] == true);
    CHECK(j["outputs"][0]["mismatches"] == 0);
    CHECK(j["tile"]["matches"] == true);
    CHECK(j["sampled"]["tile_level_blocks"] == 11);
    CHECK(j["sim"]["measured_blocks"] == 1);
  }

  TEST_CASE("scaled counters are the measured ones times grid / simulated") {
    // transpose_shared 64 x 96: grid (3, 2) = 6 blocks of 256 threads (8 warps). One block: each
    // warp makes 4 global loads of 32 consecutive floats (128 aligned bytes: 4 sectors), 4 shared
    // stores, 4 shared loads (the 33-column padding: 1 wavefront each) and 4 global stores of 4
    // sectors. So 64 shared requests, 64 wavefronts, 64 global requests, 256 sectors; scaled by
    // 6 / 1: 384, 384, 384, 1536.
    CliResult r = run_tessel(
        {"run", "transpose_shared", "--level", "thread", "--blocks", "(1, 1)", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["sim"]["shared"]["requests"] == 64);
    CHECK(j["sim"]["shared"]["wavefronts"] == 64);
    CHECK(j["sim"]["global"]["requests"] == 64);
    CHECK(j["sim"]["global"]["sectors"] == 256);
    const auto& s = j["sampled"];
    CHECK(s["simulated"] == nlohmann::json::array({4}));  // (1, 1) = 1 + 3 * 1
    CHECK(s["scale"].get<double>() == doctest::Approx(6.0));
    CHECK(s["scaled"]["shared"]["requests"] == 384);
    CHECK(s["scaled"]["shared"]["wavefronts"] == 384);
    CHECK(s["scaled"]["global"]["requests"] == 384);
    CHECK(s["scaled"]["global"]["sectors"] == 1536);
    // Two blocks: measured doubles, the scale halves (6 / 2), the estimate stays.
    CliResult two = run_tessel(
        {"run", "transpose_shared", "--level", "thread", "--blocks", "first,last", "--json"});
    auto t = nlohmann::json::parse(two.out);
    CHECK(t["sim"]["shared"]["requests"] == 128);
    CHECK(t["sampled"]["scaled"]["shared"]["requests"] == 384);
  }

  TEST_CASE("the text report names the simulated blocks and says the counters are scaled") {
    CliResult r = run_tessel({"run", "transpose_shared", "--level", "thread", "--blocks", "last"});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("sampled: 1 of 6 blocks simulated at thread level (--blocks last): (2, 1); "
                     "the other 5 ran at tile level") != std::string::npos);
    CHECK(r.out.find("measured over the 1 simulated blocks; SCALED to the whole grid (x 6/1 = 6): "
                     "shared requests 384, wavefronts 384") != std::string::npos);
  }

  TEST_CASE("a bad --blocks spec is a usage error naming the spec and what is accepted") {
    CliResult bad = run_tessel({"run", "transpose_shared", "--level", "thread", "--blocks", "mid"});
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--blocks mid: 'mid' is not a block spec; expected a comma-separated list "
                       "of: all, edges, first, last, random:N") != std::string::npos);
    CliResult outside =
        run_tessel({"run", "transpose_shared", "--level", "thread", "--blocks", "6"});
    CHECK(outside.status == 2);
    CHECK(outside.err.find("block 6 is outside the grid (3, 2) of 6 blocks") != std::string::npos);
    CliResult tile = run_tessel({"run", "transpose_shared", "--blocks", "edges"});
    CHECK(tile.status == 2);
    CHECK(tile.err.find("--blocks picks how --level thread simulates") != std::string::npos);
  }

  TEST_CASE("a kernel of several launches samples each launch from its own grid, in turn") {
    // mla_decode_split at its defaults: launch 1 has a block per (sequence, head group, split)
    // = 2 x 32/16 x 4 = 16 blocks and writes the partials; launch 2 a block per (sequence, head
    // group) = 2 x 2 = 4 and combines them. Launch 2 reads every split's partial, so the output
    // equals the reference only if launch 1's left-out blocks ran (at tile level) before it.
    CliResult r = run_tessel(
        {"run", "mla_decode_split", "--level", "thread", "--blocks", "random:2", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["tile"]["matches"] == true);
    CHECK(j["sampled"]["spec"] == "random:2");
    const auto& launches = j["sampled"]["launches"];
    REQUIRE(launches.size() == 2);
    CHECK(launches[0]["total"] == 16);
    CHECK(launches[0]["simulated_count"] == 2);
    CHECK(launches[0]["tile_level_blocks"] == 14);
    CHECK(launches[0]["scale"] == 8.0);  // 16 / 2
    CHECK(launches[1]["total"] == 4);
    CHECK(launches[1]["simulated_count"] == 2);
    CHECK(launches[1]["scale"] == 2.0);  // 4 / 2
    CHECK(j["sim"]["measured_blocks"] == 4);
    // The text names each launch's sample and scales each by its own grid.
    CliResult text =
        run_tessel({"run", "mla_decode_split", "--level", "thread", "--blocks", "first"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("sampled, launch 1 of 2 ('mla_decode_split_launch1'): 1 of 16 blocks "
                        "simulated at thread level (--blocks first): (0, 0, 0); the other 15 "
                        "ran at tile level") != std::string::npos);
    CHECK(text.out.find("sampled, launch 2 of 2 ('mla_decode_split_launch2'): 1 of 4 blocks") !=
          std::string::npos);
    CHECK(text.out.find("SCALED to the whole grid (x 16/1 = 16)") != std::string::npos);
    CHECK(text.out.find("SCALED to the whole grid (x 4/1 = 4)") != std::string::npos);
    // Block 10 is in launch 1's grid but not in launch 2's (4 blocks): refused before either
    // runs, naming the launch.
    CliResult outside =
        run_tessel({"run", "mla_decode_split", "--level", "thread", "--blocks", "10"});
    CHECK(outside.status == 2);
    CHECK(outside.err.find("kernel 'mla_decode_split', launch 2 of 2 "
                           "('mla_decode_split_launch2'): --blocks 10: block 10 is outside the "
                           "grid (2, 2) of 4 blocks") != std::string::npos);
  }

  TEST_CASE("--blocks all is the unsampled run") {
    CliResult r =
        run_tessel({"run", "transpose_shared", "--level", "thread", "--blocks", "all", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["sampled"].is_null());
    CHECK(j["sim"]["shared"]["requests"] == 384);  // 6 blocks x 64, as derived above
  }

  TEST_CASE("--progress leaves the JSON on stdout intact in a sampled run") {
    CliResult r = run_tessel({"run", "transpose_shared", "--level", "thread", "--blocks", "edges",
                              "--progress", "--json"});
    REQUIRE(r.status == 0);
    CHECK(nlohmann::json::parse(r.out).is_object());  // throws, failing the test, if not JSON
  }

  TEST_CASE("a run reports the wall and CPU seconds of each of its parts") {
    // A sampled run has all six parts; a tile-level run has no blocks left out and no second
    // tile level, so those two parts are zero.
    const char* parts[] = {"inputs", "reference", "tile_rest", "run", "tile_check", "checks"};
    CliResult r =
        run_tessel({"run", "transpose_shared", "--level", "thread", "--blocks", "first", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    for (const char* part : parts) {
      CAPTURE(part);
      REQUIRE(j["phase_seconds"].contains(part));
      CHECK(j["phase_seconds"][part]["wall"].get<double>() >= 0);
      CHECK(j["phase_seconds"][part]["cpu"].get<double>() >= 0);
    }
    CHECK(j["phase_seconds"]["tile_rest"]["wall"].get<double>() > 0);  // 5 blocks ran there
    CliResult tile = run_tessel({"run", "transpose_shared", "--json"});
    REQUIRE(tile.status == 0);
    auto t = nlohmann::json::parse(tile.out);
    CHECK(t["phase_seconds"]["run"]["wall"].get<double>() > 0);
    CHECK(t["phase_seconds"]["tile_rest"]["wall"].get<double>() == 0);
    CHECK(t["phase_seconds"]["tile_check"]["wall"].get<double>() == 0);
  }

}  // TEST_SUITE
