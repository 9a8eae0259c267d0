// Swizzled TMA tensor maps (sm90): the 32B/64B/128B address functions against hand-computed
// bytes; a TMA load into a tile laid out with TileLang's quarter/half/full-bank swizzle gets
// the matching mode and the simulator puts every element where the layout's readers find it;
// a layout no mode can write is refused at lowering, and one that agrees only for some origins
// fails `tessel verify` with the origin as the counterexample.
#include <doctest/doctest.h>

#include "codegen/emit.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/printer.h"
#include "core/tma_map.h"
#include "interp/thread_interpreter.h"
#include "verify/kernel_proofs.h"

using namespace tessel;

namespace {

/// A (8, cols) f16 tile loaded by TMA, laid out by `maker` ("" : row-major), copied to B.
std::string load_kernel(int cols, const std::string& maker) {
  const std::string c = std::to_string(cols);
  return "import tilelang\nimport tilelang.language as T\n\n\ndef swz():\n    @T.prim_func\n"
         "    def main(A: T.Tensor((8, " +
         c + "), \"float16\"), B: T.Tensor((8, " + c +
         "), \"float16\")):\n"
         "        with T.Kernel(1, threads=128) as bx:\n"
         "            s = T.alloc_shared((8, " +
         c +
         "), \"float16\")\n"
         "            bar = T.alloc_barrier([128])\n" +
         (maker.empty()
              ? std::string()
              : "            T.annotate_layout({s: tilelang.layout." + maker + "(s)})\n") +
         "            tx = T.get_thread_binding()\n"
         "            T.tma_copy(A[0:8, 0:" +
         c +
         "], s, barrier=bar[0])\n"
         "            T.barrier_arrive(bar[0])\n"
         "            T.barrier_wait(bar[0], 0)\n"
         "            for r in T.serial(" +
         std::to_string(8 * cols / 128) +
         "):\n"
         "                e = tx + r * 128\n"
         "                B[e // " +
         c + ", e % " + c + "] = s[e // " + c + ", e % " + c +
         "]\n"
         "\n    return main\n";
}

}  // namespace

