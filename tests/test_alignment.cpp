// Alignment of fixed-width accesses: the simulator's `misaligned` finding (cp.async, ldmatrix
// rows, vector runs), verify's proof for every index (symbolic sizes included) and emit's refusal
// of an instruction that would fault.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "core/builder.h"
#include "core/passes.h"
#include "interp/host_tensor.h"
#include "interp/thread_interpreter.h"
#include "interp/tile_interpreter.h"
#include "tests/cli_runner.h"
#include "verify/alignment_proofs.h"

using namespace tessel;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string misaligned_kernel() {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/cp_async_misaligned.py";
}

/// The number after `word` in `text`; -1 when absent.
int64_t number_after(const std::string& text, const std::string& word) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(word + " (-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

/// The check whose claim starts with `subject` (exactly one).
KernelCheck the_check(const std::vector<KernelCheck>& checks, const std::string& subject) {
  std::vector<KernelCheck> found;
  for (const KernelCheck& c : checks) {
    if (c.what.starts_with(subject)) found.push_back(c);
  }
  REQUIRE_MESSAGE(found.size() == 1, subject);
  return found[0];
}

/// One warp loads two 8x8 f16 matrices with ldmatrix.x2 from a 16 x 72 tile (144-byte rows, so
/// every row starts 16-byte aligned); lane l gives the row l % 16 at column `column`.
Kernel ldmatrix_rows(int column) {
  KernelBuilder T("ldmatrix_rows");
  auto A = T.tensor("A", {16, 72}, DataType::f16());
  auto O = T.tensor("O", {32, 4}, DataType::f16());
  T.kernel1(1, 32);
  Var tx = T.get_thread_binding();
  auto S = T.alloc_shared("S", {16, 72}, DataType::f16());
  auto regs = T.alloc_local("regs", {4}, DataType::f16());
  T.serial(36, [&](Var i) {
    S(floordiv(i * 32 + tx, 72), (i * 32 + tx) % 72) =
        A(floordiv(i * 32 + tx, 72), (i * 32 + tx) % 72);
  });
  T.sync_threads();
  T.ldmatrix(2, false, regs(0), S(tx % 16, column));
  T.serial(
      4, [&](Var e) { O(tx, e) = regs(e); }, "e");
  return T.finish();
}

}  // namespace

