// `tessel verify` and prove_kernel: every layout, fragment, loop partition and shared-memory
// access of a lowered kernel proved with Z3; conflicts come back with the lanes involved.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/builder.h"
#include "core/passes.h"
#include "tests/cli_runner.h"
#include "verify/kernel_proofs.h"

using namespace tessel;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// The bank-conflict checks of `proofs` (the access proofs), in report order.
std::vector<KernelCheck> access_checks(const KernelProofs& proofs) {
  std::vector<KernelCheck> found;
  for (const KernelCheck& c : proofs.checks) {
    if (c.what.ends_with("no bank conflicts")) found.push_back(c);
  }
  return found;
}

/// The checks whose claim starts with `subject`.
std::vector<nlohmann::json> checks_about(const nlohmann::json& report, const std::string& subject) {
  std::vector<nlohmann::json> found;
  for (const auto& c : report["checks"]) {
    if (c["what"].get<std::string>().starts_with(subject)) found.push_back(c);
  }
  return found;
}

/// One warp loads a 16 x 64 f16 shared tile, kept row-major (no swizzle), with ldmatrix.x4:
/// lane l gives the row address S[l % 16, l // 16 * 8].
Kernel ldmatrix_from_row_major_tile() {
  KernelBuilder T("ldmatrix_row_major");
  auto A = T.tensor("A", {16, 64}, DataType::f16());
  auto O = T.tensor("O", {32, 8}, DataType::f16());
  T.kernel1(1, 32);
  Var tx = T.get_thread_binding();
  auto S = T.alloc_shared("S", {16, 64}, DataType::f16());
  auto regs = T.alloc_local("regs", {8}, DataType::f16());
  T.serial(32,
           [&](Var i) { S(floordiv(i, 2), i % 2 * 32 + tx) = A(floordiv(i, 2), i % 2 * 32 + tx); });
  T.sync_threads();
  T.ldmatrix(4, false, regs(0), S(tx % 16, floordiv(tx, 16) * 8));
  T.serial(
      8, [&](Var e) { O(tx, e) = regs(e); }, "e");
  return T.finish();
}

/// One warp stages a 32 x 32 f32 tile row by row, then lanes tx < 4 read column 0.
Kernel guarded_column_read() {
  KernelBuilder T("guarded_column");
  auto A = T.tensor("A", {32, 32}, DataType::f32());
  auto O = T.tensor("O", {4}, DataType::f32());
  T.kernel1(1, 32);
  Var tx = T.get_thread_binding();
  auto S = T.alloc_shared("S", {32, 32}, DataType::f32());
  T.serial(32, [&](Var i) { S(i, tx) = A(i, tx); });
  T.sync_threads();
  T.if_then(tx < 4, [&] { O(tx) = S(tx, 0); });
  return T.finish();
}

}  // namespace

