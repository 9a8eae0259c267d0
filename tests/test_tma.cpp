// TMA loads (sm90): T.tma_copy of a 2-d box into a two-stage ring, completed on full mbarriers,
// read by a consumer warpgroup. The right kernel copies exactly, with zeros past the tensor's
// edge; a read before the phase completes is a TMA race; a missing arrive is a deadlock that
// says how many bytes landed; the CUDA spells cp.async.bulk.tensor with a tensor map parameter
// and compiles with nvcc -arch=sm_90a.
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

/// Producer (warpgroup 1) loads A's 32 x 16 column tiles k = 0, 1, 2 by TMA; A has 40 columns,
/// so tile 2 hangs 8 columns over the edge. The consumer writes B = 2 * tile.
std::string tma_kernel(bool consumer_waits = true, bool producer_arrives = true) {
  return std::string(
             "import tilelang.language as T\n"
             "\n"
             "\n"
             "def tma_ws():\n"
             "    @T.prim_func\n"
             "    def main(A: T.Tensor((32, 40), \"float32\"), B: T.Tensor((32, 48), "
             "\"float32\")):\n"
             "        with T.Kernel(1, threads=256) as bx:\n"
             "            buf = T.alloc_shared((2, 32, 16), \"float32\")\n"
             "            full = T.alloc_barrier([128, 128])\n"
             "            empty = T.alloc_barrier([128, 128])\n"
             "            tx = T.get_thread_binding()\n"
             "            for k in T.serial(3):\n"
             "                with T.ws(1):\n"
             "                    T.barrier_wait(empty[k % 2], (k // 2 + 1) % 2)\n"
             "                    T.tma_copy(A[0:32, k * 16:(k + 1) * 16], buf[k % 2, :, :], "
             "barrier=full[k % 2])\n") +
         (producer_arrives ? "                    T.barrier_arrive(full[k % 2])\n" : "") +
         "                with T.ws(0):\n" +
         (consumer_waits ? "                    T.barrier_wait(full[k % 2], (k // 2) % 2)\n" : "") +
         "                    for r in T.serial(4):\n"
         "                        e = tx + r * 128\n"
         "                        B[e // 16, k * 16 + e % 16] = buf[k % 2, e // 16, e % 16] * 2.0\n"
         "                    T.barrier_arrive(empty[k % 2])\n"
         "\n"
         "    return main\n";
}

double a_value(int64_t i, int64_t c) { return static_cast<double>((i * 40 + c) % 23) - 11.0; }

TensorMap inputs() {
  HostTensor a(DataType::f32(), {32, 40});
  for (int64_t i = 0; i < 32; ++i) {
    for (int64_t c = 0; c < 40; ++c) a.set(i * 40 + c, a_value(i, c));
  }
  return {{"A", a}, {"B", HostTensor(DataType::f32(), {32, 48})}};
}

}  // namespace

