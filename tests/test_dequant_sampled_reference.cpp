// The sampled references of the dequantised GEMMs (dequant_gemm and dequant_gemm_{uint4, int4,
// nf4, fp4, int2}): the same values as the full reference at the elements they check, a wrong
// element in a sampled row of a block left out found, and `--reference auto` sampling only when
// the full reference costs more than the threshold.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "examples/registry.h"
#include "examples/run_example.h"
#include "examples/sampled_product.h"
#include "tests/cli_runner.h"
#include "tools/kernel_run.h"

using namespace tessel;

namespace {

const char* const kDequantGemms[] = {"dequant_gemm",     "dequant_gemm_uint4", "dequant_gemm_int4",
                                     "dequant_gemm_nf4", "dequant_gemm_fp4",   "dequant_gemm_int2"};

// The small shape of these tests: Ct is N x M = 128 x 96 in 32 x 32 tiles, on a
// (ceildiv(N, 32), ceildiv(M, 32)) = (4, 3) grid; K = 64 is two k-steps and two scale groups.
std::map<std::string, std::string> small_shape(const Example& e) {
  std::map<std::string, std::string> v = {{"M", "96"},        {"N", "128"},      {"K", "64"},
                                          {"block_M", "32"},  {"block_N", "32"}, {"block_K", "32"},
                                          {"num_stages", "2"}};
  if (std::any_of(e.params.begin(), e.params.end(),
                  [](const ParamSpec& p) { return p.name == "group_size"; }))
    v["group_size"] = "32";
  return v;
}

/// `value` rounded to `dtype` as a tensor of that dtype stores it.
double stored(DataType dtype, double value) {
  HostTensor one(dtype, {1});
  one.set(0, value);
  return one.at(0);
}

/// `tessel run KERNEL` at thread level with block (0, 0) simulated, `reference` as given.
std::vector<std::string> small_run(const std::string& kernel, const std::string& reference,
                                   std::vector<std::string> more) {
  std::vector<std::string> args = {"run",   kernel,   "--level",     "thread", "--blocks",
                                   "first", "--json", "--reference", reference};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::string one_wrong_kernel() {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/dequant_gemm_one_wrong_element.py";
}

}  // namespace

TEST_SUITE("dequant sampled reference") {
  TEST_CASE("every dequant GEMM's sampled reference has the full reference's values") {
    for (const std::string name : kDequantGemms) {
      CAPTURE(name);
      const Example* e = find_example(name);
      REQUIRE(e != nullptr);
      REQUIRE(e->sampled_reference);
      Params params = make_params(*e, small_shape(*e));
      Kernel kernel = e->build(params);
      TensorMap t = make_tensors(kernel, {}, e->outputs, 5);
      // Activations -2..2 (float16; int8 ones are integers already) and scales 1/4, 1/2, 3/4:
      // a weight is then an integer, or a float16 of magnitude at least 0.0796 / 4 > 2^-6 (nf4)
      // or a multiple of 1/8 (fp4), so every product is a multiple of 2^-16 and every sum of
      // 64 is below 2^15 in magnitude (int2: 64 * 128 * 2): exact in double, whatever the
      // summation order, so the two references must agree exactly.
      HostTensor& A = t.at("A");
      if (A.dtype() == DataType::f16()) {
        for (int64_t i = 0; i < A.size(); ++i) A.set(i, static_cast<double>(i * 7 % 5) - 2);
      }
      if (t.count("Scale")) {
        HostTensor& s = t.at("Scale");
        for (int64_t i = 0; i < s.size(); ++i) s.set(i, 0.25 * static_cast<double>(1 + i % 3));
      }
      TensorMap full = t;
      e->reference(params, full);
      // Block 5 of the (4, 3) grid is (bx, by) = (1, 1): its tile is Ct[32:64, 32:64].
      ReferenceSampleRequest req{{4, 3}, {5}, 3, 2};
      std::vector<SampledOutput> sampled = e->sampled_reference(params, t, req);
      REQUIRE(sampled.size() == 1);
      const SampledOutput& s = sampled[0];
      CHECK(s.name == "Ct");
      // 2 rows of each of the 4 tile rows (8 x 96 = 768), 2 columns of each of the 3 tile
      // columns (6 x 128 = 768, 48 of them in the sampled rows) and the tile of block 5, 1024
      // less its 2 sampled rows and 2 sampled columns (64 + 64 - 4): 768 + 720 + 900 = 2388.
      REQUIRE(s.indices.size() == 2388);
      REQUIRE(s.expected.size() == 2388);
      CHECK(std::is_sorted(s.indices.begin(), s.indices.end()));
      std::set<int64_t> checked(s.indices.begin(), s.indices.end());
      CHECK(checked.size() == 2388);
      for (int64_t r = 32; r < 64; ++r) {
        for (int64_t c = 32; c < 64; ++c) CHECK(checked.count(r * 96 + c) == 1);
      }
      const HostTensor& ct = full.at("Ct");
      int64_t differ = 0;
      for (size_t i = 0; i < s.indices.size(); ++i) {
        if (stored(ct.dtype(), s.expected[i]) != ct.at(s.indices[i])) ++differ;
      }
      CHECK(differ == 0);
      CHECK(s.description.find("the tiles Ct[bx*32, by*32] of the 1 simulated blocks in full") !=
            std::string::npos);
    }
  }

  TEST_CASE("a wrong element in a sampled row of a block left out fails the sampled check") {
    // The run's seed 0 draws the sampled rows of Ct with seed 0 and its columns with seed 1
    // (examples/sampled_product.h); `--blocks first` simulates block (0, 0), tile Ct[0:32, 0:32].
    // The wrong element: the first sampled row of tile row 1 (block (1, 0), left out) and a
    // column of tile column 0 that is not sampled, so only its row brings it into the sample.
    const std::vector<int64_t> rows = sample_per_tile(128, 32, 2, 0);
    const std::vector<int64_t> cols = sample_per_tile(96, 32, 2, 1);
    const int64_t row = rows[2];
    REQUIRE(row >= 32);
    REQUIRE(row < 64);
    int64_t col = 0;
    while (std::find(cols.begin(), cols.end(), col) != cols.end()) ++col;
    CliResult r = run_tessel(small_run(
        one_wrong_kernel(), "sampled",
        {"-D", "bug_row=" + std::to_string(row), "-D", "bug_col=" + std::to_string(col)}));
    INFO(r.out.substr(0, 2000) << r.err);
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    const auto& c = j["outputs"][0];
    CHECK(c["sampled"] == true);
    CHECK(c["passed"] == false);
    CHECK(c["mismatches"] == 1);
    CHECK(c["first_mismatch"]["index"] == nlohmann::json::array({row, col}));
    CHECK(j["tile"]["matches"] == true);  // the tile level has the same bug: only the reference
  }

  TEST_CASE("a wrong element outside the sample passes the sampled check, not the full one") {
    // An element of block (1, 0) in no sampled row and no sampled column: the sample cannot see
    // it (which is why a sampled check says so), the full reference does.
    const std::vector<int64_t> rows = sample_per_tile(128, 32, 2, 0);
    const std::vector<int64_t> cols = sample_per_tile(96, 32, 2, 1);
    int64_t row = 32, col = 0;
    while (std::find(rows.begin(), rows.end(), row) != rows.end()) ++row;
    while (std::find(cols.begin(), cols.end(), col) != cols.end()) ++col;
    std::vector<std::string> bug = {"-D", "bug_row=" + std::to_string(row), "-D",
                                    "bug_col=" + std::to_string(col)};
    CliResult sampled = run_tessel(small_run(one_wrong_kernel(), "sampled", bug));
    CHECK(sampled.status == 0);
    CliResult full = run_tessel(small_run(one_wrong_kernel(), "full", bug));
    CHECK(full.status == 1);
    auto j = nlohmann::json::parse(full.out);
    CHECK(j["outputs"][0]["sampled"] == false);
    CHECK(j["outputs"][0]["mismatches"] == 1);
    CHECK(j["outputs"][0]["first_mismatch"]["index"] == nlohmann::json::array({row, col}));
  }

  TEST_CASE("auto samples a dequant GEMM's reference only above the threshold of multiply-adds") {
    // The full reference costs M * N * K = 96 * 128 * 64 = 786432 multiply-adds.
    for (const std::string name : {"dequant_gemm", "dequant_gemm_nf4"}) {
      CAPTURE(name);
      std::vector<std::string> defines;
      for (const auto& [k, v] : small_shape(*find_example(name))) defines.push_back(k + "=" + v);
      cli::ResolvedKernel k = cli::resolve_kernel(name, defines);
      cli::RunRequest req;
      req.level = "thread";
      req.blocks = "first";
      req.sample_above_macs = 786431;
      cli::KernelRun above = cli::run_kernel(k, req);
      CHECK(above.passed);
      REQUIRE(above.vs_reference.size() == 1);
      CHECK(above.vs_reference[0].sampled == int64_t{2388});
      req.sample_above_macs = 786432;
      cli::KernelRun at = cli::run_kernel(k, req);
      CHECK(at.passed);
      REQUIRE(at.vs_reference.size() == 1);
      CHECK_FALSE(at.vs_reference[0].sampled.has_value());
    }
  }

  TEST_CASE("the dequant GEMMs' full references cost M * N * K: M2 and M6 sample, M1 does not") {
    // Under the default threshold of 4e11: M1 (4096 x 8192 x 8192) = 274,877,906,944 does not
    // sample; M2 (4096 x 28672 x 8192) = 962,072,674,304 and M6 (8192 x 28672 x 8192) =
    // 1,924,145,348,608 do.
    for (const std::string name : kDequantGemms) {
      CAPTURE(name);
      const Example* e = find_example(name);
      REQUIRE(e->reference_macs);
      Params m1 = make_params(*e, {{"M", "4096"}, {"N", "8192"}, {"K", "8192"}});
      Params m2 = make_params(*e, {{"M", "4096"}, {"N", "28672"}, {"K", "8192"}});
      Params m6 = make_params(*e, {{"M", "8192"}, {"N", "28672"}, {"K", "8192"}});
      CHECK(e->reference_macs(m1) == 274877906944.0);
      CHECK(e->reference_macs(m2) == 962072674304.0);
      CHECK(e->reference_macs(m6) == 1924145348608.0);
      CHECK(e->reference_macs(m1) < cli::RunRequest{}.sample_above_macs);
      CHECK(e->reference_macs(m2) > cli::RunRequest{}.sample_above_macs);
      CHECK(e->reference_macs(m6) > cli::RunRequest{}.sample_above_macs);
    }
  }
}
