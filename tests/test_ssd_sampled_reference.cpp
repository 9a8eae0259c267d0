// The sampled references of the Mamba-2 workloads (chunk_scan, chunk_state): on every element
// they sample they equal the full reference (values and error bounds), they cover the simulated
// blocks' tiles and a few rows of every chunk or state, and a sampled run finds a kernel wrong
// only in blocks left out of the simulation.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "examples/presets.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "tests/cli_runner.h"
#include "tools/kernel_run.h"

using namespace tessel;

namespace {

/// Batch 2, 4 heads in 2 groups, 200 positions: chunks of 64 with a ragged last one (8 = 200 -
/// 3 * 64), head dimension 64 and state 64, tiles of 32 rows.
const std::map<std::string, std::string> kRagged = {
    {"batch", "2"}, {"nheads", "4"}, {"ngroups", "2"}, {"seq_len", "200"}, {"block_M", "32"}};

struct Sampled {
  TensorMap full;      ///< the full reference's outputs and bounds
  SampledOutput part;  ///< the sampled reference's one output
};

Sampled both_references(const std::string& name, const std::vector<int64_t>& grid,
                        const std::vector<int64_t>& simulated) {
  const Example* e = find_example(name);
  REQUIRE(e);
  REQUIRE(e->sampled_reference);
  Params p = make_params(*e, kRagged);
  TensorMap t = make_tensors(e->build(p), {}, e->outputs, 5);
  Sampled s;
  s.full = t;
  e->reference(p, s.full);
  std::vector<SampledOutput> parts = e->sampled_reference(p, t, {grid, simulated, 9, 2});
  REQUIRE(parts.size() == 1);
  s.part = std::move(parts.front());
  return s;
}

/// Each sampled element (and its bound) equals the full reference's within one fp16 rounding:
/// the full reference stores fp16, the sample keeps doubles whose last bits may differ (dense
/// against triangular products), which can round to the neighbouring fp16 value.
void check_equals_full(const Sampled& s, const std::string& output) {
  const HostTensor &full = s.full.at(output), &bound = s.full.at(error_bound_name(output));
  REQUIRE(s.part.name == output);
  REQUIRE(s.part.expected.size() == s.part.indices.size());
  REQUIRE(s.part.bound.size() == s.part.indices.size());
  HostTensor f16(full.dtype(), {1});
  auto rounded = [&](double v) {
    f16.set(0, v);
    return f16.at(0);
  };
  int64_t bad = 0;
  for (size_t i = 0; i < s.part.indices.size(); ++i) {
    const int64_t at = s.part.indices[i];
    const double want = full.at(at), want_bound = bound.at(at);
    bad += std::fabs(rounded(s.part.expected[i]) - want) >
           std::ldexp(std::fabs(want), -10) + std::ldexp(1.0, -24);
    bad += std::fabs(rounded(s.part.bound[i]) - want_bound) >
           std::ldexp(std::fabs(want_bound), -10) + std::ldexp(1.0, -24);
  }
  CHECK(bad == 0);
  CHECK(std::is_sorted(s.part.indices.begin(), s.part.indices.end()));
  CHECK(std::adjacent_find(s.part.indices.begin(), s.part.indices.end()) == s.part.indices.end());
}

std::vector<std::string> ragged_args(std::vector<std::string> args) {
  for (const auto& [k, v] : kRagged) {
    args.push_back("-D");
    args.push_back(k + "=" + v);
  }
  return args;
}

}  // namespace