TEST_SUITE("tma") {
  TEST_CASE("T.tma_copy loads boxes onto full barriers, zero-filling past the edge") {
    for (const char* s : {"in-order", "reverse", "random:1", "random:7"}) {
      CAPTURE(s);
      TensorMap t = inputs();
      ThreadRunResult r = run_sm90(tma_kernel(), t, s);
      CHECK(r.report.findings.empty());
      // Columns 0..39 are A's, doubled; 40..47 lie past A's edge: TMA fills them with zeros.
      for (int64_t i = 0; i < 32; ++i) {
        for (int64_t c = 0; c < 48; ++c) {
          CHECK(t["B"].at(i * 48 + c) == (c < 40 ? 2.0 * a_value(i, c) : 0.0));
        }
      }
    }
  }

  TEST_CASE("T.tma_copy is expect_tx and tma_load_2d by the first thread of the warpgroup") {
    std::string printed = print_kernel(parse_kernel(tma_kernel(), "tma.py").kernel);
    CAPTURE(printed);
    // 32 x 16 float32 = 2048 bytes, announced on the barrier the box completes on.
    CHECK(printed.find("if tx == 128:") != std::string::npos);
    CHECK(printed.find("T.mbarrier_expect_tx(full[k % 2], 2048)") != std::string::npos);
    // The trailing 0: no swizzle yet; flatten_buffers picks the mode the tile's layout needs.
    CHECK(printed.find("T.tma_load_2d(buf[k % 2, 0, 0], A[0, k * 16], full[k % 2], 32, 16, 0)") !=
          std::string::npos);
  }

  TEST_CASE("reading the tile before its phase completes is a TMA race") {
    TensorMap t = inputs();
    // Reverse order: the producer's TMA lands tiles 0 and 1 before the consumer, which does not
    // wait, reads them.
    ThreadRunResult r = run_sm90(tma_kernel(/*consumer_waits=*/false), t, "reverse");
    auto races = of_kind(r, sim::FindingKind::kAsyncRace);
    REQUIRE_FALSE(races.empty());
    CHECK(races[0]->buffer == "buf");
    CHECK(races[0]->message.find("TMA race on shared buf") != std::string::npos);
    CHECK(races[0]->message.find("the TMA copy completing on mbarrier full[") != std::string::npos);
    CHECK(races[0]->message.find("Wait for the phase (T.barrier_wait(bar, 0))") !=
          std::string::npos);
  }

  TEST_CASE("bytes landed but no arrivals: a deadlock that says so") {
    TensorMap t = inputs();
    ThreadRunResult r = run_sm90(tma_kernel(true, /*producer_arrives=*/false), t, "in-order");
    auto d = of_kind(r, sim::FindingKind::kDeadlock);
    REQUIRE(d.size() == 1);
    // Tile 0's 2048 bytes landed on full[0], but none of its 128 arrivals came: the consumer
    // waits forever; the producer loaded tiles 0 and 1 and waits for empty[0] in round 2.
    CHECK(d[0]->message.find("for the phase of parity 0: 'full[0]' is in phase 0 (parity 0) with "
                             "0 of 128 arrivals, 2048 of 2048 expected transaction bytes landed") !=
          std::string::npos);
  }

  TEST_CASE("a TMA box must fit its destination and have 16-byte rows") {
    auto with = [](const std::string& call) {
      return "import tilelang.language as T\n\n\ndef k():\n    @T.prim_func\n"
             "    def main(A: T.Tensor((32, 40), \"float32\")):\n"
             "        with T.Kernel(1, threads=128) as bx:\n"
             "            s = T.alloc_shared((32, 16), \"float32\")\n"
             "            bar = T.alloc_barrier(1)\n            " +
             call + "\n\n    return main\n";
    };
    CHECK_NOTHROW(parse_kernel(with("T.tma_copy(A[0:32, 0:16], s, barrier=bar)"), "k.py"));
    // 2 float32 = 8 bytes per box row: TMA needs multiples of 16.
    CHECK_THROWS_WITH_AS(
        parse_kernel(with("T.tma_copy(A[0:32, 0:2], s[0:32, 0:2], barrier=bar)"), "k.py"),
        doctest::Contains("TMA needs a multiple of 16 bytes"), UserError);
    CHECK_THROWS_WITH_AS(parse_kernel(with("T.tma_copy(A[0:32, 0:16], s)"), "k.py"),
                         doctest::Contains("T.tma_copy needs barrier=bar"), UserError);
    CHECK_THROWS_WITH_AS(parse_kernel(with("T.tma_copy(A[0:16, 0:16], s, barrier=bar)"), "k.py"),
                         doctest::Contains("does not have the box's shape"), UserError);
  }

  TEST_CASE("a tile operator inside T.ws covers its whole tile with the branch's threads") {
    // T.copy partitions its 64 x 64 tile over the 128 threads of `with T.ws(1)` (threads
    // 128-255), the T.Parallel over those of `with T.ws(0)`: every element of B is A's (the
    // lowering once partitioned over all 256 threads and lost half of the tile).
    std::string src =
        "import tilelang.language as T\n\n\ndef ws_tile():\n    @T.prim_func\n"
        "    def main(A: T.Tensor((64, 64), \"float32\"), B: T.Tensor((64, 64), \"float32\")):\n"
        "        with T.Kernel(1, threads=256) as bx:\n"
        "            s = T.alloc_shared((64, 64), \"float32\")\n"
        "            full = T.alloc_barrier([128])\n"
        "            with T.ws(1):\n"
        "                T.copy(A[0, 0], s)\n"
        "                T.barrier_arrive(full[0])\n"
        "            with T.ws(0):\n"
        "                T.barrier_wait(full[0], 0)\n"
        "                for i, j in T.Parallel(64, 64):\n"
        "                    B[i, j] = s[i, j]\n"
        "\n    return main\n";
    HostTensor a(DataType::f32(), {64, 64});
    for (int64_t i = 0; i < a.size(); ++i) a.set(i, static_cast<double>(i % 97) - 48);
    TensorMap t = {{"A", a}, {"B", HostTensor(DataType::f32(), {64, 64})}};
    ThreadRunResult r = run_sm90(src, t, "in-order");
    CHECK(r.report.findings.empty());
    int64_t wrong = 0;
    for (int64_t i = 0; i < a.size(); ++i) wrong += t.at("B").at(i) != a.at(i);
    CHECK(wrong == 0);
  }

  TEST_CASE("the sm90 CUDA copies with cp.async.bulk.tensor through a tensor map parameter") {
    const Target& sm90 = find_target("sm90");
    EmittedSource src =
        emit_source(lower_kernel(parse_kernel(tma_kernel(), "tma.py").kernel, sm90).kernel, sm90);
    CHECK(src.code.find("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::"
                        "bytes") != std::string::npos);
    CHECK(src.code.find("const __grid_constant__ CUtensorMap tmap_A_32x16") != std::string::npos);
    REQUIRE(src.tensor_maps.size() == 1);
    CHECK(src.tensor_maps[0].tensor == "A");
    CHECK(src.tensor_maps[0].box == std::vector<int64_t>{32, 16});
    std::string dir = (std::filesystem::temp_directory_path() / "tessel_tma_nvcc").string();
    std::filesystem::create_directories(dir);
    CompileResult c = compile_device_code(src, sm90, dir);
    if (!c.skipped.empty()) {
      MESSAGE("skipped: " << c.skipped);
    } else {
      CHECK_MESSAGE(c.compiled, c.log);
    }
  }
}