TEST_SUITE("tma swizzle") {
  TEST_CASE("the swizzle modes XOR the 16-byte chunk with the 128-byte row, by hand") {
    // Byte 688 = row 5 (688 >> 7) of 128 bytes, chunk 3 ((688 >> 4) & 7), byte 0 of the chunk.
    // 128B: chunk 3 ^ (5 & 7) = 6 -> 5 * 128 + 6 * 16 = 736.
    CHECK(tma_swizzle_byte(688, 128) == 736);
    // 64B: chunk bits [4, 6) = 3 ^ (5 & 3) = 2 -> 640 + 32 = 672.
    CHECK(tma_swizzle_byte(688, 64) == 672);
    // 32B: chunk bit 4 = 1 ^ (5 & 1) = 0; bit 5 (the 2 of chunk 3) stays -> 640 + 32 = 672.
    CHECK(tma_swizzle_byte(688, 32) == 672);
    CHECK(tma_swizzle_byte(688, 0) == 688);
    // Row 8 starts the 128B pattern again (1024 bytes): unchanged; byte 7 of a chunk moves with it.
    CHECK(tma_swizzle_byte(1024, 128) == 1024);
    CHECK(tma_swizzle_byte(128 + 7, 128) == 128 + 16 + 7);
    CHECK(tma_swizzle_name(64) == "CU_TENSOR_MAP_SWIZZLE_64B");
  }

  TEST_CASE("a TMA load into a swizzled tile gets the matching mode and lands where readers look") {
    struct Case {
      int cols;
      const char* maker;
      int mode;
    };
    // Rows of 128, 64, 32 bytes with TileLang's full-, half-, quarter-bank swizzle; and a
    // row-major tile (no swizzle).
    for (Case k : {Case{64, "make_full_bank_swizzled_layout", 128},
                   Case{32, "make_half_bank_swizzled_layout", 64},
                   Case{16, "make_quarter_bank_swizzled_layout", 32}, Case{64, "", 0}}) {
      CAPTURE(k.maker);
      const Target& sm90 = find_target("sm90");
      Kernel kernel = parse_kernel(load_kernel(k.cols, k.maker), "swz.py").kernel;
      LoweredKernel lowered = lower_kernel(kernel, sm90);
      std::string printed = print_kernel(lowered.kernel);
      CAPTURE(printed);
      CHECK(printed.find("A[0, 0], bar[0], 8, " + std::to_string(k.cols) + ", " +
                         std::to_string(k.mode) + ")") != std::string::npos);
      HostTensor a(DataType::f16(), {8, k.cols});
      for (int64_t i = 0; i < a.size(); ++i) a.set(i, static_cast<double>(i % 251) - 125.0);
      TensorMap t = {{"A", a}, {"B", HostTensor(DataType::f16(), {8, k.cols})}};
      ThreadRunOptions o;
      o.target = "sm90";
      o.workers = 1;
      ThreadRunResult r = run_thread_level(lowered.kernel, t, o);
      CHECK(r.report.findings.empty());
      for (int64_t i = 0; i < a.size(); ++i) CHECK(t["B"].at(i) == a.at(i));
      EmittedSource src = emit_source(lowered.kernel, sm90);
      REQUIRE(src.tensor_maps.size() == 1);
      CHECK(src.tensor_maps[0].swizzle == k.mode);
      // The swizzle is a function of the shared address: the tile starts at a multiple of 1024.
      CHECK(src.code.find("extern __shared__ __align__(1024) unsigned char tessel_shared[];") !=
            std::string::npos);
      CHECK(src.code.find("tmap_A_8x" + std::to_string(k.cols) +
                          (k.mode ? "_sw" + std::to_string(k.mode) : std::string())) !=
            std::string::npos);
      // verify proves the box against the layout for every origin.
      KernelProofs proofs = verify_kernel(kernel, sm90);
      bool found = false;
      for (const KernelCheck& c : proofs.checks) {
        if (c.what.find("TMA box of `T.tma_load_2d") == std::string::npos) continue;
        found = true;
        CHECK_MESSAGE(c.result == "proved", c.what << ": " << c.counterexample.value_or(""));
      }
      CHECK(found);
    }
  }

  TEST_CASE("a tile wider than the 128B span is copied in column panels, as TileLang does") {
    // (8, 128) f16 with the full-bank swizzle: rows of 256 bytes stored as two panels of 64
    // columns (8 rows x 128 bytes each, panel 1 from element 512). One 8 x 128 box cannot be
    // swizzled (rows over 128 bytes), so the lowering issues two 8 x 64 boxes with the 128B
    // mode, from columns 0 and 64, through one tensor map; still 2048 bytes expected.
    const Target& sm90 = find_target("sm90");
    Kernel kernel =
        parse_kernel(load_kernel(128, "make_full_bank_swizzled_layout"), "swz.py").kernel;
    LoweredKernel lowered = lower_kernel(kernel, sm90);
    std::string printed = print_kernel(lowered.kernel);
    CAPTURE(printed);
    CHECK(printed.find("T.mbarrier_expect_tx(bar[0], 2048)") != std::string::npos);
    CHECK(printed.find("T.tma_load_2d(s[0], A[0, 0], bar[0], 8, 64, 128)") != std::string::npos);
    CHECK(printed.find("T.tma_load_2d(s[512], A[0, 64], bar[0], 8, 64, 128)") != std::string::npos);
    HostTensor a(DataType::f16(), {8, 128});
    for (int64_t i = 0; i < a.size(); ++i) a.set(i, static_cast<double>(i % 241) - 120.0);
    TensorMap t = {{"A", a}, {"B", HostTensor(DataType::f16(), {8, 128})}};
    ThreadRunOptions o;
    o.target = "sm90";
    o.workers = 1;
    ThreadRunResult r = run_thread_level(lowered.kernel, t, o);
    CHECK(r.report.findings.empty());
    for (int64_t i = 0; i < a.size(); ++i) CHECK(t["B"].at(i) == a.at(i));
    EmittedSource src = emit_source(lowered.kernel, sm90);
    REQUIRE(src.tensor_maps.size() == 1);
    CHECK(src.tensor_maps[0].name == "tmap_A_8x64_sw128");
    bool found = false;
    for (const KernelCheck& c : verify_kernel(kernel, sm90).checks) {
      if (c.what.find("TMA box of `T.tma_load_2d") == std::string::npos) continue;
      found = true;
      CHECK(c.what.find("in column panels of 64") != std::string::npos);
      CHECK_MESSAGE(c.result == "proved", c.what << ": " << c.counterexample.value_or(""));
    }
    CHECK(found);
  }

  TEST_CASE("a tile no tensor map can write is refused at lowering, naming the element") {
    // A (8, 128) f16 row-major tile has 256-byte rows; a box of 64 columns lands densely in
    // 128-byte rows, so box row 1 starts at element 64 where the tile keeps [0, 64].
    std::string src =
        "import tilelang.language as T\n\n\ndef k():\n    @T.prim_func\n"
        "    def main(A: T.Tensor((8, 128), \"float16\")):\n"
        "        with T.Kernel(1, threads=128) as bx:\n"
        "            s = T.alloc_shared((8, 128), \"float16\")\n"
        "            bar = T.alloc_barrier([128])\n"
        "            T.tma_copy(A[0:8, 0:64], s[0:8, 0:64], barrier=bar[0])\n"
        "\n    return main\n";
    Kernel kernel = parse_kernel(src, "k.py").kernel;
    CHECK_THROWS_WITH_AS(lower_kernel(kernel, find_target("sm90")),
                         doctest::Contains("no TMA swizzle mode (none, 32B, 64B, 128B) places the "
                                           "box as 's' is laid out: with no swizzle, box element "
                                           "64 (s[1, 0]) lands at element 64 of the tile's "
                                           "storage, but its row-major layout stores it at 128"),
                         UserError);
  }

  TEST_CASE("a layout that agrees with the box only at some origins fails verify with one") {
    // Three stages of 4 rows x 128 bytes (512 bytes each), each swizzled from its own start:
    // chunk (j // 8) ^ row. The 128B mode swizzles by the absolute row (bits 7-9 of the
    // address): stage 0 rows 0-3 and stage 2 rows 8-11 (1024 bytes on) agree, stage 1's rows
    // 4-7 do not: its element [1, 0, 0] is stored at 256, but the box's first element lands
    // at byte 512 ^ (4 << 4) = 576, element 288. Lowering checks stage 0 and picks 128B.
    std::string src =
        "import tilelang.language as T\n\n\ndef k():\n    @T.prim_func\n"
        "    def main(A: T.Tensor((12, 64), \"float16\"), B: T.Tensor((12, 64), \"float16\")):\n"
        "        with T.Kernel(1, threads=128) as bx:\n"
        "            t = T.alloc_shared((3, 4, 64), \"float16\")\n"
        "            bar = T.alloc_barrier([128])\n"
        "            T.annotate_layout({t: T.Layout([3, 4, 64], lambda s, i, j: s * 256 + i * 64 "
        "+ ((j // 8) ^ i) * 8 + j % 8)})\n"
        "            tx = T.get_thread_binding()\n"
        "            for k in T.serial(3):\n"
        "                T.tma_copy(A[k * 4:(k + 1) * 4, 0:64], t[k, :, :], barrier=bar[0])\n"
        "                T.barrier_arrive(bar[0])\n"
        "                T.barrier_wait(bar[0], k % 2)\n"
        "                for r in T.serial(2):\n"
        "                    e = tx + r * 128\n"
        "                    B[k * 4 + e // 64, e % 64] = t[k, e // 64, e % 64]\n"
        "\n    return main\n";
    const Target& sm90 = find_target("sm90");
    Kernel kernel = parse_kernel(src, "k.py").kernel;
    std::string printed = print_kernel(lower_kernel(kernel, sm90).kernel);
    CHECK(printed.find("bar[0], 4, 64, 128)") != std::string::npos);
    KernelProofs proofs = verify_kernel(kernel, sm90);
    bool found = false;
    for (const KernelCheck& c : proofs.checks) {
      if (c.what.find("TMA box of `T.tma_load_2d") == std::string::npos) continue;
      found = true;
      CHECK(c.result == "failed");
      REQUIRE(c.counterexample);
      CAPTURE(*c.counterexample);
      CHECK(c.counterexample->find("but the TMA box puts it at element") != std::string::npos);
      CHECK(c.counterexample->find("k = 1") != std::string::npos);
    }
    CHECK(found);
  }
}
