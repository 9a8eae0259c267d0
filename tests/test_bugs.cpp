// The corpus of deliberately broken thread-level kernels (examples/bugs/): the exact findings
// each one produces at thread level (in-order schedule, one CPU worker, seed 1), that its fixed
// variant is clean, and the `tessel run --level thread` report and exit status.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
#include "tests/cli_runner.h"

using namespace tessel;
using sim::FindingKind;

namespace {

ThreadRunOptions one_worker() {
  ThreadRunOptions o;
  o.workers = 1;
  return o;
}

struct BugRun {
  ThreadRunResult result;
  bool matches_reference = true;
  const std::vector<sim::Finding>& findings() const { return result.report.findings; }
  const sim::Site& site(const sim::Finding& f, size_t i) const {
    return result.report.sites.at(f.sites.at(i));
  }
};

BugRun run_bug(const std::string& name, std::map<std::string, std::string> defines = {}) {
  const Example* e = find_example(name);
  REQUIRE(e != nullptr);
  Params p = make_params(*e, defines);
  Kernel k = e->build(p);
  std::map<std::string, int64_t> dims;
  if (e->dynamic_dims) dims = e->dynamic_dims(p);
  TensorMap t = make_tensors(k, dims, e->outputs, 1), expected = t;
  e->reference(p, expected);
  BugRun run;
  run.result = run_thread_level(k, t, one_worker());
  for (const std::string& out : e->outputs) {
    run.matches_reference &=
        compare(t.at(out), expected.at(out), Tolerance::for_dtype(t.at(out).dtype())).passed;
  }
  return run;
}

}  // namespace