TEST_SUITE("verify kernel") {
  // Why the sm80 swizzles make every ldmatrix phase conflict-free (core/builtin_layouts.h): element
  // (i, j) of an f16 tile has vec = 8 elements per 16-byte chunk, s = i % 8, c = (j // 8) % nb, and
  // sits in chunk (c ^ (s >> k)) + nb * s of its 8-row panel. One ldmatrix phase is 8 lanes giving
  // the 16-byte rows r = 0..7 of one 8x8 matrix (same chunk c0); 128 bytes = 8 chunks cover the 32
  // banks, so the phase is conflict-free iff the 8 chunk indices differ mod 8.
  //   B_shared, 32 x 128 (rows of 256 B): 128B swizzle, nb = 8, k = 0: chunk (c0 ^ r) + 8 r,
  //     mod 8 = c0 ^ r: eight distinct values for r = 0..7.
  //   A_shared, 128 x 32 (rows of 64 B): 64B swizzle, nb = 4, k = 1: chunk (c0 ^ (r >> 1)) + 4 r,
  //     mod 8 = (c0 ^ (r >> 1)) + 4 (r % 2): r >> 1 picks one of 4 distinct low values, r % 2 the
  //     half, so again eight distinct values.
  TEST_CASE("verify gemm proves every layout, fragment and access, ldmatrix included") {
    CliResult r = run_tessel({"verify", "gemm", "--json"});
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["failed"] == 0);
    CHECK(j["proved"] == j["checks"].size());
    // Two swizzled tiles, the accumulator fragment, four loop partitions (clear, two copies in,
    // one copy out) and at least the two ldmatrix sources.
    CHECK(checks_about(j, "shared layout of A_shared").size() == 1);
    CHECK(checks_about(j, "shared layout of B_shared").size() == 1);
    CHECK(checks_about(j, "fragment C_local").size() == 1);
    CHECK(checks_about(j, "loop partition of ").size() == 4);
    std::vector<nlohmann::json> ld_a = checks_about(j, "ldmatrix_x4 A_shared");
    std::vector<nlohmann::json> ld_b = checks_about(j, "ldmatrix_x4_trans B_shared");
    // The gemm's 3 sites: 512 / 32 = 16 k-tiles > 2 = num_stages - 1, so the pipeline is
    // peeled (the main loop and 2 epilogue iterations), each site proved on its own.
    REQUIRE(ld_a.size() == 3);
    REQUIRE(ld_b.size() == 3);
    for (const auto& c : ld_a) CHECK(c["result"] == "proved");
    for (const auto& c : ld_b) CHECK(c["result"] == "proved");
    CHECK(contains(ld_a[0]["what"], "no bank conflicts"));
    for (const auto& c : j["checks"]) {
      CHECK(c["counterexample"].is_null());
      CHECK(c["ms"].get<double>() >= 0);
    }
  }

  TEST_CASE("verify softmax proves its fragments, the reduced rows replicated over 32 threads") {
    CliResult r = run_tessel({"verify", "softmax", "--json"});
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["failed"] == 0);
    // X_local is 32 x 128 over 128 threads, 4 consecutive elements each: one 128-element row is
    // held by 128 / 4 = 32 threads, so each row_max / row_sum element lives in those 32 threads.
    for (const char* name : {"fragment X_local", "fragment row_max", "fragment row_sum"}) {
      std::vector<nlohmann::json> c = checks_about(j, name);
      REQUIRE_MESSAGE(c.size() == 1, name);
      CHECK(c[0]["result"] == "proved");
    }
    CHECK(contains(checks_about(j, "fragment X_local")[0]["what"], "exactly 1 thread,"));
    CHECK(contains(checks_about(j, "fragment row_max")[0]["what"], "exactly 32 threads"));
  }

  // row_sum_bank_conflicts reads tile[tx, i] of a 32 x 32 f32 tile: lane l's word is 32 l + i, all
  // in bank i % 32, 32 distinct words: one 32-way conflict whichever i.
  TEST_CASE(
      "a column read of a 32 x 32 f32 tile fails with the lanes of a 32-way conflict, exit 1") {
    CliResult r = run_tessel({"verify", "row_sum_bank_conflicts"});
    CHECK(r.status == 1);
    CHECK(contains(r.out, "FAILED"));
    CHECK(contains(r.out, "lanes 0, 1, 2, 3, ... (32 lanes)"));
    CHECK(contains(r.out, "a 32-way bank conflict"));
  }

  TEST_CASE(
      "verify --json gives proved, failed and each check's what, result, counterexample, ms") {
    CliResult r = run_tessel({"verify", "row_sum_bank_conflicts", "--json"});
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    // The two accesses: the row store tile[i, tx] (lane l -> bank l: conflict-free) and the
    // column load tile[tx, i]; the kernel's other checks (completeness, the registers of its
    // sums) prove.
    CHECK(j["failed"] == 1);
    CHECK(j["proved"] == j["checks"].size() - 1);
    int accesses = 0;
    for (const auto& c : j["checks"]) {
      CHECK(c.contains("what"));
      accesses += contains(c["what"], "no bank conflicts");
      CHECK(c.contains("ms"));
      if (c["result"] == "failed") {
        CHECK(contains(c["what"], "load tile[tx, i]"));
        CHECK(contains(c["counterexample"].get<std::string>(), "lanes 0, 1, 2, 3"));
      } else {
        CHECK(c["result"] == "proved");
        CHECK(c["counterexample"].is_null());
      }
    }
    CHECK(accesses == 2);
  }

  // S is 16 x 64 f16, rows of 128 B, so every row starts at bank 0. An ldmatrix phase is 8 lanes
  // giving rows r..r+7 at one column: 8 different words in the same 4 banks, an 8-way conflict
  // in every phase. The row store S[i // 2, i % 2 * 32 + tx] has lane l at 2-byte element l of a
  // row: lanes 2k and 2k + 1 share one word, 16 words in 16 banks, conflict-free.
  TEST_CASE("ldmatrix from a row-major tile with 128-byte rows fails with an 8-way conflict") {
    Kernel kernel = ldmatrix_from_row_major_tile();
    const Target& sm80 = find_target("sm80");
    KernelProofs proofs = prove_kernel(lower_kernel(kernel, sm80), sm80);
    std::vector<KernelCheck> accesses = access_checks(proofs);
    REQUIRE(accesses.size() == 2);
    const KernelCheck& store = accesses[0];
    const KernelCheck& load = accesses[1];
    CHECK(contains(store.what, "store S["));
    CHECK(store.result == "proved");
    CHECK(contains(load.what, "ldmatrix_x4 S[tx % 16, tx // 16 * 8]"));
    CHECK(load.result == "failed");
    REQUIRE(load.counterexample);
    INFO(*load.counterexample);
    CHECK(contains(*load.counterexample, "(8 lanes) access S["));
    CHECK(contains(*load.counterexample, "8-way bank conflict"));
    CHECK(proofs.count("failed") == 1);
    CHECK_FALSE(proofs.all_proved());
  }

  // Under `if tx < 4` only lanes 0-3 read S[tx, 0]: words 0, 32, 64, 96, all in bank 0 — a 4-way
  // conflict, not the 32-way one of the whole warp.
  TEST_CASE("an access under an if on the thread is proved for the lanes the condition lets in") {
    Kernel kernel = guarded_column_read();
    const Target& sm80 = find_target("sm80");
    KernelProofs proofs = prove_kernel(lower_kernel(kernel, sm80), sm80);
    std::vector<KernelCheck> accesses = access_checks(proofs);
    REQUIRE(accesses.size() == 2);
    const KernelCheck& load = accesses[1];
    CHECK(contains(load.what, "load S[tx, 0]"));
    CHECK(contains(load.what, "under `if tx < 4`"));
    CHECK(load.result == "failed");
    REQUIRE(load.counterexample);
    INFO(*load.counterexample);
    CHECK(contains(*load.counterexample, "lanes 0, 1, 2, 3 (4 lanes)"));
    CHECK(contains(*load.counterexample, "4-way bank conflict"));
  }

  TEST_CASE("an unknown --target is a usage error") {
    CliResult r = run_tessel({"verify", "gemm", "--target", "sm70"});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "sm70"));
  }

  TEST_CASE("verify takes a kernel file and -D parameters") {
    std::string path = std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/softmax.py";
    CliResult r = run_tessel({"verify", path.c_str(), "-D", "block_M=16"});
    INFO(r.out, r.err);
    CHECK(r.status == 0);
    CHECK(contains(r.out, "fragment X_local"));
    CHECK(contains(r.out, "0 failed"));
  }

  // verify proved the lowered kernel of a read past the end of A (and of an index divided by
  // zero) with exit 0: no check looked at global element accesses. Row i of B reads row i + 1 of
  // A, so the thread holding row 63 reads A[64, 0] = element 64 * 64 = 4096 of 4096.
  TEST_CASE("a read one row past the end of a tensor fails verify with the thread and element") {
    std::string file = std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/read_past_last_row.py";
    CliResult r = run_tessel({"verify", file, "--json"});
    INFO(r.out, r.err);
    CHECK(r.status == 1);
    nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["failed"] == 1);
    for (const auto& c : j["checks"]) {
      std::string what = c["what"];
      if (what.rfind("bounds of tensor B", 0) == 0) CHECK(c["result"] == "proved");
      if (what.rfind("bounds of tensor A", 0) != 0) continue;
      CHECK(c["result"] == "failed");
      std::string cex = c["counterexample"];
      CHECK(contains(cex, "loads A[64, "));
      CHECK(contains(cex, "(element 4096)"));
      CHECK(contains(cex, "outside the tensor A [64, 64]"));
      CHECK(contains(cex, "read_past_last_row.py:10"));
    }
  }

  // The bug corpus's unmasked tail (C[i] = A[i] + B[i] with a grid of ceildiv(N, 128) blocks and
  // no i < N guard) reads past N for every N not a multiple of 128; its fixed twin guards i < N.
  TEST_CASE("verify fails the unmasked tail for a symbolic N and proves its guarded twin") {
    CliResult bad = run_tessel({"verify", "bug_unmasked_tail"});
    INFO(bad.out, bad.err);
    CHECK(bad.status == 1);
    CHECK(contains(bad.out, "3 failed"));  // A, B and C: one check per tensor
    CHECK(contains(bad.out, "outside the tensor A [N]"));
    CHECK(contains(bad.out, "stores to C["));
    CliResult good = run_tessel({"verify", "bug_unmasked_tail", "-D", "fixed=true"});
    INFO(good.out, good.err);
    CHECK(good.status == 0);
    CHECK(contains(good.out, "bounds of tensor C ([N] float32)"));
  }

  TEST_CASE("an index divided by zero fails verify, naming the divisor") {
    std::string file = std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/index_divides_by_zero.py";
    CliResult r = run_tessel({"verify", file, "--json"});
    INFO(r.out, r.err);
    CHECK(r.status == 1);
    nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["failed"] == 1);
    bool seen = false;
    for (const auto& c : j["checks"]) {
      if (c["result"] != "failed") continue;
      seen = true;
      CHECK(std::string(c["what"]).rfind("bounds of tensor A", 0) == 0);
      std::string cex = c["counterexample"];
      CHECK(contains(cex, "divides by zero"));
      CHECK(contains(cex, "is 0) in the index of the load of A["));
    }
    CHECK(seen);
  }

  // Found by `tessel fuzz`: the bank proof ranged the block index and the symbolic M over every
  // int32, found a model where bx * 16 wraps, and its replay in int32 arithmetic disagreed (an
  // internal error). A launch has 0 <= bx < ceil(M / 16) and 0 <= M < 2^31, so no index wraps.
  // The conflict itself is real: 2-byte reads, rows of 64 B = 16 banks, so the even rows 8, 10,
  // 12, 14 that lanes 0, 8, 16, 24 of warp 1 read (tx // 4) start in the same bank: 4-way.
  TEST_CASE("a guarded read with a symbolic row count gets a real counterexample, not a crash") {
    std::string file = std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/guarded_rows_symbolic_m.py";
    CliResult r = run_tessel({"verify", file, "--json"});
    CHECK(r.status == 1);
    nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["failed"] == 1);
    for (const auto& c : j["checks"]) {
      if (c["result"] != "failed") continue;
      std::string cex = c["counterexample"];
      CHECK(contains(cex, "4-way bank conflict"));
      CHECK(contains(cex, "tile[8, "));
      CHECK(contains(cex, "tile[14, "));
      std::smatch m, b;
      REQUIRE(std::regex_search(cex, m, std::regex("M = (-?[0-9]+)")));
      REQUIRE(std::regex_search(cex, b, std::regex("bx = (-?[0-9]+)")));
      int64_t rows = std::stoll(m[1]), block = std::stoll(b[1]);
      CHECK(block >= 0);
      CHECK(block * 16 + 14 < rows);  // the rows it names are inside the tensor
    }
  }

}  // TEST_SUITE
