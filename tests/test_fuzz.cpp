// The random-program differential tester (tests/fuzz_gen, `tessel fuzz`): generated programs are
// valid and deterministic, a few hundred seeds agree at tile and thread level on sm80 and gfx942,
// and the shrinker reduces a planted disagreement to a small program.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/printer.h"
#include "tests/cli_runner.h"
#include "tests/fuzz_gen/fuzz_check.h"

using namespace tessel;
using namespace tessel::fuzz;

namespace {

int count_kind(const Program& p, StepKind k) {
  return static_cast<int>(
      std::count_if(p.steps.begin(), p.steps.end(), [&](const Step& s) { return s.kind == k; }));
}

/// Gemm steps, pipelined or not.
int gemms(const Program& p) {
  return count_kind(p, StepKind::kGemm) + count_kind(p, StepKind::kPipeline);
}

/// Runs seeds [first, first + n) on `target` without verify; fails on any disagreement, naming
/// the seed and the program. Returns how many programs agreed.
int run_seeds(uint64_t first, int n, const std::string& target) {
  CheckOptions options;
  options.verify = false;
  int agree = 0;
  for (uint64_t s = first; s < first + static_cast<uint64_t>(n); ++s) {
    Program p = generate(s, target);
    Outcome o = check_program(p, options);
    CHECK_MESSAGE(o.verdict != Verdict::kDisagree,
                  "seed " << s << " (" << summary(p) << "): " << o.reason << ": " << o.detail);
    agree += o.verdict == Verdict::kAgree;
  }
  return agree;
}

}  // namespace

TEST_SUITE("fuzz") {
  TEST_CASE("a seed always draws the same program, and every drawn program is valid") {
    for (uint64_t s = 1; s <= 200; ++s) {
      Program a = generate(s, "sm80"), b = generate(s, "sm80");
      CHECK(summary(a) == summary(b));
      CHECK(print_kernel(build_program(a).kernel) == print_kernel(build_program(b).kernel));
      std::optional<std::string> why = invalid_reason(a);
      CHECK_MESSAGE(!why, "seed " << s << ": " << why.value_or(""));
      CHECK(!a.steps.empty());
    }
  }

  TEST_CASE("the generator draws every kind of step, both gemm placements and every stage count") {
    std::map<StepKind, int> kinds;
    std::set<int> stages, placements;
    bool symbolic = false, ragged = false, transposed = false;
    for (uint64_t s = 1; s <= 300; ++s) {
      Program p = generate(s, "sm80");
      symbolic |= p.symbolic;
      ragged |= p.ragged_rows > 0 && p.ragged_cols > 0;
      for (const Step& st : p.steps) {
        ++kinds[st.kind];
        if (st.kind == StepKind::kPipeline) stages.insert(st.stages);
        if (st.kind == StepKind::kGemm) placements.insert(st.a_scope * 2 + st.b_scope);
        transposed |= st.trans_a && st.trans_b;
      }
    }
    CHECK(kinds.size() == 14);  // every StepKind
    CHECK(stages == std::set<int>{0, 1, 2, 3, 4});
    CHECK(placements == std::set<int>{0, 1, 2, 3});  // ss, sr, rs, rr
    CHECK(symbolic);
    CHECK(ragged);
    CHECK(transposed);
  }

  TEST_CASE("random programs agree at tile and thread level on sm80") {
    // Most programs are accepted: a generator whose programs were all refused would test nothing.
    int agree = run_seeds(1000, 120, "sm80");
    CHECK(agree >= 60);
  }

  TEST_CASE("random programs agree at tile and thread level on gfx942") {
    int agree = run_seeds(5000, 80, "gfx942");
    CHECK(agree >= 40);
  }

  TEST_CASE("the shrinker reduces a planted disagreement to the step that causes it") {
    // The planted bug: the thread level's outputs that hold a gemm's result (pipelined or not)
    // are off by one at element 0. The smallest program that still shows it is a gemm and the
    // step that writes its result out (a store or an atomic).
    CheckOptions options;
    options.verify = false;
    options.corrupt = [](const Program& p, TensorMap& t) {
      for (const Step& out : p.steps) {
        if (out.out < 0) continue;
        bool from_gemm = std::any_of(p.steps.begin(), p.steps.end(), [&](const Step& g) {
          return (g.kind == StepKind::kGemm || g.kind == StepKind::kPipeline) && g.dst == out.a;
        });
        HostTensor& o = t.at("O" + std::to_string(out.out));
        if (from_gemm) o.set(0, o.at(0) + 1);
      }
    };
    uint64_t seed = 0;
    Program big;
    for (uint64_t s = 1; s < 2000 && seed == 0; ++s) {
      Program p = generate(s, "sm80");
      if (p.steps.size() >= 5 && gemms(p) == 1 && p.grid > 1 &&
          check_program(p, options).verdict == Verdict::kDisagree) {
        seed = s;
        big = p;
      }
    }
    REQUIRE(seed != 0);
    Program small = shrink(big, [&](const Program& q) {
      Outcome o = check_program(q, options);
      return o.verdict == Verdict::kDisagree && o.reason == "mismatch";
    });
    INFO("seed " << seed << ": " << summary(big) << " -> " << summary(small));
    CHECK(gemms(small) == 1);
    CHECK(small.steps.size() == 2);  // the gemm and a store or atomic that writes its result out
    CHECK(small.grid == 1);
    CHECK(small.ragged_rows + small.ragged_cols + small.ragged_k == 0);
    CHECK(check_program(small, options).verdict == Verdict::kDisagree);
  }

  TEST_CASE("refusal reasons blur numbers and quoted names so equal reasons count together") {
    CHECK(blur_reason("kernel 'fuzz_12': buffer 't3_frag' has 64 rows\nmore") ==
          "kernel '_': buffer '_' has N rows");
  }

  TEST_CASE("tessel fuzz exits 0 when every program agrees and reports the counts") {
    CliResult r = run_tessel({"fuzz", "--seed", "1", "--count", "6", "--target", "sm80", "--json"});
    CHECK(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["programs"] == 6);
    CHECK(j["agree"].get<int>() + j["refused"].get<int>() == 6);
    CHECK(j["disagree"] == 0);
  }

}  // TEST_SUITE