TEST_SUITE("bug corpus: exact findings") {
  TEST_CASE("bug_missing_barrier: uninitialised reads and races in both directions") {
    // Per block, in order: warp 0 stores s[0..31] and reads s[127..96] (unwritten: 32 uninit);
    // warp 1 likewise reads s[95..64] (32 uninit); warp 2's stores to s[64..95] hit what warp 1
    // read (32 write-after-read races, the first thread 64 writing s[64] that thread 63 read) and
    // its reads of s[63..32] see warp 1's stores (32 read-after-write, the first thread 64
    // reading s[63] from thread 63); warp 3 repeats both against warp 0. Two blocks: 128 each.
    BugRun r = run_bug("bug_missing_barrier");
    REQUIRE(r.findings().size() == 3);
    const sim::Finding& uninit = r.findings()[0];
    CHECK(uninit.kind == FindingKind::kUninit);
    CHECK(uninit.count == 128);
    CHECK(uninit.element == "[127]");
    CHECK(uninit.threads == std::vector<int>{0});
    const sim::Finding& war = r.findings()[1];
    CHECK(war.kind == FindingKind::kRace);
    CHECK(war.count == 128);
    CHECK(war.element == "[64]");
    CHECK(war.threads == std::vector<int>{63, 64});
    CHECK(r.site(war, 0).access == "load");
    CHECK(r.site(war, 1).access == "store");
    CHECK(r.site(war, 1).statement == "s[tx] = A[bx * 128 + tx]");
    const sim::Finding& raw = r.findings()[2];
    CHECK(raw.kind == FindingKind::kRace);
    CHECK(raw.count == 128);
    CHECK(raw.element == "[63]");
    CHECK(raw.threads == std::vector<int>{63, 64});
    CHECK(r.site(raw, 1).statement == "B[bx * 128 + tx] = s[127 - tx]");
    CHECK_FALSE(r.matches_reference);
  }

  TEST_CASE("bug_reduction_missing_barrier: races between the steps of the tree") {
    // Warp 0 runs all 7 steps before warp 1 starts. Steps with stride 16, 8, 4, 2, 1 read
    // s[tx + stride], which lanes of warp 0 wrote in the step before: 16 + 8 + 4 + 2 + 1 = 31
    // read-after-write races per block, the first thread 0 reading s[16] from thread 16. Then
    // warp 1's stride-64 step overwrites s[32..63], which warp 0 read at stride 32: 32
    // write-after-read races per block, the first thread 32 writing s[32] that thread 0 read.
    BugRun r = run_bug("bug_reduction_missing_barrier");
    REQUIRE(r.findings().size() == 2);
    const sim::Finding& raw = r.findings()[0];
    CHECK(raw.kind == FindingKind::kRace);
    CHECK(raw.count == 62);
    CHECK(raw.element == "[16]");
    CHECK(raw.threads == std::vector<int>{16, 0});
    const sim::Finding& war = r.findings()[1];
    CHECK(war.kind == FindingKind::kRace);
    CHECK(war.count == 64);
    CHECK(war.element == "[32]");
    CHECK(war.threads == std::vector<int>{0, 32});
    CHECK(r.site(war, 1).statement == "s[tx] = s[tx] + s[tx + (64 >> step)]");
    CHECK_FALSE(r.matches_reference);
  }

  TEST_CASE("bug_divergent_barrier: a half-warp at the barrier and two warps that never come") {
    // Warp 1 reaches the barrier with lanes 0-15 (tx < 48); warps 2 and 3 skip it and finish.
    // Running on, warps 2 and 3 also race with their own neighbours: thread t reads s[t + 1],
    // which lane t + 1 wrote (31 + 31 pairs, plus thread 127 reading s[0] from thread 0: 63),
    // thread 95 reads s[96] before warp 3 wrote it (uninit), and thread 96 then overwrites it
    // (write-after-read).
    BugRun r = run_bug("bug_divergent_barrier");
    REQUIRE(r.findings().size() == 5);
    CHECK(r.findings()[0].kind == FindingKind::kRace);
    CHECK(r.findings()[0].count == 63);
    CHECK(r.findings()[1].kind == FindingKind::kUninit);
    CHECK(r.findings()[1].element == "[96]");
    CHECK(r.findings()[2].kind == FindingKind::kRace);
    CHECK(r.findings()[2].threads == std::vector<int>{95, 96});
    const sim::Finding& half = r.findings()[3];
    CHECK(half.kind == FindingKind::kBarrierDivergence);
    CHECK(half.threads == std::vector<int>{48});
    CHECK(half.message.find("is reached by lanes 0-15 of warp 1 in block (0,), but lanes 16-31") !=
          std::string::npos);
    const sim::Finding& gone = r.findings()[4];
    CHECK(gone.kind == FindingKind::kBarrierDivergence);
    CHECK(gone.message.find("warps 2, 3 finished without reaching T.sync_threads() (at "
                            "bugs_barriers.cpp:") != std::string::npos);
    CHECK(gone.message.find("where warps 0, 1 wait") != std::string::npos);
  }

  TEST_CASE("bug_unmasked_tail: loads and the store past N = 1000 are out of bounds") {
    // The last block (7) has threads 104..127 at i = 1000..1023: 24 lanes, in A, B and C.
    BugRun r = run_bug("bug_unmasked_tail");
    REQUIRE(r.findings().size() == 3);
    const char* buffers[] = {"A", "B", "C"};
    for (int i = 0; i < 3; ++i) {
      const sim::Finding& f = r.findings()[i];
      CHECK(f.kind == FindingKind::kOob);
      CHECK(f.buffer == buffers[i]);
      CHECK(f.element == "[1000]");
      CHECK(f.count == 24);
      CHECK(f.threads == std::vector<int>{104});
      CHECK(f.blocks == std::vector<std::vector<int64_t>>{{7}});
    }
    CHECK(r.findings()[2].message.find("writes C[1000] by store of C") != std::string::npos);
    CHECK(r.findings()[2].message.find("outside C's global shape (1000,)") != std::string::npos);
    CHECK(r.matches_reference);  // the stray lanes were skipped, the 1000 elements are right
  }

  TEST_CASE("bug_cp_async_no_wait: every element is read before its copy lands") {
    // 2 blocks x 128 elements, each read once before any wait: 256 async races; the first is
    // thread 0 reading s[0], copied by thread 0.
    BugRun r = run_bug("bug_cp_async_no_wait");
    REQUIRE(r.findings().size() == 1);
    const sim::Finding& f = r.findings()[0];
    CHECK(f.kind == FindingKind::kAsyncRace);
    CHECK(f.count == 256);
    CHECK(f.element == "[0]");
    CHECK(f.threads == std::vector<int>{0, 0});
    CHECK(r.site(f, 0).access == "cp_async_16 dst");
    CHECK(r.site(f, 1).access == "load");
    CHECK_FALSE(r.matches_reference);
  }

  TEST_CASE("bug_global_race: the threads of a block race on one global element") {
    // Per block, after the barrier behind thread 0's `out[bx] = 0`: warp 0's 32 lanes load
    // out[bx] (readers 0 and 1 remembered), then store in lane order. Lane 0's store follows
    // thread 1's read (1 write-after-read race, threads 1 and 0); lane l = 1..31 writes l + 1
    // over lane l - 1's l (31 write conflicts). Warp 1's 32 loads see thread 31's store (32
    // read-after-write races, threads 31 and 32) and its 32 stores each overwrite the lane
    // before with a different value (32 write conflicts). Two blocks: 2, 126 and 64. The last
    // lane of each warp wins: out[bx] ends at 32 + 64 = 96, not 1 + ... + 64 = 2080.
    BugRun r = run_bug("bug_global_race");
    REQUIRE(r.findings().size() == 3);
    const sim::Finding& war = r.findings()[0];
    CHECK(war.kind == FindingKind::kRace);
    CHECK(war.buffer == "out");
    CHECK(war.element == "[0]");
    CHECK(war.count == 2);
    CHECK(war.threads == std::vector<int>{1, 0});
    CHECK(war.blocks == std::vector<std::vector<int64_t>>{{0}});
    CHECK(r.site(war, 0).access == "load");
    CHECK(r.site(war, 1).access == "store");
    CHECK(r.site(war, 1).statement == "out[bx] = out[bx] + T.cast(tx + 1, \"float32\")");
    const sim::Finding& conflict = r.findings()[1];
    CHECK(conflict.kind == FindingKind::kWriteConflict);
    CHECK(conflict.buffer == "out");
    CHECK(conflict.element == "[0]");
    CHECK(conflict.count == 126);
    CHECK(conflict.threads == std::vector<int>{0, 1});
    CHECK(conflict.message.find("T.atom_add") != std::string::npos);
    const sim::Finding& raw = r.findings()[2];
    CHECK(raw.kind == FindingKind::kRace);
    CHECK(raw.element == "[0]");
    CHECK(raw.count == 64);
    CHECK(raw.threads == std::vector<int>{31, 32});
    CHECK(r.site(raw, 0).access == "store");
    CHECK(r.site(raw, 1).access == "load");
    CHECK(r.result.report.has_errors());
    CHECK_FALSE(r.matches_reference);
  }

  TEST_CASE("the fixed variants are clean and correct") {
    for (const char* name : {"bug_missing_barrier", "bug_reduction_missing_barrier",
                             "bug_unmasked_tail", "bug_cp_async_no_wait", "bug_global_race"}) {
      INFO(name);
      BugRun r = run_bug(name, {{"fixed", "true"}});
      CHECK(r.findings().empty());
      CHECK(r.matches_reference);
    }
  }

  TEST_CASE("column reads conflict 32 ways; the padded tile does not") {
    // Per block: 32 row stores of 1 wavefront; 32 column reads of 32 (unpadded) or 1 (padded)
    // wavefronts. Two blocks: stores 64; reads 2048 (conflicts 2048 - 64 = 1984) or 64.
    BugRun bad = run_bug("row_sum_bank_conflicts");
    BugRun good = run_bug("row_sum_padded");
    CHECK(bad.findings().empty());
    CHECK(bad.matches_reference);
    CHECK(bad.result.report.total.wavefronts == 64 + 2048);
    CHECK(bad.result.report.total.ideal_wavefronts == 128);
    CHECK(bad.result.report.total.bank_conflicts == 1984);
    CHECK(good.result.report.total.wavefronts == 128);
    CHECK(good.result.report.total.bank_conflicts == 0);
    // Global: 64 coalesced row loads of 128 bytes (4 sectors each) and 2 stores of S (4 each).
    CHECK(good.result.report.total.global_requests == 66);
    CHECK(good.result.report.total.sectors == 264);
    CHECK(good.result.report.total.ideal_sectors == 264);
  }

  TEST_CASE("the positive examples are clean") {
    for (const char* name : {"warp_shuffle_reduce", "transpose_shared"}) {
      INFO(name);
      BugRun r = run_bug(name);
      CHECK(r.findings().empty());
      CHECK(r.matches_reference);
    }
  }

}  // TEST_SUITE

