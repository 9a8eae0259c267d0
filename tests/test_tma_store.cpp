// TMA stores (sm90): T.tma_copy(shared, global) is a fence, then cp.async.bulk.tensor shared ->
// global and a bulk commit by the first thread; T.tma_store_wait() waits. The store writes its
// box at completion, leaving out what lies past the tensor's edges; a write to its source before
// the wait is a TMA store race (the buggy kernel, under every schedule) and its fixed twin is
// clean; the CUDA spells the store and compiles with nvcc -arch=sm_90a.
#include <doctest/doctest.h>

#include <filesystem>

#include "codegen/emit.h"
#include "codegen/toolchain.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/printer.h"
#include "interp/thread_interpreter.h"
#include "tests/sm90_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

/// Two row tiles (by) of 32 rows of a 48 x 64 tensor, two column tiles k each: the tile is
/// staged in shared memory (doubled) and stored with TMA. Rows 48..63 of the second row tile
/// lie past B's edge: the store leaves them out. `waits`: the fixed twin waits for each store
/// before the next tile overwrites the staging buffer.
std::string store_kernel(bool waits) {
  return std::string(
             "import tilelang.language as T\n"
             "\n"
             "\n"
             "def tma_store():\n"
             "    @T.prim_func\n"
             "    def main(A: T.Tensor((48, 64), \"float32\"), B: T.Tensor((48, 64), "
             "\"float32\")):\n"
             "        with T.Kernel(2, threads=128) as by:\n"
             "            s = T.alloc_shared((32, 32), \"float32\")\n"
             "            for k in T.serial(2):\n"
             "                T.copy(A[by * 32, k * 32], s)\n"
             "                for i, j in T.Parallel(32, 32):\n"
             "                    s[i, j] = s[i, j] * 2.0\n"
             "                T.tma_copy(s, B[by * 32:(by + 1) * 32, k * 32:(k + 1) * 32])\n") +
         (waits ? "                T.tma_store_wait()\n" : "") +
         "\n"
         "    return main\n";
}

double a_value(int64_t i, int64_t c) { return static_cast<double>((i * 64 + c) % 29) - 14.0; }

TensorMap inputs() {
  HostTensor a(DataType::f32(), {48, 64});
  for (int64_t i = 0; i < 48; ++i) {
    for (int64_t c = 0; c < 64; ++c) a.set(i * 64 + c, a_value(i, c));
  }
  return {{"A", a}, {"B", HostTensor(DataType::f32(), {48, 64})}};
}

}  // namespace

