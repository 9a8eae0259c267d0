// The sampled reference of sampled thread-level runs (`run --blocks SPEC --reference sampled`):
// which rows, columns and tiles of C it checks, that it finds a kernel wrong in one block left
// out of the simulation, that the report says it is a sample, and that a full reference still
// checks every element.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "examples/sampled_product.h"
#include "tests/cli_runner.h"

using namespace tessel;

namespace {

std::string offset_bug_kernel() {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/gemm_block_offset_bug.py";
}

// The small GEMM of these tests: C 96 x 128 in 32 x 32 tiles, a (4, 3) grid of blocks.
const std::vector<std::string> kSmallGemm = {"-D", "M=96",       "-D",      "N=128",
                                             "-D", "K=64",       "-D",      "block_M=32",
                                             "-D", "block_N=32", "--level", "thread"};

CliResult run_small(std::vector<std::string> args) {
  std::vector<std::string> all = {"run"};
  all.push_back(args.front());
  all.insert(all.end(), kSmallGemm.begin(), kSmallGemm.end());
  all.insert(all.end(), args.begin() + 1, args.end());
  return run_tessel(all);
}

}  // namespace

TEST_SUITE("sampled reference") {
  TEST_CASE("sample_per_tile picks distinct seeded indices in every tile span") {
    // [0, 70) in tiles of 32: spans [0, 32), [32, 64), [64, 70); 2 of each.
    std::vector<int64_t> a = sample_per_tile(70, 32, 2, 7);
    REQUIRE(a.size() == 6);
    CHECK(a == sample_per_tile(70, 32, 2, 7));
    for (size_t t = 0; t < 3; ++t) {
      CHECK(a[2 * t] < a[2 * t + 1]);
      CHECK(a[2 * t] >= static_cast<int64_t>(32 * t));
      CHECK(a[2 * t + 1] < std::min<int64_t>(70, 32 * (t + 1)));
    }
    // A span no longer than the count is taken whole: [64, 65) has the one index 64.
    CHECK(sample_per_tile(65, 32, 2, 0).back() == 64);
    CHECK(sample_per_tile(65, 32, 2, 0).size() == 5);
  }

  TEST_CASE("sampled_product gives A·B on the sampled rows, columns and tiles, each once") {
    // A (5 x 3) and B (3 x 4) with small integers, so every product is exact in double.
    const int64_t M = 5, N = 4, K = 3;
    MatrixD A(M, K), B(K, N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) A(i, k) = static_cast<double>((i * 3 + k) % 7) - 3;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) B(k, j) = static_cast<double>((k * 5 + j) % 4) - 1;
    MatrixPart a_rows = [&](const std::vector<int64_t>& idx, MatrixD& out) {
      out.resize(static_cast<int64_t>(idx.size()), K);
      for (size_t r = 0; r < idx.size(); ++r) out.row(static_cast<int64_t>(r)) = A.row(idx[r]);
    };
    MatrixPart b_cols = [&](const std::vector<int64_t>& idx, MatrixD& out) {
      out.resize(K, static_cast<int64_t>(idx.size()));
      for (size_t c = 0; c < idx.size(); ++c) out.col(static_cast<int64_t>(c)) = B.col(idx[c]);
    };
    // Row 1, column 2, and the tile rows [3, 5) x columns [0, 2).
    SampledOutput s = sampled_product(M, N, K, a_rows, b_cols, {1}, {2}, {{3, 5, 0, 2}});
    // Row 1: 4 elements (4..7); column 2 in the other rows 0, 2, 3, 4: flat 2, 10, 14, 18; the
    // tile: 12, 13, 16, 17 (14 and 18 are in column 2 already).
    std::vector<int64_t> want = {2, 4, 5, 6, 7, 10, 12, 13, 14, 16, 17, 18};
    CHECK(s.indices == want);
    MatrixD C = A * B;
    REQUIRE(s.expected.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CAPTURE(want[i]);
      CHECK(s.expected[i] == C(want[i] / N, want[i] % N));
    }
  }

  TEST_CASE("the sampled reference checks the simulated tile and 2 rows and columns per tile") {
    // (4, 3) grid of 32 x 32 tiles: 2 rows of each of the 3 tile rows (6 rows x 128 columns
    // = 768), 2 columns of each of the 4 tile columns (8 columns x 96 rows = 768, 48 of them in
    // the sampled rows), and block 0's tile: 1024 less its 2 sampled rows and 2 sampled columns
    // (2 * 32 + 2 * 32 - 4 = 124). 768 + 768 - 48 + 900 = 2388 of 12288.
    CliResult r = run_small({"gemm", "--blocks", "first", "--reference", "sampled", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    const auto& c = j["outputs"][0];
    CHECK(c["passed"] == true);
    CHECK(c["sampled"] == true);
    CHECK(c["elements"] == 12288);
    CHECK(c["checked"] == 2388);
    CHECK(c["sample"].get<std::string>().find("drawn with seed 0") != std::string::npos);
    CHECK(j["tile"]["matches"] == true);  // the simulated block against the tile level, in full

    CliResult text = run_small({"gemm", "--blocks", "first", "--reference", "sampled"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("C: matches the reference ON A SAMPLE") != std::string::npos);
    CHECK(text.out.find("2388 of 12288 elements checked") != std::string::npos);
    CHECK(text.out.find("the other 9900 are NOT checked against the reference") !=
          std::string::npos);
  }

  TEST_CASE("a kernel wrong in one block left out is caught by the sampled reference") {
    // Block (3, 0) computes its tile from A's rows 1..32: every element of C[0:32, 96:128] is
    // wrong, and the sample checks 2 rows and 2 columns of that tile (124 elements), the first
    // in flat order in row 0 (a sampled column reaches every row). A shifted row's dot product
    // can equal the right one within the tolerance only by chance, so nearly all 124 differ.
    CliResult r =
        run_small({offset_bug_kernel(), "--blocks", "first", "--reference", "sampled", "--json"});
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    const auto& c = j["outputs"][0];
    CHECK(c["passed"] == false);
    CHECK(c["sampled"] == true);
    CHECK(c["mismatches"].get<int64_t>() <= 124);
    CHECK(c["mismatches"].get<int64_t>() >= 100);
    auto index = c["first_mismatch"]["index"];
    CHECK(index[0] == 0);
    CHECK(index[1].get<int64_t>() >= 96);
    CHECK(j["tile"]["matches"] == true);  // the tile level has the same bug: only the reference

    CliResult text =
        run_small({offset_bug_kernel(), "--blocks", "first", "--reference", "sampled"});
    CHECK(text.out.find("C: DIFFERS FROM the reference ON A SAMPLE") != std::string::npos);
    CHECK(text.out.find("first at C[0, ") != std::string::npos);
  }

  TEST_CASE("a full reference checks every element and finds the whole wrong tile") {
    CliResult r =
        run_small({offset_bug_kernel(), "--blocks", "first", "--reference", "full", "--json"});
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    const auto& c = j["outputs"][0];
    CHECK(c["sampled"] == false);
    CHECK(c["sample"].is_null());
    CHECK(c["checked"] == 12288);
    // The wrong tile is 32 x 32 = 1024 elements; none outside it differs.
    CHECK(c["mismatches"].get<int64_t>() <= 1024);
    CHECK(c["mismatches"].get<int64_t>() >= 900);
    CHECK(c["first_mismatch"]["index"] == nlohmann::json::array({0, 96}));
  }

  TEST_CASE("auto uses the full reference for a GEMM that costs little") {
    // 96 * 128 * 64 multiply-adds, far below the 4e11 above which auto samples.
    CliResult r = run_small({"gemm", "--blocks", "first", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["outputs"][0]["sampled"] == false);
    CHECK(j["outputs"][0]["checked"] == 12288);
  }

  TEST_CASE("--reference sampled without a block sample or a sampled reference is exit 2") {
    CliResult whole = run_small({"gemm", "--reference", "sampled"});
    CHECK(whole.status == 2);
    CHECK(whole.err.find("--reference sampled") != std::string::npos);
    CHECK(whole.err.find("--blocks naming fewer than all blocks") != std::string::npos);
    CliResult none = run_tessel({"run", "transpose_shared", "--level", "thread", "--blocks",
                                 "first", "--reference", "sampled"});
    CHECK(none.status == 2);
    CHECK(none.err.find("has no sampled reference") != std::string::npos);
    CliResult bad = run_small({"gemm", "--blocks", "first", "--reference", "some"});
    CHECK(bad.status == 2);
  }
}
