// Capacity: shared memory, registers and threads of a block against the target's limits
// (core/capacity.h), refused at `lower`, `verify`, `emit` and both `run` levels before anything is
// allocated, with the buffers, their sizes and the limit in the message.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/builder.h"
#include "core/capacity.h"
#include "tests/cli_runner.h"

using namespace tessel;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// Writes `text` to a fresh file in a per-process temporary folder; returns its path.
std::string write_file(const std::string& name, const std::string& text) {
  auto dir =
      std::filesystem::temp_directory_path() / ("tessel_capacity_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

/// The gemm example with 128 x 256 x 64 tiles, 256 threads and `stages` pipeline stages: its two
/// shared tiles hold (128 * 64 + 64 * 256) * 2 = 49152 bytes per stage.
std::vector<std::string> big_gemm(const std::string& command, int stages) {
  return {command,    "gemm",        "-D", "block_M=128",
          "-D",       "block_N=256", "-D", "block_K=64",
          "-D",       "threads=256", "-D", "num_stages=" + std::to_string(stages),
          "--target", "sm90"};
}

}  // namespace

TEST_SUITE("capacity") {
  TEST_CASE("a block's needs: shared tiles 16-byte aligned, fragments shared out, locals whole") {
    KernelBuilder T("needs");
    auto A = T.tensor("A", {128, 128}, DataType::f32());
    T.kernel1(1, 128);
    T.alloc_shared("S", {128, 32}, DataType::f16());       // 8192 bytes
    T.alloc_shared("odd", {3}, DataType::f16());           // 6 bytes, 16 in the layout
    T.alloc_fragment("acc", {128, 128}, DataType::f32());  // 16384 elements / 128 threads = 128
    T.alloc_local("tmp", {3}, DataType::f16());            // 48 bits: 2 registers
    T.copy(A, A);
    BlockNeeds n = block_needs(T.finish());
    CHECK(n.shared_bytes == 8192 + 16);
    CHECK(n.registers == 128 + 2);
    REQUIRE(n.shared.size() == 2);
    CHECK(n.shared[1].bytes == 6);
  }

  TEST_CASE("a pipelined gemm whose stages outgrow 227 KiB is refused by lower, after lowering") {
    // 4 stages: 4 * 49152 = 196608 <= 232448 (227 KiB, sm90); 5 stages: 245760 > 232448, plus
    // the warp specialisation's ws_full and ws_empty barriers (5 * 8 = 40 bytes each, 48 with
    // the 16-byte alignment of shared buffers): 245856. The tile-level kernel (one stage, 49152
    // bytes) fits: only the lowered one is over.
    CHECK(run_tessel(big_gemm("lower", 4)).status == 0);
    CliResult r = run_tessel(big_gemm("lower", 5));
    CHECK(r.status == 1);
    INFO(r.err);
    CHECK(contains(r.err, "kernel 'gemm': shared memory per block is 245856 bytes"));
    CHECK(contains(r.err, "over the 232448 bytes (227 KiB) a block can use on sm90"));
    CHECK(contains(r.err, "B_shared 163840 B"));  // 5 * 64 * 256 * 2
    CHECK(contains(r.err, "A_shared 81920 B"));   // 5 * 128 * 64 * 2
    CHECK(contains(r.err, "num_stages"));
  }

  TEST_CASE("verify reports the limits as checks: fits before lowering, over after") {
    CliResult r = run_tessel([] {
      auto a = big_gemm("verify", 5);
      a.push_back("--json");
      return a;
    }());
    CHECK(r.status == 1);
    auto j = nlohmann::json::parse(r.out);
    int before = 0, failed = 0;
    for (const auto& c : j["checks"]) {
      std::string what = c["what"];
      if (what.starts_with("capacity before lowering")) ++before;
      if (what.starts_with("capacity, shared memory") && c["result"] == "failed") {
        ++failed;
        // 245760 bytes of tiles + 96 of stage barriers (see above)
        CHECK(contains(c["counterexample"].get<std::string>(), "245856 bytes"));
      }
    }
    CHECK(before == 0);  // the tile-level kernel fits: only the lowered kernel's checks are listed
    CHECK(failed == 1);
  }

  TEST_CASE("emit and run --level thread refuse the same kernel, naming the buffers") {
    for (const char* command : {"emit", "run"}) {
      std::vector<std::string> args = big_gemm(command, 5);
      if (std::string(command) == "run") {
        args.push_back("--level");
        args.push_back("thread");
      }
      CliResult r = run_tessel(args);
      INFO(command, r.out, r.err);
      CHECK(r.status == 1);
      CHECK(contains(r.err, "245856 bytes"));  // tiles + stage barriers, as above
      CHECK(contains(r.err, "B_shared"));
    }
  }

  TEST_CASE("an MLA decode tile set over every target's shared memory is refused before lowering") {
    // Q_shared, KV_shared, O_shared: 64 x 512 f16 = 65536 bytes each; Q_pe, K_pe, S: 64 x 64 f16
    // = 8192 each: 3 * 65536 + 3 * 8192 = 221184 bytes > 166912 (163 KiB, sm80) and > 65536
    // (64 KiB, gfx942).
    std::string path = std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/mla_decode_tiles.py";
    for (const char* target : {"sm80", "gfx942"}) {
      CliResult r = run_tessel({"verify", path, "--target", target, "--json"});
      CHECK(r.status == 1);
      auto j = nlohmann::json::parse(r.out);
      bool shared_failed = false;
      for (const auto& c : j["checks"]) {
        std::string what = c["what"];
        CHECK(what.starts_with("capacity before lowering"));  // nothing else: not lowered
        if (contains(what, "shared memory") && c["result"] == "failed") {
          shared_failed = true;
          std::string cex = c["counterexample"];
          CHECK(contains(cex, "221184 bytes"));
          CHECK(contains(cex, "KV_shared 65536 B at"));
          CHECK(contains(cex, "mla_decode_tiles.py:22:"));
        }
      }
      CHECK(shared_failed);
    }
  }

  TEST_CASE("LDS over 64 KiB fits sm80 but not gfx942") {
    // 65 * 512 f16 = 66560 bytes: under 166912 (sm80), over 65536 (gfx942).
    std::string path = write_file("lds.py", R"(import tilelang.language as T


def lds_copy(n=33280):

    @T.prim_func
    def main(A: T.Tensor((n,), "float16"), B: T.Tensor((n,), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((n,), "float16")
            T.copy(A[0], S)
            T.copy(S, B[0])

    return main
)");
    CHECK(run_tessel({"lower", path, "--target", "sm80"}).status == 0);
    CliResult r = run_tessel({"lower", path, "--target", "gfx942"});
    CHECK(r.status == 1);
    CHECK(contains(r.err, "66560 bytes, over the 65536 bytes (64 KiB) a block can use on gfx942"));
  }

  TEST_CASE("huge shared and register buffers are refused before anything is allocated") {
    // 65536 * 65536 f32 = 2^34 bytes of shared memory; 2^30 f32 registers per thread.
    std::string shared = write_file("huge_shared.py", R"(import tilelang.language as T


def huge_shared():

    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((65536, 65536), "float32")
            for i in T.Parallel(128):
                S[0, i] = A[i]

    return main
)");
    std::string local = write_file("huge_local.py", R"(import tilelang.language as T


def huge_local():

    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            x = T.alloc_local((1073741824,), "float32")
            x[0] = A[tx]
            A[tx] = x[0]

    return main
)");
    auto start = std::chrono::steady_clock::now();
    CliResult tile = run_tessel({"run", shared, "--level", "tile"});
    CliResult thread = run_tessel({"run", local, "--level", "thread"});
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(tile.err, thread.err);
    CHECK(tile.status == 1);
    CHECK(contains(tile.err, "17179869184 bytes"));
    CHECK(contains(tile.err, "232448 bytes (227 KiB)"));  // the tile level: the largest limit
    CHECK(thread.status == 1);
    CHECK(contains(thread.err, "at least 1073741824 32-bit registers"));
    CHECK(contains(thread.err, "255 a thread can have on sm80"));
    CHECK(seconds < 5);  // refused, not allocated (16 GiB and 512 GiB)
  }

  TEST_CASE("a block over the target's thread limit is named with the limit") {
    KernelBuilder T("wide");
    auto A = T.tensor("A", {1024}, DataType::f32());
    T.kernel1(1, 1024);
    Var tx = T.get_thread_binding();
    A(tx) = A(tx) + make_const(DataType::f32(), 1.0);
    Target small = find_target("sm80");
    small.max_threads = 512;
    std::optional<std::string> p = capacity_problem(T.finish(), small);
    REQUIRE(p);
    CHECK(contains(*p, "1024 threads per block, over the 512"));
  }

  TEST_CASE("registers per thread within 255 can still overflow the block's 65536") {
    KernelBuilder T("many_registers");
    auto A = T.tensor("A", {1024}, DataType::f32());
    T.kernel1(1, 1024);
    Var tx = T.get_thread_binding();
    auto x = T.alloc_local("x", {80}, DataType::f32());  // 80 registers: fine for one thread
    T.serial(80, [&](Var i) { x(i) = A(tx); });
    A(tx) = x(79);
    std::optional<std::string> p = capacity_problem(T.finish(), find_target("sm80"));
    REQUIRE(p);
    INFO(*p);
    CHECK(contains(*p, "1024 threads x at least 80 registers = 81920"));  // 1024 * 80
    CHECK(contains(*p, "over the 65536"));
    CHECK(contains(*p, "x 80 registers"));
  }
}