TEST_SUITE("tma stores") {
  TEST_CASE("T.tma_copy(shared, global) stores the box at completion, clipped at the edges") {
    for (const char* s : {"in-order", "reverse", "random:1", "random:7"}) {
      CAPTURE(s);
      TensorMap t = inputs();
      ThreadRunResult r = run_sm90(store_kernel(true), t, s);
      CHECK(r.report.findings.empty());
      // Every element of B is written once, doubled; the 16 rows of block 1 past row 47 are
      // left out (no out-of-bounds finding, no write).
      for (int64_t i = 0; i < 48; ++i) {
        for (int64_t c = 0; c < 64; ++c) CHECK(t["B"].at(i * 64 + c) == 2.0 * a_value(i, c));
      }
    }
  }

  TEST_CASE("T.tma_copy(shared, global) is a fence, then the store and its commit by thread 0") {
    std::string printed = print_kernel(parse_kernel(store_kernel(true), "store.py").kernel);
    CAPTURE(printed);
    CHECK(printed.find("            T.fence_proxy_async()\n"
                       "            if tx == 0:\n"
                       "                T.tma_store_2d(B[by * 32, k * 32], s[0, 0], 32, 32, 0)\n"
                       "                T.tma_store_arrive()\n"
                       "            T.tma_store_wait(0)\n") != std::string::npos);
    // insert_barriers orders the threads' writes of s before thread 0's store reads it.
    std::string lowered = print_kernel(
        lower_kernel(parse_kernel(store_kernel(true), "store.py").kernel, find_target("sm90"))
            .kernel);
    CAPTURE(lowered);
    const size_t store = lowered.find("T.tma_store_2d");
    REQUIRE(store != std::string::npos);
    const size_t doubling = lowered.rfind("* 2.0", store);
    REQUIRE(doubling != std::string::npos);
    const size_t sync = lowered.rfind("T.sync_threads()", store);
    CHECK(sync != std::string::npos);
    CHECK(sync > doubling);
  }

  TEST_CASE("overwriting a TMA store's source before its wait is a TMA store race") {
    for (const char* s : {"in-order", "reverse", "random:1", "random:7"}) {
      CAPTURE(s);
      TensorMap t = inputs();
      ThreadRunResult r = run_sm90(store_kernel(false), t, s);
      REQUIRE_FALSE(r.report.findings.empty());
      const sim::Finding& f = r.report.findings[0];
      CHECK(f.kind == sim::FindingKind::kAsyncRace);
      CHECK(f.buffer == "s");
      CHECK(f.message.find("TMA store race on shared s[") != std::string::npos);
      CHECK(f.message.find("T.tma_store_wait(0)") != std::string::npos);
      // Only TMA store races: the copy of round k = 1 overwrites the tile that round 0's store
      // (thread 0's) may still read; every block, every element of the tile.
      for (const sim::Finding& g : r.report.findings) {
        CHECK(g.kind == sim::FindingKind::kAsyncRace);
        CHECK(g.threads.front() == 0);
      }
    }
  }

  TEST_CASE("T.tma_store_wait takes a count of 0 to 63 and the store no barrier") {
    auto with = [](const std::string& call) {
      return "import tilelang.language as T\n\n\ndef k():\n    @T.prim_func\n"
             "    def main(B: T.Tensor((32, 32), \"float32\")):\n"
             "        with T.Kernel(1, threads=128) as bx:\n"
             "            s = T.alloc_shared((32, 32), \"float32\")\n"
             "            bar = T.alloc_barrier(1)\n            " +
             call + "\n\n    return main\n";
    };
    CHECK_NOTHROW(parse_kernel(with("T.tma_store_wait(count=1, read=False)"), "k.py"));
    CHECK_THROWS_WITH_AS(parse_kernel(with("T.tma_store_wait(64)"), "k.py"),
                         doctest::Contains("count"), UserError);
    CHECK_THROWS_WITH_AS(parse_kernel(with("T.tma_copy(s, B[0:32, 0:32], barrier=bar)"), "k.py"),
                         doctest::Contains("drop barrier= and wait with T.tma_store_wait()"),
                         UserError);
    CHECK_THROWS_WITH_AS(parse_kernel(with("T.tma_copy(s, B[0:16, 0:32])"), "k.py"),
                         doctest::Contains("does not have the box's shape"), UserError);
  }

  TEST_CASE("the sm90 CUDA stores with cp.async.bulk.tensor and bulk groups") {
    const Target& sm90 = find_target("sm90");
    EmittedSource src = emit_source(
        lower_kernel(parse_kernel(store_kernel(true), "store.py").kernel, sm90).kernel, sm90);
    CHECK(src.code.find("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], "
                        "[%1];") != std::string::npos);
    CHECK(src.code.find("cp.async.bulk.commit_group;") != std::string::npos);
    CHECK(src.code.find("tessel_tma_store_wait<0>();") != std::string::npos);
    CHECK(src.code.find("fence.proxy.async.shared::cta") != std::string::npos);
    REQUIRE(src.tensor_maps.size() == 1);
    CHECK(src.tensor_maps[0].tensor == "B");
    CHECK(src.tensor_maps[0].box == std::vector<int64_t>{32, 32});
    CHECK(src.tensor_maps[0].swizzle == 0);
    std::string dir = (std::filesystem::temp_directory_path() / "tessel_tma_store_nvcc").string();
    std::filesystem::create_directories(dir);
    CompileResult c = compile_device_code(src, sm90, dir);
    if (!c.skipped.empty()) {
      MESSAGE("skipped: " << c.skipped);
    } else {
      CHECK_MESSAGE(c.compiled, c.log);
    }
  }
}
