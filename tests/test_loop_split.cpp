// split_loops: FlashAttention's causal and sequence-end masks folded where the analyzer proves
// them constant (below and above the diagonal, full tiles), kept on the diagonal and the last
// partial tile; the split kernel equal to the unsplit one, the tile level and the reference;
// conditions that are not affine in the loop variable left alone.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "core/builder.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;

namespace {

std::vector<const ForNode*> loops_over(const Stmt& body, const std::string& name) {
  std::vector<const ForNode*> out;
  for_each_stmt(body, [&](const Stmt& s) {
    if (const auto* f = s.as<ForNode>(); f && f->var.name() == name) out.push_back(f);
  });
  return out;
}

int count_selects(const Stmt& body) {
  int n = 0;
  for_each_expr(body, [&](const Expr& e) {
    pre_order_visit(e, [&](const Expr& x) { n += x.as<SelectNode>() != nullptr; });
  });
  return n;
}

Kernel flash_attention(const std::string& seq_len, const std::string& causal) {
  const Example* fa = find_example("flash_attention");
  return fa->build(make_params(*fa, {{"seq_len", seq_len}, {"is_causal", causal}}));
}

std::string print_expr(const Expr& e) { return to_string(e); }

}  // namespace

TEST_SUITE("loop_split") {
  TEST_CASE("the causal mask is folded below and above the diagonal and kept on it") {
    // flash_attention's defaults: seq_len 256, 64x64 tiles, 2 stages. The peeled main loop runs
    // k = 1..3 and computes tile t = k - 1. Tile t is below the diagonal of block bx when its
    // last column is at most the block's first row: 64t + 63 <= 64bx, i.e. k <= bx; above it
    // when its first column is past the block's last row: 64t > 64bx + 63, i.e. k >= bx + 2.
    Kernel lowered = lower_kernel(flash_attention("256", "1"), find_target("sm80")).kernel;
    std::vector<const ForNode*> loops = loops_over(lowered->body, "k");
    REQUIRE(loops.size() == 3);
    CHECK(print_expr(loops[0]->min) == "1");
    CHECK(print_expr(loops[0]->extent) == "bx");
    CHECK(print_expr(loops[1]->min) == "bx + 1");
    // The suffix [bx + 2, 4) clamped to the loop's end (empty for bx >= 2).
    CHECK(print_expr(loops[2]->extent) == "4 - T.min(4, bx + 2)");
    // Below: no select at all; on the diagonal: the mask; above: the mask's true branch.
    CHECK(count_selects(loops[0]->body) == 0);
    CHECK(count_selects(loops[1]->body) > 0);
    CHECK(count_selects(loops[2]->body) == 0);
  }

  TEST_CASE("without the option the loop stays whole") {
    LowerOptions off;
    off.split_loops = false;
    Kernel lowered = lower_kernel(flash_attention("256", "1"), find_target("sm80"), off).kernel;
    CHECK(loops_over(lowered->body, "k").size() == 1);
  }

  TEST_CASE("a sequence end inside a tile keeps its mask in the last tile only") {
    // seq_len 200 = 3 full tiles of 64 and 8 rows; not causal. Iteration k copies K/V tile k
    // (rows 64k .. 64k + 63 valid when 64k + 63 < 200: k <= 2) and computes tile k - 1 (masked
    // columns when 64(k - 1) + 63 >= 200: k >= 4, past the loop). So k = 1, 2 need no guard
    // and k = 3 keeps the copies' zero-fill: loops [1, 3) and [3, 4).
    Kernel lowered = lower_kernel(flash_attention("200", "0"), find_target("sm80")).kernel;
    std::vector<const ForNode*> loops = loops_over(lowered->body, "k");
    REQUIRE(loops.size() == 2);
    CHECK(print_expr(loops[0]->extent) == "2");
    CHECK(count_selects(loops[0]->body) == 0);
    CHECK(count_selects(loops[1]->body) > 0);
  }

  TEST_CASE("split kernels compute exactly what the unsplit ones compute, at thread level") {
    // Same inputs, lowered with and without the split: every output element bit for bit (the
    // folded selects pick the same branch), and both equal the tile level.
    for (const char* seq : {"256", "200"}) {
      for (const char* causal : {"0", "1"}) {
        CAPTURE(seq);
        CAPTURE(causal);
        Kernel k = flash_attention(seq, causal);
        TensorMap tile = make_tensors(k, {}, {"O"}, 11), split = tile, whole = tile;
        run_tile_level(k, tile);
        LowerOptions off;
        off.split_loops = false;
        ThreadRunResult a = run_thread_level(lower_kernel(k, find_target("sm80")).kernel, split);
        ThreadRunResult b =
            run_thread_level(lower_kernel(k, find_target("sm80"), off).kernel, whole);
        CHECK(a.report.findings.empty());
        CHECK(b.report.findings.empty());
        CHECK(compare(split.at("O"), whole.at("O"), Tolerance{0.0, 0.0}).passed);
        CHECK(compare(split.at("O"), tile.at("O"), Tolerance::for_dtype(DataType::f16())).passed);
      }
    }
  }

  TEST_CASE("the split FlashAttention passes its reference and verify, causal or not") {
    for (const char* seq : {"seq_len=256", "seq_len=200"}) {
      for (const char* causal : {"is_causal=0", "is_causal=1"}) {
        CAPTURE(seq);
        CAPTURE(causal);
        CliResult run = run_tessel(
            {"run", "flash_attention", "-D", seq, "-D", causal, "--level", "thread", "--json"});
        REQUIRE(run.status == 0);
        auto j = nlohmann::json::parse(run.out);
        CHECK(j["passed"] == true);
        CHECK(j["tile"]["matches"] == true);
        CHECK(j["sim"]["findings"].empty());
      }
    }
    CliResult verify = run_tessel({"verify", "flash_attention", "-D", "is_causal=1", "--json"});
    auto j = nlohmann::json::parse(verify.out);
    INFO(j.dump(1));
    CHECK(verify.status == 0);
    CHECK(j["failed"] == 0);
  }

  TEST_CASE("split parts with symbolic bounds do not inherit another loop's range of k") {
    // sm90 warp-specialises the pipeline: the producer's and the consumers' loops share the
    // variable k. With seq_len 200 the producer's loop splits at its last tile (k in [3, 4)) and
    // the consumers' at the diagonal (k in [0, bx), ...). simplify_indices once kept the
    // producer part's k = 3 for the consumers' symbolic parts and rewrote k % 2 as k - 2: the
    // simulator stopped at a wgmma descriptor 16384 bytes before its buffer. Every loop now
    // rebinds its variable.
    for (const char* causal : {"is_causal=0", "is_causal=1"}) {
      CAPTURE(causal);
      CliResult run = run_tessel({"run", "flash_attention", "-D", "seq_len=200", "-D", "heads=1",
                                  "-D", causal, "--target", "sm90", "--level", "thread", "--json"});
      INFO(run.out.substr(0, 300));
      REQUIRE(run.status == 0);
      auto j = nlohmann::json::parse(run.out);
      CHECK(j["passed"] == true);
      CHECK(j["tile"]["matches"] == true);
      CHECK(j["sim"]["findings"].empty());
    }
  }

  TEST_CASE("a condition that is not affine in the loop variable is not split") {
    // for k in serial(8): out[k, i] = 1 if C(k) else 0 over 64 elements (2 per thread, so the
    // lowered body has a loop of its own). k * 8 + i < 20 is affine: no prefix where it is true
    // for every i < 64 (8k + 63 >= 20 already at k = 0), false for every i once 8k >= 20, so the
    // suffix k in [3, 8) folds: two loops. k * k < 10 is not affine in k and stays in one loop.
    for (bool affine : {true, false}) {
      CAPTURE(affine);
      KernelBuilder T("mask");
      auto out = T.tensor("out", {8, 64}, DataType::f32());
      T.kernel1(1, 32);
      T.serial(
          8,
          [&](Var k) {
            T.parallel(64, [&](Var i) {
              Expr cond = affine ? k * 8 + i < 20 : k * k < 10;
              out(k, i) = if_then_else(cond, Expr(1.0f), Expr(0.0f));
            });
          },
          "k");
      Kernel kernel = T.finish();
      Kernel lowered = lower_kernel(kernel, find_target("sm80")).kernel;
      std::vector<const ForNode*> loops = loops_over(lowered->body, "k");
      CHECK(loops.size() == (affine ? 2u : 1u));
      TensorMap tile = make_tensors(kernel, {}, {"out"}, 1), thread = tile;
      run_tile_level(kernel, tile);
      run_thread_level(lowered, thread);
      CHECK(compare(thread.at("out"), tile.at("out"), Tolerance{0.0, 0.0}).passed);
    }
  }
}
