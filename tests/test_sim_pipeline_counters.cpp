// The simulator's pipeline counters: barrier rounds, cp.async bytes and the most cp.async bytes a
// block can have in flight, on a hand-written kernel and on the `gemm` example lowered with one
// and with three pipeline stages.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/builder.h"
#include "core/passes.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
#include "tools/cli.h"

using namespace tessel;

namespace {

/// Two blocks of 64 threads (two warps). Each thread copies 16 bytes (4 f32) per row of S with
/// cp.async, in three groups over two barrier intervals, and then stores its neighbour's rows:
///   interval 1: row 0 (group 0), row 1 (group 1), wait_group(1)  -> row 0 lands
///   barrier 1
///   interval 2: rows 2 and 3 (group 2), wait_group(0)            -> rows 1, 2, 3 land
///   barrier 2
///   interval 3: Out[bx, r, ...] = S[r, neighbour's 4 elements] for r = 0..3
Kernel three_group_kernel() {
  const DataType f32 = DataType::f32();
  KernelBuilder T("three_groups");
  auto A = T.tensor("A", {2, 4, 256}, f32);
  auto Out = T.tensor("Out", {2, 4, 256}, f32);
  Var bx = T.kernel1(2, 64);
  Var tx = T.get_thread_binding();
  auto S = T.alloc_shared("S", {4, 256}, f32);
  auto copy_row = [&](int r) { T.cp_async(S(r, tx * 4), A(bx, r, tx * 4), 16); };
  copy_row(0);
  T.cp_async_commit_group();
  copy_row(1);
  T.cp_async_commit_group();
  T.cp_async_wait_group(1);
  T.sync_threads();
  copy_row(2);
  copy_row(3);
  T.cp_async_commit_group();
  T.cp_async_wait_group(0);
  T.sync_threads();
  Expr next = (tx + 1) % 64 * 4;
  T.serial(
      4,
      [&](Var r) {
        T.serial(
            4, [&](Var j) { Out(bx, r, tx * 4 + j) = S(r, next + j); }, "j");
      },
      "r");
  return T.finish();
}

sim::SimReport run_three_groups(Schedule schedule) {
  Kernel k = three_group_kernel();
  TensorMap t = make_tensors(k, {}, {"Out"}, 5);
  ThreadRunOptions o;
  o.schedule = schedule;
  return run_thread_level(k, t, o).report;
}

/// The `gemm` example at M = N = 128, K = 256 with 128 x 128 x 32 tiles (one block, 128
/// threads), lowered for sm80 with `stages` pipeline stages and run at thread level.
sim::SimReport run_gemm(int stages) {
  const Example& e = *find_example("gemm");
  Params p = make_params(e, {{"M", "128"},
                             {"N", "128"},
                             {"K", "256"},
                             {"block_M", "128"},
                             {"block_N", "128"},
                             {"block_K", "32"},
                             {"threads", "128"},
                             {"num_stages", std::to_string(stages)}});
  Kernel k = e.build(p);
  TensorMap t = make_tensors(k, {}, e.outputs, 3);
  Kernel lowered = lower_kernel(k, find_target("sm80")).kernel;
  return run_thread_level(lowered, t).report;
}

}  // namespace