TEST_SUITE("alignment") {
  TEST_CASE("a cp.async 8 bytes off a 16-byte boundary is a misaligned finding at thread level") {
    CliResult r = run_tessel({"run", misaligned_kernel(), "--level", "thread", "--json"});
    INFO(r.out, r.err);
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["sim"]["findings"].size() == 1);
    const auto& f = j["sim"]["findings"][0];
    CHECK(f["kind"] == "misaligned");
    CHECK(f["benign"] == false);
    CHECK(f["buffer"] == "A");
    // Thread 0 of block 0 copies A[4..11]: byte 4 * 2 = 8. Every lane of both blocks is off by
    // 8 bytes: 32 lanes x 2 blocks = 64 occurrences.
    CHECK(f["address"] == 8);
    CHECK(f["width"] == 16);
    CHECK(f["element"] == "[4]");
    CHECK(f["threads"] == nlohmann::json::array({0}));
    CHECK(f["count"] == 64);
    CHECK(contains(f["sites"][0]["loc"].get<std::string>(), "cp_async_misaligned.py:15:13"));
    CHECK(contains(f["message"].get<std::string>(), "faults"));

    CliResult fixed =
        run_tessel({"run", misaligned_kernel(), "--level", "thread", "-D", "fixed=true", "--json"});
    CHECK(fixed.status == 0);
    CHECK(nlohmann::json::parse(fixed.out)["sim"]["findings"].empty());
  }

  TEST_CASE("verify finds the misaligned cp.async source with a counterexample") {
    CliResult r = run_tessel({"verify", misaligned_kernel(), "--json"});
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    int aligned_s = 0, failed_a = 0;
    for (const auto& c : j["checks"]) {
      std::string what = c["what"];
      if (what.starts_with("alignment of S")) aligned_s += c["result"] == "proved";
      if (what.starts_with("alignment of A") && c["result"] == "failed") {
        ++failed_a;
        std::string cex = c["counterexample"];
        INFO(cex);
        // Thread t of block b starts at element b * 256 + t * 8 + 4: byte 512 b + 16 t + 8,
        // always 8 past a multiple of 16.
        int64_t byte = number_after(cex, "\\(byte");
        CHECK(byte % 16 == 8);
        CHECK(contains(cex, "cp_async_16 source"));
        CHECK(contains(cex, "cp_async_misaligned.py:15:13"));
      }
    }
    CHECK(aligned_s == 1);  // S[tx * 8]: byte 16 tx
    CHECK(failed_a == 1);
    CHECK(run_tessel({"verify", misaligned_kernel(), "-D", "fixed=true"}).status == 0);
  }

  TEST_CASE("emit refuses to print the misaligned cp.async") {
    CliResult r = run_tessel({"emit", misaligned_kernel()});
    CHECK(r.status == 1);
    CHECK(contains(r.err, "emit refuses"));
    CHECK(contains(r.err, "cp_async_16 source"));
    CHECK(run_tessel({"emit", misaligned_kernel(), "-D", "fixed=true"}).status == 0);
  }

  TEST_CASE("ldmatrix rows 8 bytes off 16 fail in the simulator and in verify") {
    // Column 4 of a row starting at byte 144 r: byte 144 r + 8, never a multiple of 16; column 8:
    // 144 r + 16, always one.
    for (int column : {8, 4}) {
      Kernel k = ldmatrix_rows(column);
      KernelCheck c = the_check(prove_alignment(k, 32, 60000), "alignment of S");
      TensorMap tensors;
      tensors.emplace("A", HostTensor(DataType::f16(), {16, 72}));
      tensors.emplace("O", HostTensor(DataType::f16(), {32, 4}));
      ThreadRunResult run = run_thread_level(k, tensors, ThreadRunOptions{});
      int misaligned = 0;
      for (const auto& f : run.report.findings)
        misaligned += f.kind == sim::FindingKind::kMisaligned;
      if (column == 8) {
        CHECK(c.result == "proved");
        CHECK(misaligned == 0);
        continue;
      }
      REQUIRE(c.result == "failed");
      CHECK(contains(*c.counterexample, "ldmatrix_x2 row"));
      CHECK(number_after(*c.counterexample, "\\(byte") % 16 == 8);
      CHECK(misaligned == 1);
    }
  }

  TEST_CASE("with a symbolic row length a cp.async is aligned only where the kernel says so") {
    // A is (rows, N) f16; lane t copies A[row, t * 8 .. t * 8 + 7]: byte 2 (row N + 8 t), a
    // multiple of 16 for every row only when N is a multiple of 8.
    for (bool guarded : {false, true}) {
      KernelBuilder T("rows");
      Var n = T.dynamic("N");
      auto A = T.tensor("A", {4, n}, DataType::f16());
      auto B = T.tensor("B", {4, 256}, DataType::f16());
      Var bx = T.kernel1(4, 32);
      Var tx = T.get_thread_binding();
      auto S = T.alloc_shared("S", {256}, DataType::f16());
      auto body = [&] {
        T.cp_async(S(tx * 8), A(bx, tx * 8), 16);
        T.cp_async_commit_group();
        T.cp_async_wait_group(0);
      };
      if (guarded) {
        T.if_then(n % 8 == 0, body);
      } else {
        body();
      }
      T.sync_threads();
      T.serial(8, [&](Var i) { B(bx, tx * 8 + i) = S(tx * 8 + i); });
      KernelCheck c = the_check(prove_alignment(T.finish(), 32, 60000), "alignment of A");
      if (guarded) {
        CHECK(c.result == "proved");
        continue;
      }
      REQUIRE(c.result == "failed");
      const std::string& cex = *c.counterexample;
      INFO(cex);
      int64_t size = number_after(cex, "N ="), row = number_after(cex, "bx =");
      int64_t t = number_after(cex, "thread");
      REQUIRE(size >= 0);
      CHECK((2 * (row * size + 8 * t)) % 16 != 0);
    }
  }

  TEST_CASE("a contiguous vector run off its alignment is a benign finding: split, still right") {
    KernelBuilder T("shifted_vector");
    auto A = T.tensor("A", {132}, DataType::f32());
    auto B = T.tensor("B", {128}, DataType::f32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    // Lane t reads A[4 t + 1 .. 4 t + 4]: byte 16 t + 4, contiguous but 4 past 16.
    T.vectorized(4, [&](Var v) { B(tx * 4 + v) = A(tx * 4 + v + 1); });
    TensorMap tensors;
    tensors.emplace("A", HostTensor(DataType::f32(), {132}));
    tensors.emplace("B", HostTensor(DataType::f32(), {128}));
    ThreadRunResult run = run_thread_level(T.finish(), tensors, ThreadRunOptions{});
    REQUIRE(run.report.findings.size() == 1);
    const sim::Finding& f = run.report.findings[0];
    CHECK(f.kind == sim::FindingKind::kMisaligned);
    CHECK(f.benign);
    CHECK(f.buffer == "A");
    CHECK(f.address == 4);
    CHECK(f.width == 16);
    CHECK_FALSE(run.report.has_errors());
  }
}
