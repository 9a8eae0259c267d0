// `tessel verify` on the lowered kernel itself: completeness (nothing of the tile level left) and
// ownership/definition of registers (every read of a register its own thread wrote before, every
// replica of a replicated fragment written); and every example, lowered for sm80 and gfx942,
// passes these checks and the alignment proofs (no false alarm). The miscompiles are written out as
// thread-level code, so the tests hold whatever today's lowering does.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/builder.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "examples/registry.h"
#include "tests/cli_runner.h"
#include "tools/kernel_source.h"
#include "verify/alignment_proofs.h"
#include "verify/completeness.h"
#include "verify/definition_proofs.h"
#include "verify/kernel_proofs.h"

using namespace tessel;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// The number after `word` in `text` ("thread 37" -> 37); -1 when absent.
int64_t number_after(const std::string& text, const std::string& word) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(word + " (-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

/// The check whose claim starts with `subject`; fails the test when there is not exactly one.
KernelCheck the_check(const std::vector<KernelCheck>& checks, const std::string& subject) {
  std::vector<KernelCheck> found;
  for (const KernelCheck& c : checks) {
    if (c.what.starts_with(subject)) found.push_back(c);
  }
  REQUIRE_MESSAGE(found.size() == 1, subject);
  return found[0];
}

std::string test_kernel(const std::string& name) {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/" + name;
}

/// Row statistics of a 32 x 128 tile over 128 threads as the lowering lays them out (the softmax
/// example's `row_max`): element i of the 32 rows lives in threads i % 4 * 32 + rep (rep < 32),
/// register i // 4. Thread t therefore holds rows r * 4 + t // 32 in its registers r = 0..7.
Fragment row_fragment() {
  return Fragment::from_fn(
      {32},
      [](const std::vector<Var>& i, const Var& rep) -> std::pair<Expr, Expr> {
        return {i[0] % 4 * 32 + rep, floordiv(i[0], 4)};
      },
      32);
}

/// LayerNorm's row means as the lowering wrote them: `mean_row[r] = row_sum[r] / 128` kept to
/// `if tx == 0` (with `fixed`: only the store of Mean kept to the first thread of each row).
/// `read_line` receives the line of the loop around the normalising read.
Kernel layernorm_rows(bool fixed, int* read_line) {
  KernelBuilder T("layernorm_rows");
  auto X = T.tensor("X", {64, 128}, DataType::f32());
  auto Mean = T.tensor("Mean", {64}, DataType::f32());
  auto Y = T.tensor("Y", {64, 128}, DataType::f32());
  Var bx = T.kernel1(2, 128);
  Var tx = T.get_thread_binding();
  auto row_sum = T.alloc_local("row_sum", {8}, DataType::f32());
  auto mean_row = T.alloc_local("mean_row", {8}, DataType::f32());
  T.serial(
      8, [&](Var r) { row_sum(r) = X(bx * 32 + r * 4 + floordiv(tx, 32), tx % 32); }, "r");
  auto means = [&](Var r) {
    mean_row(r) = row_sum(r) / make_const(DataType::f32(), 128.0);
    if (fixed) {
      T.if_then(tx % 32 == 0, [&] { Mean(bx * 32 + r * 4 + floordiv(tx, 32)) = mean_row(r); });
    } else {
      Mean(bx * 32 + r * 4 + floordiv(tx, 32)) = mean_row(r);
    }
  };
  if (fixed) {
    T.serial(8, means, "r");
  } else {
    T.if_then(tx == 0, [&] { T.serial(8, means, "r"); });
  }
  T.serial(
      8,
      [&](Var lo) {
        *read_line = __LINE__ + 1;  // the loop holding the read (its store has no location)
        T.serial(
            4,
            [&](Var v) {
              Y(bx * 32 + lo * 4 + floordiv(tx, 32), tx % 32 * 4 + v) =
                  X(bx * 32 + lo * 4 + floordiv(tx, 32), tx % 32 * 4 + v) - mean_row(lo);
            },
            "v");
      },
      "lo");
  return T.finish();
}

/// The layout map a lowering would have left: mean_row is the replicated row fragment.
LayoutMap mean_row_layout(const Kernel& k) {
  LayoutMap map;
  Buffer frag = BufferNode::make("mean_row", {make_int(32)}, DataType::f32(), Scope::kFragment);
  map.fragments.emplace(frag.get(), Decided<Fragment>{frag, row_fragment(), "test (common)"});
  (void)k;
  return map;
}

std::vector<KernelCheck> definitions(const Kernel& k, const LayoutMap& map = {}) {
  return prove_register_definitions(k, map, 32, 60000);
}

}  // namespace

