// sink_consumer_code: the consumer-only clear and epilogue around a warp-specialised split move
// into the consumer branch (nvcc no longer keeps the accumulators live through the producer's
// 40-register path), and the kernel still equals the tile level.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "core/intrinsics.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "examples/registry.h"
#include "examples/run_example.h"

using namespace tessel;

namespace {

/// The warp-specialised `if` of a lowered kernel (both branches open with set_max_nreg).
const IfNode* ws_split(const Stmt& body, std::vector<Stmt>* siblings) {
  const IfNode* found = nullptr;
  for_each_stmt(body, [&](const Stmt& s) {
    const auto* seq = s.as<SeqNode>();
    if (!seq || found) return;
    for (const Stmt& x : seq->stmts) {
      const auto* i = x.as<IfNode>();
      if (!i || !i->else_case.defined()) continue;
      const auto* first = i->then_case.as<SeqNode>();
      const auto* call =
          first && !first->stmts.empty() ? first->stmts[0].as<IntrinsicCallNode>() : nullptr;
      if (call && call->intrinsic == IntrinsicId::kSetMaxNreg) {
        found = i;
        *siblings = seq->stmts;
      }
    }
  });
  return found;
}

bool stores_to(const Stmt& s, const std::string& buffer) {
  bool found = false;
  for_each_stmt(s, [&](const Stmt& x) {
    if (const auto* st = x.as<StoreNode>()) found = found || st->buffer->name == buffer;
  });
  return found;
}

}  // namespace

TEST_SUITE("warp specialisation: consumer code") {
  TEST_CASE("the accumulator's clear and the epilogue run inside the consumer branch") {
    // gemm on sm90: 128 producer threads (tx >= 128) and 128 consumers. C_local is cleared and
    // stored to C only by the consumers (`if tx < 128:` before lowering's split); both now sit
    // in the else branch, and no statement guarded by tx < 128 is left beside the split.
    const Example* gemm = find_example("gemm");
    Kernel k = gemm->build(make_params(*gemm, {}));
    Kernel lowered = lower_kernel(k, find_target("sm90")).kernel;
    std::vector<Stmt> siblings;
    const IfNode* ws = ws_split(lowered->body, &siblings);
    REQUIRE(ws != nullptr);
    CHECK(stores_to(ws->else_case, "C"));
    CHECK(stores_to(ws->else_case, "C_local"));
    CHECK_FALSE(stores_to(ws->then_case, "C"));
    for (const Stmt& x : siblings) {
      if (x.get() == static_cast<const StmtNode*>(ws)) continue;
      CHECK_FALSE(stores_to(x, "C"));
      CHECK_FALSE(stores_to(x, "C_local"));
    }
  }

  TEST_CASE("the moved code computes what the tile level computes") {
    CliResult r = run_tessel({"run", "gemm", "-D", "M=128", "-D", "N=128", "-D", "K=96", "--target",
                              "sm90", "--level", "thread", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["tile"]["matches"] == true);
    CHECK(j["sim"]["findings"].empty());
  }
}
