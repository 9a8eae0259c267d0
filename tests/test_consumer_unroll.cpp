// The CUDA printer unrolls an sm90 consumer's main loop over the period of its stage and phase
// indices (codegen/loop_unroll.h): the period, the statement count, the chosen factor, and
// where the pragma is (and is not) printed.
#include <doctest/doctest.h>

#include "codegen/emit.h"
#include "codegen/loop_unroll.h"
#include "core/intrinsics.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "examples/registry.h"

using namespace tessel;

namespace {

std::string emit_gemm(const char* target, const std::string& stages) {
  const Example* e = find_example("gemm");
  REQUIRE(e != nullptr);
  const Target& t = find_target(target);
  Kernel k = e->build(
      make_params(*e, {{"M", "128"}, {"N", "128"}, {"K", "1024"}, {"num_stages", stages}}));
  return emit_source(lower_kernel(k, t).kernel, t).code;
}

/// The outermost serial loop of the lowered sm90 GEMM that holds a wgmma (the consumer's).
const ForNode* consumer_loop(const Kernel& k) {
  const ForNode* found = nullptr;
  for_each_stmt(k->body, [&](const Stmt& s) {
    const auto* f = s.as<ForNode>();
    if (found || !f || f->for_kind != ForKind::kSerial) return;
    for_each_stmt(f->body, [&](const Stmt& x) {
      const auto* c = x.as<IntrinsicCallNode>();
      if (c && intrinsic_info(c->intrinsic).family == IntrinsicFamily::kWgmma) found = f;
    });
  });
  return found;
}

}  // namespace

TEST_SUITE("codegen: consumer unroll") {
  TEST_CASE("the sm90 GEMM's consumer loop: period 2 x stages, 9 statements per iteration") {
    const Example* e = find_example("gemm");
    REQUIRE(e != nullptr);
    for (int stages : {2, 3}) {
      Kernel k = e->build(make_params(
          *e, {{"M", "128"}, {"N", "128"}, {"K", "1024"}, {"num_stages", std::to_string(stages)}}));
      Kernel lowered = lower_kernel(k, find_target("sm90")).kernel;
      const ForNode* f = consumer_loop(lowered);
      REQUIRE(f != nullptr);
      // Its body reads stage k % S and waits for phase (k / S) % 2: period 2 S.
      CHECK(codegen::index_period(f->body, f->var) == 2 * stages);
      // mbarrier wait, wgmma fence, 2 k16 steps x 2 warpgroup row blocks of 64 (128 rows, one
      // warpgroup) = 4 wgmma, commit, wait_group, the empty barrier's arrive: 9.
      CHECK(codegen::executed_statements(f->body) == 9);
      // The whole period fits the budget (2 S x 9 <= 640).
      CHECK(codegen::consumer_unroll(*f) == 2 * stages);
    }
  }

  TEST_CASE("the pragma is printed on the consumer's loop only, and never on sm80") {
    // K = 1024 in 32-deep steps: 32 iterations.
    for (auto [stages, want] : {std::pair{"2", "4"}, std::pair{"3", "6"}}) {
      std::string code = emit_gemm("sm90", stages);
      CHECK(code.find(std::string("    #pragma unroll ") + want +
                      "\n    for (int k = 0; k < 32; ++k) {") != std::string::npos);
      // One such pragma: the producer's loop holds no wgmma.
      CHECK(code.find("#pragma unroll ") == code.rfind("#pragma unroll "));
    }
    // No more copies than iterations: chunk_scan's consumer loop runs once (k < 1) though its
    // phase (k / 2) % 2 has period 4 (2 stages).
    const Example* cs = find_example("chunk_scan");
    REQUIRE(cs != nullptr);
    const Target& sm90 = find_target("sm90");
    std::string chunk =
        emit_source(lower_kernel(cs->build(make_params(*cs, {})), sm90).kernel, sm90).code;
    CHECK(chunk.find("for (int k = 0; k < 1; ++k) {") != std::string::npos);
    CHECK(chunk.find("#pragma unroll ") == std::string::npos);
    std::string sm80 = emit_gemm("sm80", "3");
    for (char d = '1'; d <= '9'; ++d)
      CHECK(sm80.find(std::string("#pragma unroll ") + d) == std::string::npos);
  }
}
