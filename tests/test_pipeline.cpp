// Software pipelining of T.Pipelined loops: schedules, multi-buffering, cp.async groups and
// waits, symbolic and short trip counts, the simulator catching a missing wait, and the errors
// of impossible manual schedules.
#include <doctest/doctest.h>

#include <functional>

#include "core/builder.h"
#include "core/expr_functor.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;

namespace {

/// C = A @ B with K symbolic when `dynamic_k`, pipelined with `stages`.
Kernel pipelined_gemm(int64_t M, int64_t N, int64_t K, int stages, bool dynamic_k,
                      PipelineInfo manual = {}) {
  KernelBuilder T("pgemm");
  Expr k_extent = dynamic_k ? Expr(T.dynamic("K")) : Expr(K);
  auto A = T.tensor("A", {M, k_extent}, DataType::f16());
  auto B = T.tensor("B", {k_extent, N}, DataType::f16());
  auto C = T.tensor("C", {M, N}, DataType::f32());
  auto [bx, by] = T.kernel2(ceildiv(N, 64), ceildiv(M, 64), 128);
  auto As = T.alloc_shared("A_shared", {64, 32}, DataType::f16());
  auto Bs = T.alloc_shared("B_shared", {32, 64}, DataType::f16());
  auto Cl = T.alloc_fragment("C_local", {64, 64}, DataType::f32());
  T.clear(Cl);
  T.pipelined(
      ceildiv(k_extent, 32), stages,
      [&](Var k) {
        T.copy(A(by * 64, k * 32), As);
        T.copy(B(k * 32, bx * 64), Bs);
        T.gemm(As, Bs, Cl);
      },
      manual);
  T.copy(Cl, C(by * 64, bx * 64));
  return T.finish();
}

struct Run {
  sim::SimReport report;
  bool equal = true;
};

Run run_both(const Kernel& kernel, const std::map<std::string, int64_t>& dims,
             LowerOptions options = {}) {
  TensorMap tile = make_tensors(kernel, dims, {"C"}, 3), thread = tile;
  run_tile_level(kernel, tile);
  Kernel lowered = lower_kernel(kernel, find_target("sm80"), options).kernel;
  Run r{run_thread_level(lowered, thread).report, true};
  r.equal = compare(thread.at("C"), tile.at("C"), Tolerance::for_dtype(DataType::f32())).passed;
  return r;
}

int count(const Stmt& s, IntrinsicFamily family) {
  int n = 0;
  for_each_stmt(s, [&](const Stmt& x) {
    if (const auto* c = x.as<IntrinsicCallNode>())
      n += intrinsic_info(c->intrinsic).family == family;
  });
  return n;
}

/// The loops over a variable named `name`.
std::vector<const ForNode*> loops_over(const Stmt& body, const std::string& name) {
  std::vector<const ForNode*> out;
  for_each_stmt(body, [&](const Stmt& s) {
    if (const auto* f = s.as<ForNode>(); f && f->var.name() == name) out.push_back(f);
  });
  return out;
}

int count_ifs(const Stmt& body) {
  int n = 0;
  for_each_stmt(body, [&](const Stmt& s) { n += s.as<IfNode>() != nullptr; });
  return n;
}

/// Select nodes in every expression of `body` (T.if_then_else, zero-fill sizes).
int count_selects(const Stmt& body) {
  int n = 0;
  for_each_expr(body, [&](const Expr& e) {
    pre_order_visit(e, [&](const Expr& x) { n += x.kind() == ExprKind::kSelect; });
  });
  return n;
}

/// The user error of building the kernel `build` makes and lowering it ("" when none).
std::string error_of(const std::function<Kernel()>& build) {
  try {
    lower_kernel(build(), find_target("sm80"));
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("pipelining") {
  TEST_CASE("gemm with 0 to 4 stages and K not a multiple of the tile equals the tile level") {
    for (int stages = 0; stages <= 4; ++stages) {
      CAPTURE(stages);
      // K = 72: three k-tiles of 32, the last one half past the edge (zero-filled by cp.async).
      Run r = run_both(pipelined_gemm(64, 64, 72, stages, false), {});
      CHECK(r.equal);
      CHECK(r.report.findings.empty());
    }
  }

  TEST_CASE("a symbolic K and a trip count below the stage count need nothing special") {
    for (int64_t K : {32, 96, 160}) {  // 1, 3 and 5 k-tiles with 4 stages
      CAPTURE(K);
      Run r = run_both(pipelined_gemm(64, 64, K, 4, true), {{"K", K}});
      CHECK(r.equal);
      CHECK(r.report.findings.empty());
    }
  }

  TEST_CASE("three stages give three versions of each tile and waits of depth two") {
    Kernel lowered =
        lower_kernel(pipelined_gemm(64, 64, 128, 3, false), find_target("sm80")).kernel;
    std::vector<int64_t> wait_depths;
    int64_t shared_elements = 0;
    for_each_stmt(lowered->body, [&](const Stmt& s) {
      if (const auto* c = s.as<IntrinsicCallNode>();
          c && intrinsic_info(c->intrinsic).family == IntrinsicFamily::kWaitGroup) {
        wait_depths.push_back(*as_const_int(c->args[0].value));
      }
      if (const auto* a = s.as<AllocNode>(); a && a->buffer->scope == Scope::kShared) {
        shared_elements += *a->buffer->const_size();
      }
    });
    // Stage 2 reads iteration k - 2's tiles; groups 0..k exist, so at most 2 may stay pending.
    // 128 / 32 = 4 k-tiles >= S = 2, so the pipeline is peeled: prologue iterations 0 and 1 only
    // copy (no reader, no wait), the main loop waits once, epilogue iterations 4 and 5 each wait
    // before their gemm.
    CHECK(wait_depths == std::vector<int64_t>{2, 2, 2});
    // 3 versions x (64 x 32 + 32 x 64) f16 elements.
    CHECK(shared_elements == 3 * (64 * 32 + 32 * 64));
    // One commit per iteration of the schedule (2 prologue + main loop + 2 epilogue; the
    // epilogue's are empty groups that keep the wait depths those of the single loop).
    CHECK(count(lowered->body, IntrinsicFamily::kCommitGroup) == 5);
    // A and B copies in each prologue iteration and in the main loop.
    CHECK(count(lowered->body, IntrinsicFamily::kCpAsync) == 6);
  }

  TEST_CASE("a trip count known to be at least the stages is peeled: an unguarded main loop") {
    Kernel lowered =
        lower_kernel(pipelined_gemm(64, 64, 128, 3, false), find_target("sm80")).kernel;
    std::vector<const ForNode*> loops = loops_over(lowered->body, "k");
    REQUIRE(loops.size() == 1);
    // 4 k-tiles, S = 2: the main loop runs source iterations 2 and 3 of stage 0 (k in [2, 4)).
    CHECK(as_const_int(loops[0]->min) == 2);
    CHECK(as_const_int(loops[0]->extent) == 2);
    CHECK(count_ifs(loops[0]->body) == 0);
    // K = 128 divides into 32-row tiles: no zero-fill size or mask is left anywhere.
    CHECK(count_selects(loops[0]->body) == 0);
  }

  TEST_CASE("every cp.async wait is followed by a barrier before the next ldmatrix") {
    // The epilogue's tiles were issued in the main loop, before its last barrier, and land only at
    // the epilogue's own wait: the other threads' copies are visible after a barrier that follows
    // the wait (insert_barriers counts cp.async writes from the wait on). Without it the simulator
    // reports races and async races on the tiles (found by the fuzzer).
    Kernel lowered =
        lower_kernel(pipelined_gemm(64, 64, 128, 3, false), find_target("sm80")).kernel;
    int waits = 0, unsynced_reads = 0;
    bool after_wait = false;
    for_each_stmt(lowered->body, [&](const Stmt& s) {
      if (s.as<BarrierNode>()) after_wait = false;
      const auto* c = s.as<IntrinsicCallNode>();
      if (!c) return;
      IntrinsicFamily f = intrinsic_info(c->intrinsic).family;
      if (f == IntrinsicFamily::kWaitGroup) ++waits, after_wait = true;
      if (f == IntrinsicFamily::kLdmatrix && after_wait) ++unsynced_reads;
    });
    CHECK(waits == 3);  // the main loop's and the two epilogue iterations'
    CHECK(unsynced_reads == 0);
  }

  TEST_CASE("a symbolic trip count keeps the single guarded loop") {
    Kernel lowered = lower_kernel(pipelined_gemm(64, 64, 0, 4, true), find_target("sm80")).kernel;
    std::vector<const ForNode*> loops = loops_over(lowered->body, "k");
    REQUIRE(loops.size() == 1);
    // ceildiv(K, 32) may be below S = 3: one loop from 0 over n + 3 iterations, each stage guarded.
    CHECK(as_const_int(loops[0]->min) == 0);
    CHECK(!as_const_int(loops[0]->extent));
    CHECK(count_ifs(loops[0]->body) >= 2);
  }

  TEST_CASE("peeled and guarded pipelines both equal the tile level") {
    // K = 32 (1 k-tile, not above S: never peeled; with 2 stages the main loop would be empty),
    // 72 (3 k-tiles, the last half past the edge; peeled for 2 and 3 stages), 160 (5 k-tiles).
    for (int stages = 2; stages <= 4; ++stages) {
      for (int64_t K : {32, 72, 160}) {
        for (bool peel : {true, false}) {
          CAPTURE(stages);
          CAPTURE(K);
          CAPTURE(peel);
          LowerOptions options;
          options.peel_pipelines = peel;
          Run r = run_both(pipelined_gemm(64, 64, K, stages, false), {}, options);
          CHECK(r.equal);
          CHECK(r.report.findings.empty());
        }
      }
    }
  }

  TEST_CASE("the attention mask the analyzer decides is gone from the main loop") {
    const Example* fa = find_example("flash_attention");
    // seq_len 256 = 4 tiles of 64, not causal: `k * 64 + j >= 256` is false for every k < 4 and
    // j < 64, so the T.if_then_else folds to its else branch. With causal = 1 the main loop is
    // split (split_loops, tests/test_loop_split.cpp): the mask stays only in the middle part,
    // the diagonal tile.
    for (const char* causal : {"0", "1"}) {
      CAPTURE(causal);
      Kernel k = fa->build(make_params(*fa, {{"is_causal", causal}}));
      Kernel lowered = lower_kernel(k, find_target("sm80")).kernel;
      std::vector<const ForNode*> loops = loops_over(lowered->body, "k");
      REQUIRE(loops.size() == (std::string(causal) == "0" ? 1u : 3u));
      for (const ForNode* loop : loops) CHECK(count_ifs(loop->body) == 0);
      if (std::string(causal) == "0") {
        CHECK(count_selects(loops[0]->body) == 0);
      } else {
        CHECK(count_selects(loops[0]->body) == 0);
        CHECK(count_selects(loops[1]->body) > 0);
        CHECK(count_selects(loops[2]->body) == 0);
      }
    }
  }

  TEST_CASE("without its wait the pipeline's reads are caught as async races") {
    LowerOptions options;
    options.drop_pipeline_wait = true;
    Run r = run_both(pipelined_gemm(64, 64, 128, 3, false), {}, options);
    bool async_race = false;
    for (const sim::Finding& f : r.report.findings)
      async_race |= f.kind == sim::FindingKind::kAsyncRace;
    CHECK(async_race);
  }

  TEST_CASE("targets without cp.async pipeline with plain copies") {
    Kernel k = pipelined_gemm(64, 64, 96, 3, false);
    Kernel lowered = lower_kernel(k, find_target("gfx942")).kernel;
    CHECK(count(lowered->body, IntrinsicFamily::kCpAsync) == 0);
    TensorMap tile = make_tensors(k, {}, {"C"}, 5), thread = tile;
    run_tile_level(k, tile);
    ThreadRunOptions o;
    o.target = "gfx942";
    ThreadRunResult r = run_thread_level(lowered, thread, o);
    CHECK(compare(thread.at("C"), tile.at("C"), Tolerance::for_dtype(DataType::f32())).passed);
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("a manual schedule that runs the gemm before its copy is an error naming both") {
    // stage=[0, 0, 0] with order=[1, 2, 0]: the gemm first, reading A_shared before the copy.
    PipelineInfo manual;
    manual.order = {1, 2, 0};
    manual.stage = {0, 0, 0};
    std::string msg = error_of([&] { return pipelined_gemm(64, 64, 64, 2, false, manual); });
    CHECK(msg.find("order=[1, 2, 0] puts T.gemm") != std::string::npos);
    CHECK(msg.find("before T.copy") != std::string::npos);
    CHECK(msg.find("'A_shared'") != std::string::npos);
  }

  TEST_CASE("a consumer in an earlier stage than its producer is an error with the fix") {
    PipelineInfo manual;
    manual.order = {0, 1, 2};
    manual.stage = {1, 1, 0};
    std::string msg = error_of([&] { return pipelined_gemm(64, 64, 64, 2, false, manual); });
    CHECK(msg.find("T.gemm") != std::string::npos);
    CHECK(msg.find("reads 'A_shared'") != std::string::npos);
    CHECK(msg.find("give it stage >= 1") != std::string::npos);
  }

  TEST_CASE("malformed stage and order lists are errors") {
    PipelineInfo short_list;
    short_list.stage = {0, 1};
    short_list.order = {0, 1};
    CHECK(error_of([&] {
            return pipelined_gemm(64, 64, 64, 2, false, short_list);
          }).find("need one entry per statement of the loop body, which has 3") !=
          std::string::npos);
    PipelineInfo repeated;
    repeated.stage = {0, 0, 1};
    repeated.order = {0, 0, 1};
    CHECK(error_of([&] {
            return pipelined_gemm(64, 64, 64, 2, false, repeated);
          }).find("must be a permutation of 0..2") != std::string::npos);
    PipelineInfo too_late;
    too_late.stage = {0, 0, 5};
    too_late.order = {0, 1, 2};
    CHECK(error_of([&] {
            return pipelined_gemm(64, 64, 64, 2, false, too_late);
          }).find("stages run from 0 to num_stages - 1 = 1") != std::string::npos);
  }

  TEST_CASE("a schedule the lowering refuses is refused when the loop is built, for both levels") {
    // The gemm in stage 0 reads A_shared, which the copy writes in stage 1: the tile level used to
    // run this kernel while the thread level refused it.
    PipelineInfo manual;
    manual.order = {0, 1, 2};
    manual.stage = {1, 1, 0};
    std::string msg;
    try {
      pipelined_gemm(64, 64, 64, 2, false, manual);
    } catch (const UserError& e) {
      msg = e.what();
    }
    CHECK(msg.find("T.Pipelined loop over 'k'") != std::string::npos);
    CHECK(msg.find("reads 'A_shared'") != std::string::npos);
    CHECK(msg.find("give it stage >= 1") != std::string::npos);
  }

}  // TEST_SUITE
