// The int8 tensor-core instruction mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32: its fragment
// layouts, its execution (exact int32 sums that wrap), its CUDA text, and T.gemm on int8
// operands with an int32 accumulator lowered to it on sm80. Expected positions come from the PTX
// ISA ("Matrix Fragments for mma.m16n8k32", .s8): g = lane >> 2, t = lane % 4;
//   A a_i: row g for i in [0, 4) or [8, 12), else g + 8; col 4t + (i & 3), + 16 for i >= 8;
//   B b_i: row (k) 4t + (i & 3), + 16 for i >= 4; col (n) g;
//   C/D c_i: row g + 8 (i >> 1), col 2t + (i & 1).
#include <doctest/doctest.h>

#include <climits>
#include <nlohmann/json.hpp>

#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/instruction_family.h"
#include "core/passes.h"
#include "core/printer.h"
#include "core/target.h"
#include "examples/registry.h"
#include "tests/cli_runner.h"
#include "tests/null_warp.h"

using namespace tessel;

namespace {

/// One warp whose four register operands (D, A, B, C) are arrays of cells per lane.
class MmaWarp final : public testing::NullWarp {
 public:
  std::array<std::vector<std::vector<uint64_t>>, 4> regs;  ///< [operand][lane][element]

  MmaWarp() {
    const int elements[4] = {4, 16, 8, 4};
    for (int o = 0; o < 4; ++o) regs[o].assign(32, std::vector<uint64_t>(elements[o], 0));
  }
  /// Integer cells hold the value as int64 (the interpreter's convention).
  void set(int o, int lane, int e, int64_t v) { regs[o][lane][e] = static_cast<uint64_t>(v); }
  int64_t get(int o, int lane, int e) const { return static_cast<int64_t>(regs[o][lane][e]); }

  DataType dtype(int o) const override {
    return o == 1 || o == 2 ? DataType::i8() : DataType::i32();
  }
  uint64_t& cell(int operand, int lane, int64_t flat) override { return regs[operand][lane][flat]; }
};

// The PTX ISA's tables, written out independently of core/builtin_layouts.
int a_row(int lane, int i) { return lane / 4 + ((i >= 4 && i < 8) || i >= 12 ? 8 : 0); }
int a_col(int lane, int i) { return lane % 4 * 4 + (i & 3) + (i >= 8 ? 16 : 0); }
int b_k(int lane, int i) { return lane % 4 * 4 + (i & 3) + (i >= 4 ? 16 : 0); }
int b_n(int lane) { return lane / 4; }
int c_row(int lane, int i) { return lane / 4 + 8 * (i >> 1); }
int c_col(int lane, int i) { return lane % 4 * 2 + (i & 1); }

/// Puts A (16x32), B (32x8) and C (16x8) into the warp's registers by the PTX tables.
void load(MmaWarp& w, const std::function<int(int, int)>& a, const std::function<int(int, int)>& b,
          const std::function<int64_t(int, int)>& c) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 16; ++i) w.set(1, lane, i, a(a_row(lane, i), a_col(lane, i)));
    for (int i = 0; i < 8; ++i) w.set(2, lane, i, b(b_k(lane, i), b_n(lane)));
    for (int i = 0; i < 4; ++i) w.set(3, lane, i, c(c_row(lane, i), c_col(lane, i)));
  }
}

}  // namespace