TEST_SUITE("simulation counters") {
  TEST_CASE("barrier rounds are counted per block and summed over blocks") {
    sim::SimReport r = run_three_groups(Schedule{});
    CHECK(r.findings.empty());
    // Two T.sync_threads() per block, reached once each; two blocks: 2 * 2 = 4 rounds.
    CHECK(r.blocks == 2);
    CHECK(r.barriers == 4);
  }

  TEST_CASE("cp.async bytes are the copied shared bytes summed over threads and blocks") {
    sim::SimReport r = run_three_groups(Schedule{});
    // 4 rows * 16 bytes per thread = 64; 64 threads * 64 = 4096 per block; 2 blocks = 8192.
    CHECK(r.async_bytes == 8192);
  }

  TEST_CASE("bytes in flight are the sum of every thread's peak within a barrier interval") {
    // Per thread: interval 1 issues rows 0 and 1 before its wait, peak 32 bytes; the wait lands
    // row 0, so interval 2 starts with 16 bytes and issues rows 2 and 3: peak 16 + 32 = 48 bytes.
    // 64 threads * 48 = 3072 bytes in one block (both blocks alike; the max over blocks is 3072).
    // Warps run one after another in the simulator: warp 0 alone would have reached only
    // 32 * 48 + 32 * 16 = 2048 before its wait, but on hardware both warps can be at their peak.
    for (Schedule s : {Schedule{}, *Schedule::parse("reverse"), *Schedule::parse("random:7")}) {
      CAPTURE(s.name());
      sim::SimReport r = run_three_groups(s);
      CHECK(r.findings.empty());
      CHECK(r.max_async_in_flight == 3072);
    }
  }

  TEST_CASE("the report shows the barrier and cp.async counts in one line") {
    sim::SimReport r = run_three_groups(Schedule{});
    CHECK(r.text().find("barriers: 4 rounds; cp.async: 8192 bytes, at most 3072 in flight in one "
                        "block\n") != std::string::npos);
  }

  TEST_CASE("gemm with one stage copies synchronously: no cp.async, two barriers per k-tile") {
    sim::SimReport r = run_gemm(1);
    CHECK(r.findings.empty());
    // K / block_K = 256 / 32 = 8 k-tiles; the loop body syncs before the copy into shared memory
    // and before the mma reads it: 8 * 2 = 16 rounds. With one stage the lowering emits plain
    // vector loads and stores, no cp.async.
    CHECK(r.barriers == 16);
    CHECK(r.async_bytes == 0);
    CHECK(r.max_async_in_flight == 0);
  }

  TEST_CASE("gemm with three stages keeps three k-tiles of A and B in flight at the peak") {
    sim::SimReport r = run_gemm(3);
    CHECK(r.findings.empty());
    // One k-tile: A 128 x 32 f16 = 8192 bytes and B 32 x 128 f16 = 8192 bytes, 16384 in all;
    // per thread 16384 / 128 = 128 bytes (eight 16-byte cp.async).
    // The pipeline (core/pipeline_inject.cpp) is peeled (8 k-tiles > 2): prologue iterations 0
    // and 1 issue tiles 0 and 1 (the second after a barrier: insert_barriers sees two writes of
    // A_shared), a barrier before the main loop, whose 6 iterations (k = 2..7) each sync, issue
    // tile k, commit, wait until at most 2 groups are pending, sync and multiply tile k - 2;
    // epilogue iterations 8 and 9 each commit an empty group, wait, sync and multiply tiles 6
    // and 7. Barriers: 1 + 1 + 6 * 2 + 2 = 16 rounds.
    CHECK(r.barriers == 16);
    // All 8 tiles are copied once: 8 * 16384 = 131072 bytes.
    CHECK(r.async_bytes == 131072);
    // In flight per thread: the wait of iteration k leaves tiles k - 1 and k pending (2 groups);
    // iteration k + 1 issues tile k + 1 before its wait lands tile k - 1, so between the first
    // barrier and that wait a thread has 3 groups = 3 * 128 = 384 bytes in flight (from k = 2 on).
    // All 128 threads: 3 * 16384 = 49152. Of these, the 2 tiles (32768 bytes) still pending after
    // the wait are the ones that overlap the mma work of the next interval.
    CHECK(r.max_async_in_flight == 49152);
  }

  TEST_CASE("tessel run --json reports the barrier rounds and the cp.async bytes of gemm") {
    std::vector<const char*> args = {"tessel", "run",   "gemm",         "--level", "thread",
                                     "-D",     "M=128", "-D",           "N=128",   "-D",
                                     "K=256",  "-D",    "num_stages=3", "--json"};
    std::ostringstream out, err;
    int status = cli::run_cli(static_cast<int>(args.size()), args.data(), out, err);
    REQUIRE(status == 0);
    auto j = nlohmann::json::parse(out.str());
    // The same launch as above (the defaults are 128 x 128 x 32 tiles and 128 threads): 16 rounds,
    // 131072 bytes, 49152 in flight.
    CHECK(j["sim"]["barriers"] == 16);
    CHECK(j["sim"]["async"]["bytes"] == 131072);
    CHECK(j["sim"]["async"]["max_in_flight"] == 49152);
  }

}  // TEST_SUITE
