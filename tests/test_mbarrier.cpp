// mbarriers and explicit warp specialisation (sm90): a producer warpgroup fills a two-stage
// shared buffer and a consumer warpgroup reads it, ordered by full/empty barriers. The right
// kernel runs at thread level with no finding under several schedules; a wrong arrival count,
// a wrong parity, a missing wait and a missing arrive are found as deadlocks or races with
// messages that name the barrier, its arrivals and the waiting warps.
#include <doctest/doctest.h>

#include <filesystem>

#include "codegen/emit.h"
#include "codegen/toolchain.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/printer.h"
#include "interp/thread_interpreter.h"
#include "interp/tile_interpreter.h"
#include "tests/sm90_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

struct Variant {
  std::string full_count = "128";                     ///< arrivals each full phase expects
  std::string consumer_parity = "(k // stages) % 2";  ///< the phase the consumer waits for
  bool consumer_waits = true;
  bool consumer_arrives = true;
};

/// Producer (warpgroup 1) copies A through buf into the consumer (warpgroup 0), which writes
/// B = 2 A; 512 elements in 4 rounds of 128 over 2 stages.
std::string ws_kernel(const Variant& v) {
  return std::string(
             "import tilelang.language as T\n"
             "\n"
             "\n"
             "def ws_copy(N=512, stages=2):\n"
             "    @T.prim_func\n"
             "    def main(A: T.Tensor((N,), \"float32\"), B: T.Tensor((N,), \"float32\")):\n"
             "        with T.Kernel(1, threads=256) as bx:\n"
             "            buf = T.alloc_shared((stages, 128), \"float32\")\n"
             "            full = T.alloc_barrier([") +
         v.full_count + ", " + v.full_count +
         "])\n"
         "            empty = T.alloc_barrier([128, 128])\n"
         "            tx = T.get_thread_binding()\n"
         "            for k in T.serial(N // 128):\n"
         "                with T.ws(1):\n"
         "                    T.barrier_wait(empty[k % stages], (k // stages + 1) % 2)\n"
         "                    buf[k % stages, tx - 128] = A[k * 128 + tx - 128]\n"
         "                    T.barrier_arrive(full[k % stages])\n"
         "                with T.ws(0):\n" +
         (v.consumer_waits
              ? "                    T.barrier_wait(full[k % stages], " + v.consumer_parity + ")\n"
              : std::string()) +
         "                    B[k * 128 + tx] = buf[k % stages, tx] * 2.0\n" +
         (v.consumer_arrives ? "                    T.barrier_arrive(empty[k % stages])\n" : "") +
         "\n"
         "    return main\n";
}

TensorMap inputs() {
  HostTensor a(DataType::f32(), {512});
  for (int64_t i = 0; i < 512; ++i) a.set(i, static_cast<double>(i % 37) - 18.0);
  return {{"A", a}, {"B", HostTensor(DataType::f32(), {512})}};
}

const char* kSchedules[] = {"in-order", "reverse", "random:1", "random:2"};

}  // namespace

