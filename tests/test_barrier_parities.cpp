// verify's mbarrier parity check (verify/barrier_parities.h): the stage rings of the automatic
// warp specialisation and of the hand-written warp-specialised GEMMs are proved; a consumer
// waiting one round early (stale pass), a producer waiting for its own round (deadlock) and a
// parity of neither round fail with the wait, the arrival and the fix; rings it does not
// recognise get no claim.
#include <doctest/doctest.h>

#include "core/intrinsics.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "core/target.h"
#include "examples/registry.h"
#include "verify/barrier_parities.h"

using namespace tessel;

namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

Kernel gemm_sm90(const LowerOptions& o = {}) {
  const Example* e = find_example("gemm");
  REQUIRE(e != nullptr);
  return lower_kernel(e->build(make_params(*e, {})), find_target("sm90"), o).kernel;
}

Kernel file_sm90(const char* name) {
  std::string path = std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/" + name;
  return lower_kernel(parse_kernel_file(path).kernel, find_target("sm90")).kernel;
}

/// `k` with the parity of every wait on the barrier buffer `barrier` replaced by `parity(k)`,
/// a function of the wait's loop variable.
Kernel with_parity(const Kernel& k, const std::string& barrier,
                   const std::function<Expr(const Expr&)>& parity) {
  class Rewrite : public StmtMutator {
   public:
    Rewrite(std::string b, std::function<Expr(const Expr&)> p)
        : barrier_(std::move(b)), parity_(std::move(p)) {}

   protected:
    Stmt visit_For(const ForNode* op, const Stmt& s) override {
      loop_.push_back(op->var);
      Stmt out = StmtMutator::visit_For(op, s);
      loop_.pop_back();
      return out;
    }
    Stmt visit_IntrinsicCall(const IntrinsicCallNode* op, const Stmt& s) override {
      if (op->intrinsic != IntrinsicId::kMbarrierWaitParity ||
          op->args[0].buffer->name != barrier_ || loop_.empty()) {
        return s;
      }
      std::vector<IntrinsicArg> args = op->args;
      args[1].value = parity_(Expr(loop_.back()));
      return IntrinsicCallNode::make(op->intrinsic, std::move(args), op->loc);
    }

   private:
    std::string barrier_;
    std::function<Expr(const Expr&)> parity_;
    std::vector<Var> loop_;
  };
  KernelNode node = *k;
  node.body = Rewrite(barrier, parity).mutate(k->body);
  return Kernel(std::make_shared<const KernelNode>(std::move(node)));
}

const KernelCheck* check_on(const std::vector<KernelCheck>& checks, const std::string& barrier) {
  for (const KernelCheck& c : checks) {
    if (c.what.starts_with("mbarrier parities on '" + barrier + "'")) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_SUITE("verify: mbarrier parities") {
  TEST_CASE("the automatic split's and the hand-written rings' parities are proved") {
    struct Case {
      const char* name;
      Kernel kernel;
      const char* full;
      const char* empty;
    };
    for (const Case& c :
         {Case{"gemm", gemm_sm90(), "ws_full", "ws_empty"},
          Case{"flash_attention.py", file_sm90("flash_attention.py"), "ws_full", "ws_empty"},
          Case{"ws_gemm.py", file_sm90("ws_gemm.py"), "full", "empty"},
          Case{"ws_gemm_tma.py", file_sm90("ws_gemm_tma.py"), "full", "empty"}}) {
      CAPTURE(c.name);
      std::vector<KernelCheck> checks = prove_barrier_parities(c.kernel, 10000);
      CHECK(checks.size() == 2);
      for (const char* b : {c.full, c.empty}) {
        const KernelCheck* k = check_on(checks, b);
        REQUIRE(k != nullptr);
        INFO(k->counterexample.value_or(""));
        CHECK(k->result == "proved");
      }
    }
  }

  TEST_CASE("consumers waiting one round early pass on a stale phase") {
    // ws_wrong_parity: the consumers wait ws_full for parity (k // 3 + 1) % 2, the phase of
    // iteration k - 3, although the producer's arrival of iteration k does not wait for them:
    // round 0 passes on the fresh barrier before anything landed (the simulator's uninitialised
    // reads and deadlock, tests/test_warp_specialize.cpp).
    LowerOptions o;
    o.ws_wrong_parity = true;
    std::vector<KernelCheck> checks = prove_barrier_parities(gemm_sm90(o), 10000);
    const KernelCheck* full = check_on(checks, "ws_full");
    REQUIRE(full != nullptr);
    CHECK(full->result == "failed");
    REQUIRE(full->counterexample);
    CHECK(contains(*full->counterexample, "the wait on 'ws_full[k % 3]'"));
    CHECK(contains(*full->counterexample, "3 iterations before"));
    CHECK(contains(*full->counterexample, "the arrive on 'ws_full[k % 3]'"));
    CHECK(contains(*full->counterexample, "wait for parity k // 3 % 2"));
  }

  TEST_CASE("a producer waiting for its own round's release deadlocks") {
    // ws_empty's arrivals of iteration k come from the consumers after they waited for ws_full
    // of iteration k, which the producer fills after this wait: parity k // 3 % 2 waits for them.
    Kernel bad = with_parity(gemm_sm90(), "ws_empty", [](const Expr& k) {
      return floormod(floordiv(k, make_int(3)), make_int(2));
    });
    std::vector<KernelCheck> checks = prove_barrier_parities(bad, 10000);
    const KernelCheck* empty = check_on(checks, "ws_empty");
    REQUIRE(empty != nullptr);
    CHECK(empty->result == "failed");
    REQUIRE(empty->counterexample);
    CHECK(contains(*empty->counterexample, "completes that phase only after this wait"));
    CHECK(contains(*empty->counterexample, "deadlock"));
    CHECK(contains(*empty->counterexample, "parity (k // 3 + 1) % 2"));
  }

  TEST_CASE("a parity of neither round is refused with the iteration where it is wrong") {
    // Parity 0 always: the phase of iteration k needs 1 at k = 3, the previous use's 1 at k = 0.
    Kernel bad = with_parity(gemm_sm90(), "ws_full", [](const Expr&) { return make_int(0); });
    std::vector<KernelCheck> checks = prove_barrier_parities(bad, 10000);
    const KernelCheck* full = check_on(checks, "ws_full");
    REQUIRE(full != nullptr);
    CHECK(full->result == "failed");
    REQUIRE(full->counterexample);
    CHECK(contains(*full->counterexample, "neither the phase of its iteration"));
  }

  TEST_CASE("the cp.async producer's lagged arrivals get no claim") {
    // ws_full is arrived on for iteration k - 2 inside the loop and in a drain loop after it:
    // not a ring of iteration k, so neither barrier of the loop is claimed.
    LowerOptions o;
    o.warp_specialize_tma = false;
    CHECK(prove_barrier_parities(gemm_sm90(o), 10000).empty());
  }
}