TEST_SUITE("mma.m16n8k32 int8") {
  TEST_CASE("the A and B fragments put elements where the PTX ISA tables say") {
    Fragment a = mma_m16n8k32_a(DataType::i8());
    // (9, 5): row g + 8 with g = 1, col 4t + 1 with t = 1 -> lane 5, a_5 (i in [4, 8)).
    CHECK(a.map_fragment({9, 5}) == std::pair<int64_t, int64_t>{5, 5});
    // (3, 22): row g = 3, col 16 + 4 * 1 + 2 -> lane 13, a_10 (i in [8, 12)).
    CHECK(a.map_fragment({3, 22}) == std::pair<int64_t, int64_t>{13, 10});
    // (15, 31): g = 7, row + 8, col 16 + 4 * 3 + 3 -> lane 31, a_15.
    CHECK(a.map_fragment({15, 31}) == std::pair<int64_t, int64_t>{31, 15});
    Fragment b = mma_m16n8k32_b(DataType::i8());
    // (k 21, n 6): g = 6, k = 16 + 4 * 1 + 1 -> lane 25, b_5.
    CHECK(b.map_fragment({21, 6}) == std::pair<int64_t, int64_t>{25, 5});
    // (k 14, n 7): g = 7, k = 4 * 3 + 2 -> lane 31, b_2.
    CHECK(b.map_fragment({14, 7}) == std::pair<int64_t, int64_t>{31, 2});
    // Every table entry against the PTX formulas.
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 16; ++i) {
        CHECK(a.map_fragment({a_row(lane, i), a_col(lane, i)}) ==
              std::pair<int64_t, int64_t>{lane, i});
      }
      for (int i = 0; i < 8; ++i)
        CHECK(b.map_fragment({b_k(lane, i), b_n(lane)}) == std::pair<int64_t, int64_t>{lane, i});
    }
    CHECK_THROWS_AS(mma_m16n8k32_a(DataType::f16()), UserError);
  }

  TEST_CASE("the table has the instruction, found by its int8 shape") {
    const IntrinsicInfo& info = intrinsic_info(IntrinsicId::kMmaM16N8K32S8);
    CHECK(info.name == "mma_m16n8k32_s8");
    CHECK(info.cuda == "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32");
    CHECK(info.home->name() == "mma.sync");
    CHECK(find_matrix_intrinsic(true, 16, 8, 32, DataType::i8()) == IntrinsicId::kMmaM16N8K32S8);
    CHECK_FALSE(find_matrix_intrinsic(true, 16, 8, 32, DataType::f16()));
  }

  TEST_CASE("it computes D = A B + C exactly in int32") {
    const IntrinsicInfo& info = intrinsic_info(IntrinsicId::kMmaM16N8K32S8);
    auto a = [](int i, int k) { return (i * 7 + k * 3) % 256 - 128; };  // every int8 value
    auto b = [](int k, int n) { return (k * 5 + n * 11) % 255 - 127; };
    auto c = [](int i, int n) { return int64_t{1000} * i - 37 * n; };
    MmaWarp w;
    load(w, a, b, c);
    info.home->execute(info, w);
    for (int lane = 0; lane < 32; ++lane) {
      for (int e = 0; e < 4; ++e) {
        int i = c_row(lane, e), n = c_col(lane, e);
        int64_t want = c(i, n);
        for (int k = 0; k < 32; ++k) want += a(i, k) * b(k, n);
        INFO("lane " << lane << " d_" << e << " = D[" << i << ", " << n << "]");
        CHECK(w.get(0, lane, e) == want);
      }
    }
  }

  TEST_CASE("a sum past the int32 range wraps (no .satfinite)") {
    // D[0, 0] = INT32_MAX + 1 * 1 = 2^31, which wraps to -2^31; every other product is 0.
    const IntrinsicInfo& info = intrinsic_info(IntrinsicId::kMmaM16N8K32S8);
    MmaWarp w;
    load(
        w, [](int i, int k) { return i == 0 && k == 0 ? 1 : 0; },
        [](int k, int n) { return k == 0 && n == 0 ? 1 : 0; },
        [](int i, int n) { return i == 0 && n == 0 ? int64_t{INT32_MAX} : 0; });
    info.home->execute(info, w);
    CHECK(w.get(0, 0, 0) == int64_t{INT32_MIN});  // lane 0, d_0 is D[0, 0]
    CHECK(w.get(0, 0, 1) == 0);
  }

  TEST_CASE("its CUDA helper passes int32 registers; it has no HIP spelling") {
    const IntrinsicInfo& info = intrinsic_info(IntrinsicId::kMmaM16N8K32S8);
    std::string cuda = info.home->helper(Language::kCuda, info);
    CHECK(cuda.find("void tessel_mma_m16n8k32_s8(int* d, const void* a, const void* b, const "
                    "int* c)") != std::string::npos);
    // D 4 regs, A 4 (16 int8), B 2 (8 int8), C 4.
    CHECK(cuda.find("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, "
                    "%6, %7}, {%8, %9}, {%10, %11, %12, %13};") != std::string::npos);
    CHECK(cuda.find("\"=r\"(d[0])") != std::string::npos);
    CHECK(cuda.find("\"r\"(c[3])") != std::string::npos);
    CHECK_THROWS_AS(info.home->helper(Language::kHip, info), UserError);
  }

  TEST_CASE("an int8 x int8 -> int32 gemm lowers to mma.m16n8k32 on sm80 only") {
    const Example* e = find_example("dequant_gemm_int2");
    REQUIRE(e != nullptr);
    Kernel k = e->build(make_params(*e, {}));
    std::string sm80 = print_kernel(lower_kernel(k, find_target("sm80")).kernel);
    CHECK(sm80.find("T.mma_m16n8k32_s8(") != std::string::npos);
    // gfx942 takes its own int8 MFMA (tests/test_mfma_int8.cpp), never the NVIDIA instruction.
    std::string gfx = print_kernel(lower_kernel(k, find_target("gfx942")).kernel);
    CHECK(gfx.find("mma_m16n8k32") == std::string::npos);
  }

  TEST_CASE("the int2 x int8 GEMM on sm80 equals its reference at thread level, conflict-free") {
    // Defaults: 256 x 256 x 512, 128 x 128 x 64 tiles: 4 blocks, 8 k-steps of two mma k-steps.
    CliResult r = run_tessel({"run", "dequant_gemm_int2", "--level", "thread", "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["max_abs_err"] == 0);  // int32: exact
    CHECK(j["sim"]["shared"]["bank_conflicts"] == 0);
    CHECK(j["sim"]["findings"].empty());
  }
}  // TEST_SUITE