TEST_SUITE("mbarrier") {
  TEST_CASE("a warp-specialised two-stage copy is right at both levels, with no finding") {
    for (const char* s : kSchedules) {
      CAPTURE(s);
      TensorMap t = inputs();
      ThreadRunResult r = run_sm90(ws_kernel({}), t, s);
      CHECK(r.report.findings.empty());
      for (int64_t i = 0; i < 512; ++i) CHECK(t["B"].at(i) == 2.0 * (i % 37 - 18.0));
    }
    TensorMap tile = inputs();
    run_tile_level(parse_kernel(ws_kernel({}), "ws.py").kernel, tile);
    for (int64_t i = 0; i < 512; ++i) CHECK(tile["B"].at(i) == 2.0 * (i % 37 - 18.0));
  }

  TEST_CASE("the front end lowers T.alloc_barrier, T.ws and the aliases as written") {
    std::string printed = print_kernel(parse_kernel(ws_kernel({}), "ws.py").kernel);
    CAPTURE(printed);
    for (const char* want : {"T.mbarrier_init(full[0], 128)", "T.mbarrier_init(empty[1], 128)",
                             "if tx >= 128 and tx < 256:", "if tx >= 0 and tx < 128:",
                             "T.mbarrier_wait_parity(empty[k % 2], (k // 2 + 1) % 2)",
                             "T.mbarrier_arrive(full[k % 2])"}) {
      CHECK_MESSAGE(printed.find(want) != std::string::npos, want);
    }
  }

  TEST_CASE("a wrong arrival count is a deadlock naming the barrier, its arrivals and the warps") {
    Variant v;
    v.full_count = "256";  // only the 128 producer threads arrive
    for (const char* s : kSchedules) {
      CAPTURE(s);
      TensorMap t = inputs();
      ThreadRunResult r = run_sm90(ws_kernel(v), t, s);
      auto d = of_kind(r, sim::FindingKind::kDeadlock);
      REQUIRE(d.size() == 1);
      const std::string& m = d[0]->message;
      CAPTURE(m);
      // Producers fill stages 0 and 1 (rounds 0, 1), then wait for empty[0]'s phase 0, which
      // the consumers never complete: they wait for full[0], which has 128 of 256 arrivals.
      CHECK(m.find("deadlock in block (0,): every live warp waits") != std::string::npos);
      CHECK(m.find("warps 0-3 (threads 0-127) wait at T.mbarrier_wait_parity") !=
            std::string::npos);
      CHECK(m.find("for the phase of parity 0: 'full[0]' is in phase 0 (parity 0) with 128 of "
                   "256 arrivals (threads 128-255), 0 of 0 expected transaction bytes landed") !=
            std::string::npos);
      CHECK(m.find("warps 4-7 (threads 128-255) wait at T.mbarrier_wait_parity") !=
            std::string::npos);
      CHECK(m.find("for the phase of parity 0: 'empty[0]' is in phase 0 (parity 0) with 0 of "
                   "128 arrivals") != std::string::npos);
    }
  }

  TEST_CASE("a missing arrive is a deadlock of the producers on the empty barrier") {
    Variant v;
    v.consumer_arrives = false;
    TensorMap t = inputs();
    ThreadRunResult r = run_sm90(ws_kernel(v), t, "in-order");
    auto d = of_kind(r, sim::FindingKind::kDeadlock);
    REQUIRE(d.size() == 1);
    // The producers fill stages 0 and 1, then wait in round 2 for empty[0], to which nobody
    // arrives; the consumers read rounds 0 and 1, then wait in round 2 for the second phase
    // (parity 1) of full[0], which only the stuck producers could complete.
    const std::string& m = d[0]->message;
    CAPTURE(m);
    CHECK(m.find("warps 4-7 (threads 128-255) wait at") != std::string::npos);
    CHECK(m.find("for the phase of parity 0: 'empty[0]' is in phase 0 (parity 0) with 0 of 128 "
                 "arrivals") != std::string::npos);
    CHECK(m.find("warps 0-3 (threads 0-127) wait at") != std::string::npos);
    CHECK(m.find("for the phase of parity 1: 'full[0]' is in phase 1 (parity 1) with 0 of 128 "
                 "arrivals") != std::string::npos);
  }

  TEST_CASE("a wrong parity is found: the consumer passes too early or waits forever") {
    Variant v;
    v.consumer_parity = "(k // stages + 1) % 2";  // the producer's parity, one phase off
    for (const char* s : kSchedules) {
      CAPTURE(s);
      TensorMap t = inputs();
      ThreadRunResult r = run_sm90(ws_kernel(v), t, s);
      CHECK_FALSE(r.report.findings.empty());
      CHECK(of_kind(r, sim::FindingKind::kDeadlock).size() == 1);
    }
  }

  TEST_CASE("a read without the wait is a race with the producer's write") {
    Variant v;
    v.consumer_waits = false;
    TensorMap t = inputs();
    // Reverse order: the producers write stages 0 and 1 first, then the consumers read them
    // with nothing ordering the read after the write.
    ThreadRunResult r = run_sm90(ws_kernel(v), t, "reverse");
    auto races = of_kind(r, sim::FindingKind::kRace);
    REQUIRE_FALSE(races.empty());
    CHECK(races[0]->buffer == "buf");
    CHECK(races[0]->message.find("reads it by") != std::string::npos);
  }

  TEST_CASE("mbarriers are Hopper instructions: sm80 refuses them by name") {
    ParsedKernel p = parse_kernel(ws_kernel({}), "ws.py");
    TensorMap t = inputs();
    ThreadRunOptions o;
    o.target = "sm80";
    CHECK_THROWS_WITH_AS(run_thread_level(lower_kernel(p.kernel, find_target("sm80")).kernel, t, o),
                         doctest::Contains("does not have; run with --target sm90"), UserError);
  }

  TEST_CASE("emit refuses mbarriers for sm80 by name") {
    const Target& sm80 = find_target("sm80");
    Kernel k = lower_kernel(parse_kernel(ws_kernel({}), "ws.py").kernel, sm80).kernel;
    CHECK_THROWS_WITH_AS(emit_source(k, sm80),
                         doctest::Contains("T.mbarrier_init (mbarrier.init.shared::cta.b64) is a "
                                           "Hopper instruction that target sm80 does not have"),
                         UserError);
  }

  TEST_CASE("a barrier used before its init is an mbarrier finding") {
    std::string src =
        "import tilelang.language as T\n"
        "\n"
        "\n"
        "def k():\n"
        "    @T.prim_func\n"
        "    def main(A: T.Tensor((32,), \"float32\")):\n"
        "        with T.Kernel(1, threads=32) as bx:\n"
        "            bar = T.alloc_shared((1,), \"int64\")\n"
        "            T.mbarrier_arrive(bar[0])\n"
        "            A[T.get_thread_binding()] = 1.0\n"
        "\n"
        "    return main\n";
    TensorMap t{{"A", HostTensor(DataType::f32(), {32})}};
    ThreadRunResult r = run_sm90(src, t, "in-order");
    auto m = of_kind(r, sim::FindingKind::kMbarrier);
    REQUIRE(m.size() == 1);
    CHECK(m[0]->message.find("mbarrier bar[0] is used before it is initialised") !=
          std::string::npos);
  }

  TEST_CASE("setmaxnreg takes a multiple of 8 from 24 to 256") {
    auto with = [](const std::string& line) {
      return "import tilelang.language as T\n\n\ndef k():\n    @T.prim_func\n"
             "    def main(A: T.Tensor((128,), \"float32\")):\n"
             "        with T.Kernel(1, threads=128) as bx:\n            " +
             line + "\n\n    return main\n";
    };
    CHECK_NOTHROW(parse_kernel(with("T.set_max_nreg(240, 1)"), "k.py"));
    CHECK_NOTHROW(parse_kernel(with("T.dec_max_nreg(24)"), "k.py"));
    CHECK_THROWS_WITH_AS(parse_kernel(with("T.inc_max_nreg(250)"), "k.py"),
                         doctest::Contains("setmaxnreg takes a multiple of 8 from 24 to 256"),
                         UserError);
  }

  TEST_CASE("the sm90 CUDA spells the mbarrier PTX and compiles with nvcc -arch=sm_90a") {
    const Target& sm90 = find_target("sm90");
    EmittedSource src =
        emit_source(lower_kernel(parse_kernel(ws_kernel({}), "ws.py").kernel, sm90).kernel, sm90);
    for (const char* want : {"mbarrier.init.shared::cta.b64", "mbarrier.arrive.shared::cta.b64",
                             "mbarrier.try_wait.parity.shared::cta.b64"}) {
      CHECK_MESSAGE(src.code.find(want) != std::string::npos, want);
    }
    std::string dir = (std::filesystem::temp_directory_path() / "tessel_mbarrier_nvcc").string();
    std::filesystem::create_directories(dir);
    CompileResult c = compile_device_code(src, sm90, dir);
    if (!c.skipped.empty()) {
      MESSAGE("skipped: " << c.skipped);
    } else {
      CHECK_MESSAGE(c.compiled, c.log);
    }
  }
}