TEST_SUITE("verify definitions") {
  TEST_CASE("a replicated fragment written only by thread 0 fails: reads and replicas") {
    int read_line = 0;
    Kernel k = layernorm_rows(false, &read_line);
    std::vector<KernelCheck> checks = definitions(k, mean_row_layout(k));

    KernelCheck reads = the_check(checks, "registers of mean_row");
    REQUIRE(reads.result == "failed");
    const std::string& cex = *reads.counterexample;
    INFO(cex);
    // Only thread 0 writes mean_row, so the reader is any other thread; register r of thread t
    // holds row r * 4 + t // 32 as replica t % 32 (row_fragment's comment).
    int64_t t = number_after(cex, "thread"), r = number_after(cex, "register");
    CHECK(t >= 1);
    CHECK(t < 128);
    CHECK(r >= 0);
    CHECK(r < 8);
    CHECK(contains(cex, "element [" + std::to_string(r * 4 + t / 32) +
                            "] of the fragment, replica " + std::to_string(t % 32)));
    CHECK(contains(cex, "test_verify_definitions.cpp:" + std::to_string(read_line)));
    CHECK(contains(cex, "under `if tx == 0`"));

    KernelCheck replicas =
        the_check(checks, "replicas of fragment mean_row (each element in 32 threads)");
    REQUIRE(replicas.result == "failed");
    const std::string& rcex = *replicas.counterexample;
    INFO(rcex);
    // Thread 0 holds the rows i with i % 4 == 0 as replica 0; their other replicas are threads
    // 1..31 (replica = thread there), which write nothing.
    std::smatch m;
    REQUIRE(std::regex_search(rcex, m, std::regex("element \\[([0-9]+)\\]")));
    int64_t element = std::stoll(m[1]);
    CHECK(element % 4 == 0);
    CHECK(contains(rcex, "written by thread 0 (warp 0, lane 0, replica 0)"));
    int64_t other = number_after(rcex, "but not by thread");
    CHECK(other >= 1);
    CHECK(other < 32);
    CHECK(contains(rcex, "replica " + std::to_string(other) + ")"));
  }

  TEST_CASE("the same kernel with only the global store kept to one thread proves") {
    int read_line = 0;
    Kernel k = layernorm_rows(true, &read_line);
    std::vector<KernelCheck> checks = definitions(k, mean_row_layout(k));
    CHECK(the_check(checks, "registers of mean_row").result == "proved");
    CHECK(the_check(checks, "registers of row_sum").result == "proved");
    CHECK(the_check(checks, "replicas of fragment mean_row").result == "proved");
  }

  TEST_CASE("a clear kept to `if tx < 1` fails at the first iteration in another thread (CLI)") {
    CliResult r = run_tessel({"verify", test_kernel("clear_local_one_thread.py"), "--json"});
    INFO(r.out, r.err);
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["failed"] == 1);
    bool found = false;
    for (const auto& c : j["checks"]) {
      if (!c["what"].get<std::string>().starts_with("registers of acc")) continue;
      found = true;
      CHECK(c["result"] == "failed");
      std::string cex = c["counterexample"];
      INFO(cex);
      // Thread 0 alone cleared acc; in iterations k >= 1 the sum of iteration k - 1 defines it,
      // so the undefined read is k = 0 in a thread >= 1.
      CHECK(number_after(cex, "thread") >= 1);
      CHECK(contains(cex, "k = 0"));
      CHECK(contains(cex, "clear_local_one_thread.py:18:17"));  // the `acc[0] = acc[0] + ...`
      CHECK(contains(cex, "under `if tx < 1`"));
      CHECK(c["ms"].get<double>() >= 0);
    }
    CHECK(found);
  }

  TEST_CASE("LayerNorm's row means written out as the miscompile fail verify (CLI, text)") {
    CliResult bad = run_tessel({"verify", test_kernel("layernorm_rows_one_replica.py")});
    CHECK(bad.status == 1);
    CHECK(contains(bad.out, "FAILED"));
    CHECK(contains(bad.out, "registers of mean_row"));
    CliResult good =
        run_tessel({"verify", test_kernel("layernorm_rows_one_replica.py"), "-D", "fixed=true"});
    INFO(good.out);
    CHECK(good.status == 0);
  }

  TEST_CASE("a write in an earlier iteration defines the register (loop-carried)") {
    KernelBuilder T("carried");
    auto A = T.tensor("A", {128}, DataType::f32());
    T.kernel1(1, 128);
    Var tx = T.get_thread_binding();
    auto x = T.alloc_local("x", {1}, DataType::f32());
    T.serial(
        4,
        [&](Var i) {
          T.if_then(i == 0, [&] { x(0) = make_const(DataType::f32(), 0.0); });
          x(0) = x(0) + A(tx);
        },
        "i");
    A(tx) = x(0);
    CHECK(the_check(definitions(T.finish()), "registers of x").result == "proved");
  }

  TEST_CASE("a register first written in iteration 1 is read undefined in iteration 0") {
    KernelBuilder T("carried_late");
    auto A = T.tensor("A", {128}, DataType::f32());
    T.kernel1(1, 128);
    Var tx = T.get_thread_binding();
    auto x = T.alloc_local("x", {1}, DataType::f32());
    T.serial(
        4,
        [&](Var i) {
          T.if_then(i == 1, [&] { x(0) = make_const(DataType::f32(), 0.0); });
          x(0) = x(0) + A(tx);
        },
        "i");
    KernelCheck c = the_check(definitions(T.finish()), "registers of x");
    REQUIRE(c.result == "failed");
    INFO(*c.counterexample);
    CHECK(contains(*c.counterexample, "i = 0"));  // iterations >= 1 follow iteration 1's write
  }

  TEST_CASE("a read under a wider thread condition than the write fails for the threads between") {
    for (int reader : {64, 96}) {
      KernelBuilder T("partial");
      auto A = T.tensor("A", {128}, DataType::f32());
      T.kernel1(1, 128);
      Var tx = T.get_thread_binding();
      auto x = T.alloc_local("x", {1}, DataType::f32());
      T.if_then(tx < 64, [&] { x(0) = A(tx); });
      T.if_then(tx < reader, [&] { A(tx) = x(0) + make_const(DataType::f32(), 1.0); });
      KernelCheck c = the_check(definitions(T.finish()), "registers of x");
      if (reader == 64) {
        CHECK(c.result == "proved");
        continue;
      }
      REQUIRE(c.result == "failed");
      int64_t t = number_after(*c.counterexample, "thread");
      CHECK(t >= 64);  // written by threads 0..63, read by 0..95
      CHECK(t < 96);
    }
  }

  TEST_CASE("with a symbolic size the unguarded read of a guarded register fails past N") {
    for (bool guarded : {true, false}) {
      KernelBuilder T("tail");
      Var n = T.dynamic("N");
      auto A = T.tensor("A", {n}, DataType::f32());
      Var bx = T.kernel1(ceildiv(n, 128), 128);
      Var tx = T.get_thread_binding();
      auto x = T.alloc_local("x", {1}, DataType::f32());
      T.if_then(bx * 128 + tx < n, [&] { x(0) = A(bx * 128 + tx); });
      auto use = [&] { A(bx * 128 + tx) = x(0) * make_const(DataType::f32(), 2.0); };
      if (guarded) {
        T.if_then(bx * 128 + tx < n, use);
      } else {
        use();
      }
      KernelCheck c = the_check(definitions(T.finish()), "registers of x");
      if (guarded) {
        CHECK(c.result == "proved");
        continue;
      }
      REQUIRE(c.result == "failed");
      const std::string& cex = *c.counterexample;
      INFO(cex);
      // The thread that fails is past the end: bx * 128 + tx >= N.
      int64_t t = number_after(cex, "thread"), b = number_after(cex, "bx ="),
              size = number_after(cex, "N =");
      REQUIRE(b >= 0);
      CHECK(b * 128 + t >= size);
    }
  }

  TEST_CASE("a read past the registers of a local buffer fails naming its size") {
    KernelBuilder T("past_end");
    auto A = T.tensor("A", {128}, DataType::f32());
    T.kernel1(1, 128);
    Var tx = T.get_thread_binding();
    auto x = T.alloc_local("x", {4}, DataType::f32());
    T.serial(
        4, [&](Var r) { x(r) = A(tx); }, "r");
    A(tx) = x(tx % 8);
    KernelCheck c = the_check(definitions(T.finish()), "registers of x");
    REQUIRE(c.result == "failed");
    int64_t reg = number_after(*c.counterexample, "register");
    CHECK(reg >= 4);  // tx % 8 in 4..7 for some thread; x has registers 0..3
    CHECK(reg < 8);
    CHECK(contains(*c.counterexample, "x has 4 registers"));
  }

  TEST_CASE("an mma reading register operands ldmatrix did not fill fails") {
    KernelBuilder T("half_loaded");
    auto A = T.tensor("A", {16, 16}, DataType::f16());
    auto C = T.tensor("C", {32, 4}, DataType::f32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto S = T.alloc_shared("S", {16, 16}, DataType::f16());
    auto a = T.alloc_local("a", {8}, DataType::f16());
    auto b = T.alloc_local("b", {4}, DataType::f16());
    auto d = T.alloc_local("d", {4}, DataType::f32());
    T.serial(
        8, [&](Var i) { S(floordiv(tx, 2), tx % 2 * 8 + i) = A(floordiv(tx, 2), tx % 2 * 8 + i); });
    T.sync_threads();
    // ldmatrix.x2 fills 2 registers of 2 halves (4 elements); the m16n8k16 A operand is 8.
    T.ldmatrix(2, false, a(0), S(tx % 16, 0));
    T.ldmatrix(2, false, b(0), S(tx % 16, 8));
    T.serial(4, [&](Var i) { d(i) = make_const(DataType::f32(), 0.0); });
    T.mma_m16n8k16(d(0), a(0), b(0), d(0));
    T.serial(4, [&](Var i) { C(tx, i) = d(i); });
    std::vector<KernelCheck> checks = definitions(T.finish());
    KernelCheck ca = the_check(checks, "registers of a");
    REQUIRE(ca.result == "failed");
    int64_t reg = number_after(*ca.counterexample, "register");
    CHECK(reg >= 4);
    CHECK(reg < 8);
    CHECK(the_check(checks, "registers of b").result == "proved");
    CHECK(the_check(checks, "registers of d").result == "proved");
  }

  TEST_CASE("a tile operator left in a lowered kernel fails completeness, naming it") {
    KernelBuilder T("unlowered");
    auto A = T.tensor("A", {128}, DataType::f32());
    auto B = T.tensor("B", {128}, DataType::f32());
    T.kernel1(1, 128);
    auto S = T.alloc_shared("S", {128}, DataType::f32());
    const int line = __LINE__ + 1;
    T.copy(A, S);
    T.copy(S, B);
    // Handed to verify as if lowering had left it as it is.
    KernelProofs proofs = prove_kernel(LoweredKernel{T.finish(), {}, {}}, find_target("sm80"));
    KernelCheck c = the_check(proofs.checks, "complete");
    REQUIRE(c.result == "failed");
    INFO(*c.counterexample);
    CHECK(contains(*c.counterexample,
                   "T.copy at test_verify_definitions.cpp:" + std::to_string(line)));
    CHECK(contains(*c.counterexample, "still a tile operator"));
    CHECK_FALSE(proofs.all_proved());
  }

  TEST_CASE("every lowered example is complete, its registers defined, its accesses aligned") {
    std::vector<std::string> names;
    for (const Example& e : examples()) names.push_back(e.name);
    for (const auto& entry : std::filesystem::directory_iterator(std::string(TESSEL_SOURCE_DIR) +
                                                                 "/examples/kernels")) {
      if (entry.path().extension() != ".py") continue;
      // Files of several kernels or with parameters to give (the kernel families, whose host
      // code passes paper sizes) are verified kernel by kernel in test_kernel_families.cpp.
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      std::vector<KernelFileEntry> kernels = list_kernels(text.str(), entry.path().string());
      bool defaults = kernels.size() == 1;
      for (const KernelFileEntry& k : kernels) {
        for (const KernelFileParam& p : k.params) {
          defaults = defaults && (p.kind != KernelFileParam::Kind::kParameter ||
                                  (p.default_text && !p.host_call));
        }
      }
      if (defaults) names.push_back(entry.path().string());
    }
    for (const char* target : {"sm80", "gfx942"}) {
      for (const std::string& name : names) {
        // Refused on gfx942 with its reason (tests/test_ws_tile_ops.cpp): its cast copy of the
        // scores inside T.ws would need a barrier among the consumer's threads.
        if (std::string(target) == "gfx942" && name.ends_with("/ws_flash_attention.py")) continue;
        cli::ResolvedKernel k = cli::resolve_kernel(name, {});
        Kernel kernel = k.example->build(k.params);
        LoweredKernel lowered = lower_kernel(kernel, find_target(target));
        std::vector<KernelCheck> checks = definitions(lowered.kernel, lowered.layouts);
        checks.push_back(check_complete(lowered.kernel));
        for (KernelCheck& c : prove_alignment(lowered.kernel, 32, 60000)) checks.push_back(c);
        for (const KernelCheck& c : checks) {
          INFO(target, " ", name, ": ", c.what, " ", c.counterexample.value_or(""));
          CHECK(c.result == "proved");
        }
      }
    }
  }
}