TEST_SUITE("sampled reference of the SSD workloads") {
  TEST_CASE("chunk_scan's sample equals the full reference on the simulated tiles and 2 rows") {
    // Grid (headdim / 64, chunk / 32, batch * chunks * heads) = (1, 2, 2 * 4 * 4). Block 3 is
    // (0, 1, 1): batch 0, chunk 0, head 1, positions 32..63; block 40 is (0, 0, 20): batch 1,
    // chunk 1 (20 / 4 = 5 = 1 * 4 + 1), head 0, positions 64..95.
    Sampled s = both_references("chunk_scan", {1, 2, 32}, {3, 40});
    check_equals_full(s, "Output");
    const std::set<int64_t> got(s.part.indices.begin(), s.part.indices.end());
    // Output (batch 2, seq 200, heads 4, headdim 64): the simulated tiles' positions are
    // checked for every head and head dimension.
    auto flat = [](int64_t b, int64_t pos, int64_t h, int64_t p) {
      return ((b * 200 + pos) * 4 + h) * 64 + p;
    };
    int64_t missing = 0;
    for (int64_t h = 0; h < 4; ++h) {
      for (int64_t p = 0; p < 64; ++p) {
        for (int64_t l = 32; l < 64; ++l) missing += !got.count(flat(0, l, h, p));
        for (int64_t l = 64; l < 96; ++l) missing += !got.count(flat(1, l, h, p));
      }
    }
    CHECK(missing == 0);
    // Every other chunk: 2 positions of 64, each with 4 heads x 64 dims = 512 elements; the
    // ragged last chunk keeps those of its 2 that fall within its 8 positions (0, 1 or 2).
    // The two chunks with a simulated tile have 32 + at most 2 positions.
    std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> positions;  // (batch, chunk)
    for (int64_t i : s.part.indices) {
      const int64_t pos = i / (4 * 64) % 200, b = i / (200 * 4 * 64);
      positions[{b, pos / 64}].insert(pos);
    }
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t c = 0; c < 4; ++c) {
        CAPTURE(b);
        CAPTURE(c);
        const size_t n = positions[{b, c}].size();
        if ((b == 0 && c == 0) || (b == 1 && c == 1)) {
          CHECK(n >= 32);
          CHECK(n <= 34);
        } else if (c < 3) {
          CHECK(n == 2);
        } else {
          CHECK(n <= 2);
        }
      }
    }
  }

  TEST_CASE("chunk_state's sample equals the full reference on the simulated tiles and 2 rows") {
    // Grid (headdim / 32, dstate / 64, batch * chunks * heads) = (2, 1, 32). Block 5 is
    // (1, 0, 2): state 2 (batch 0, chunk 0, head 2), rows 32..63, every column.
    Sampled s = both_references("chunk_state", {2, 1, 32}, {5});
    check_equals_full(s, "states");
    // states (batch 2, chunks 4, heads 4, headdim 64, dstate 64): state u holds 64 x 64
    // elements from u * 4096. Every state has 2 rows of 64 elements sampled; state 2 also rows
    // 32..63 (so 32 to 34 rows).
    std::map<int64_t, std::set<int64_t>> rows;
    for (int64_t i : s.part.indices) rows[i / 4096].insert(i / 64 % 64);
    REQUIRE(rows.size() == 32);
    for (const auto& [u, r] : rows) {
      CAPTURE(u);
      if (u == 2) {
        CHECK(r.size() >= 32);
        for (int64_t q = 32; q < 64; ++q) CHECK(r.count(q));
      } else {
        CHECK(r.size() == 2);
      }
    }
    CHECK(s.part.indices.size() % 64 == 0);  // whole rows only
  }

  TEST_CASE("a sampled run finds a head-index bug in blocks left out of the simulation") {
    // tests/kernels/chunk_scan_head_bug.py reads D[h % 2]: heads 2 and 3 are wrong by
    // (D[h % 2] - D[h]) x, heads 0 and 1 right. Block 0 (head 0) alone is simulated, so the
    // thread level matches the tile level and only the reference can see the bug; its sampled
    // positions cover every head.
    const std::string bug =
        std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/chunk_scan_head_bug.py";
    CliResult r = run_tessel(ragged_args(
        {"run", bug, "--level", "thread", "--blocks", "0", "--reference", "sampled", "--json"}));
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    const auto& c = j["outputs"][0];
    CHECK(c["passed"] == false);
    CHECK(c["sampled"] == true);
    CHECK(c["first_mismatch"]["index"][2].get<int64_t>() >= 2);
    CHECK(j["tile"]["matches"] == true);

    CliResult good = run_tessel(ragged_args({"run", "chunk_scan", "--level", "thread", "--blocks",
                                             "0", "--reference", "sampled", "--json"}));
    CHECK(good.status == 0);
    auto g = nlohmann::json::parse(good.out);
    CHECK(g["outputs"][0]["passed"] == true);
    CHECK(g["outputs"][0]["sampled"] == true);
    CHECK(g["outputs"][0]["checked"].get<int64_t>() < g["outputs"][0]["elements"].get<int64_t>());
  }

  TEST_CASE("auto samples the references of CC5 and CT5 and not those of CC4 and CT4") {
    // Batch 64, 64 heads, chunk 256, headdim 64, dstate 128 (paper Table 4, TileLang's example).
    // chunk_state: 2 * chunk * headdim * dstate = 4,194,304 multiply-adds a (batch, chunk, head):
    // CT5 (seq 8192, 32 chunks) 131,072 of them = 549,755,813,888; CT4 (2048) 137,438,953,472.
    // chunk_scan: chunk * headdim * (chunk + 2 * dstate) = 8,388,608 each: CC5 1,099,511,627,776,
    // CC4 274,877,906,944. The threshold is 4e11.
    const double threshold = cli::RunRequest{}.sample_above_macs;
    const struct {
      const char *kernel, *preset;
      double macs;
    } cases[] = {{"chunk_state", "CT5", 549755813888.0},
                 {"chunk_state", "CT4", 137438953472.0},
                 {"chunk_scan", "CC5", 1099511627776.0},
                 {"chunk_scan", "CC4", 274877906944.0}};
    for (const auto& c : cases) {
      CAPTURE(c.preset);
      const Example* e = find_example(c.kernel);
      REQUIRE(e->reference_macs);
      const Params p = make_params(*e, apply_preset(c.kernel, {{"preset", c.preset}}));
      CHECK(e->reference_macs(p) == c.macs);
      CHECK((e->reference_macs(p) > threshold) == (c.preset[2] == '5'));
    }
  }

  TEST_CASE("auto runs the full reference of a small chunk_state") {
    // 2 * 4 * 4 states of 64 x 64 x 64 multiply-adds, twice: far below 4e11, and it fits.
    CliResult r = run_tessel(
        ragged_args({"run", "chunk_state", "--level", "thread", "--blocks", "first", "--json"}));
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["outputs"][0]["sampled"] == false);
    CHECK(j["outputs"][0]["checked"] == 2 * 4 * 4 * 64 * 64);
  }
}