TEST_SUITE("bug corpus: tessel run --level thread") {
  TEST_CASE("a race makes the run fail with exit status 1 and the JSON keys of DESIGN.md") {
    CliResult r = run_tessel(
        {"run", "bug_missing_barrier", "--level", "thread", "--json", "--workers", "1"});
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == false);
    CHECK(j["level"] == "thread");
    const auto& sim = j["sim"];
    for (const char* key : {"requests", "wavefronts", "ideal_wavefronts", "bank_conflicts"}) {
      CHECK(sim["shared"].contains(key));
    }
    for (const char* key : {"requests", "sectors", "ideal_sectors"})
      CHECK(sim["global"].contains(key));
    // 2 blocks x 4 warps: one store and one load of s each: 16 requests of 1 wavefront.
    CHECK(sim["shared"]["requests"] == 16);
    CHECK(sim["shared"]["wavefronts"] == 16);
    REQUIRE(sim["findings"].size() == 3);
    const auto& race = sim["findings"][1];
    CHECK(race["kind"] == "race");
    CHECK(race["buffer"] == "s");
    CHECK(race["threads"] == nlohmann::json::array({63, 64}));
    CHECK(race["blocks"] == nlohmann::json::array({nlohmann::json::array({0})}));
    CHECK(race["sites"][1]["statement"] == "s[tx] = A[bx * 128 + tx]");
    CHECK(race["sites"][1]["loc"].get<std::string>().find("bugs_barriers.cpp:") == 0);
    CHECK(race["count"] == 128);
    CHECK(race.contains("message"));
    CHECK(sim["per_op"].size() == 4);
    CHECK(sim["per_op"][1]["shared"]["requests"] == 8);
    CHECK(j["tile"]["ran"] == true);
    CHECK(j["tile"]["matches"] == false);
  }

  TEST_CASE("a clean kernel passes with exit status 0 and prints the report") {
    CliResult r = run_tessel({"run", "row_sum_bank_conflicts", "--level", "thread"});
    CHECK(r.status == 0);
    CHECK(r.out.find("at thread level (target sm80, warp 32, schedule in-order)") !=
          std::string::npos);
    CHECK(r.out.find("tile level: same results") != std::string::npos);
    CHECK(r.out.find("findings: none") != std::string::npos);
    CHECK(r.out.find("PASSED") != std::string::npos);
    // The column-read row of the table: 64 requests, 2048 wavefronts, 64 ideal, 1984 conflicts.
    CHECK(r.out.find("      64       2048        64      1984") != std::string::npos);
  }

  TEST_CASE("bank conflicts alone do not fail a run") {
    CliResult r = run_tessel({"run", "gemm_mma", "--level", "thread", "-D", "M=64", "-D", "N=64",
                                "-D", "K=32", "-D", "swizzle=false", "--json"});
    CHECK(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["sim"]["shared"]["bank_conflicts"].get<int64_t>() > 0);
    CHECK(j["tile"]["ran"] == false);
  }

  TEST_CASE("out-of-bounds findings fail the run even when the results are right") {
    CliResult r = run_tessel({"run", "bug_unmasked_tail", "--level", "thread", "--json"});
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["outputs"][0]["passed"] == true);
    CHECK(j["sim"]["findings"][0]["kind"] == "oob");
    CHECK(j["tile"]["ran"] == false);
    CHECK(j["tile"]["note"].get<std::string>().find("failed: kernel 'bug_unmasked_tail'") == 0);
  }

  TEST_CASE("--schedule and --target are checked") {
    CHECK(run_tessel({"run", "transpose_shared", "--level", "thread", "--schedule", "sideways"})
              .status == 2);
    CHECK(
        run_tessel({"run", "transpose_shared", "--level", "thread", "--target", "sm12"}).status ==
        2);
    CliResult amd = run_tessel({"run", "transpose_shared", "--level", "thread", "--target",
                                  "gfx942", "--schedule", "random:3", "--json"});
    CHECK(amd.status == 0);
    auto j = nlohmann::json::parse(amd.out);
    CHECK(j["warp_size"] == 64);
    CHECK(j["schedule"] == "random:3");
  }

  TEST_CASE("a tile-level kernel at thread level is lowered for the target first") {
    CliResult r = run_tessel({"run", "softmax", "--level", "thread"});
    CHECK(r.status == 0);
    CHECK(r.out.find("tile level: same results") != std::string::npos);
    // Lowering needs a real target; the bank-model aliases are not enough.
    CliResult alias = run_tessel({"run", "softmax", "--level", "thread", "--target", "cuda"});
    CHECK(alias.status == 2);
    CHECK(alias.err.find("sm80, sm90, gfx90a, gfx942") != std::string::npos);
  }

}  // TEST_SUITE
