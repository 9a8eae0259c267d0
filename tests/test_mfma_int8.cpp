// The int8 MFMA instructions, v_mfma_i32_16x16x32_i8 (CDNA3, gfx942) and v_mfma_i32_16x16x16i8
// (CDNA2, gfx90a): their fragment layouts, execution (exact int32 sums that wrap), HIP text, and
// T.gemm on int8 operands with an int32 accumulator lowered to them. Expected positions come
// from the AMD Matrix Instruction Calculator, written out here independently of the family:
//   16x16xK, per = K / 4 int8 a lane: A[i][k] in lane i + 16 (k / per), byte k % per;
//   B[k][j] in lane j + 16 (k / per), byte k % per; D register r of lane l = D[4 (l / 16) + r][l %
//   16].
#include <doctest/doctest.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "codegen/emit.h"
#include "codegen/toolchain.h"
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

/// One wave64 whose four register operands (D, A, B, C) are arrays of cells per lane.
class MfmaWarp final : public testing::NullWarp {
 public:
  std::array<std::vector<std::vector<uint64_t>>, 4> regs;  ///< [operand][lane][element]
  int per;                                                 ///< int8 a lane in A and B

  explicit MfmaWarp(int k) : per(k / 4) {
    const int elements[4] = {4, per, per, 4};
    for (int o = 0; o < 4; ++o) regs[o].assign(64, std::vector<uint64_t>(elements[o], 0));
  }
  int warp_size() const override { return 64; }
  uint64_t mask() const override { return ~uint64_t{0}; }
  void set(int o, int lane, int e, int64_t v) { regs[o][lane][e] = static_cast<uint64_t>(v); }
  int64_t get(int o, int lane, int e) const { return static_cast<int64_t>(regs[o][lane][e]); }
  DataType dtype(int o) const override {
    return o == 1 || o == 2 ? DataType::i8() : DataType::i32();
  }
  uint64_t& cell(int operand, int lane, int64_t flat) override { return regs[operand][lane][flat]; }
};

// The calculator's tables for 16x16xK.
int ab_k(int lane, int e, int per) { return lane / 16 * per + e; }
int d_row(int lane, int r) { return lane / 16 * 4 + r; }
int d_col(int lane) { return lane % 16; }

/// Fills A (16 x K), B (K x 16) and C (16 x 16) by the calculator's tables and executes.
void run(const IntrinsicInfo& info, MfmaWarp& w, const std::function<int(int, int)>& a,
         const std::function<int(int, int)>& b, const std::function<int64_t(int, int)>& c) {
  for (int lane = 0; lane < 64; ++lane) {
    for (int e = 0; e < w.per; ++e) {
      w.set(1, lane, e, a(lane % 16, ab_k(lane, e, w.per)));
      w.set(2, lane, e, b(ab_k(lane, e, w.per), lane % 16));
    }
    for (int r = 0; r < 4; ++r) w.set(3, lane, r, c(d_row(lane, r), d_col(lane)));
  }
  info.home->execute(info, w);
}

/// Compiles the int2 GEMM's HIP for `target_name` and checks the assembly holds `mnemonic`.
void compile_int2(const char* target_name, const std::string& mnemonic) {
  const Target& target = find_target(target_name);
  std::string dir = (std::filesystem::temp_directory_path() / "tessel_mfma_i8").string();
  std::filesystem::create_directories(dir);
  const Example* e = find_example("dequant_gemm_int2");
  REQUIRE(e != nullptr);
  Kernel lowered = lower_kernel(e->build(make_params(*e, {})), target).kernel;
  EmittedSource src = emit_source(lowered, target);
  CompileResult r = compile_device_code(src, target, dir);
  if (!r.skipped.empty()) {
    MESSAGE("skipped compiling for " << target.name << ": " << r.skipped);
    return;
  }
  INFO(target.name << ": " << r.command << "\n" << r.log.substr(0, 2000));
  REQUIRE(r.compiled);
  std::ifstream in(r.output);
  std::string assembly((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(assembly.find(mnemonic) != std::string::npos);
}

}  // namespace

TEST_SUITE("int8 MFMA") {
  TEST_CASE("the A and B fragments put int8 where the calculator says, K = 32 and K = 16") {
    const IntrinsicInfo& c3 = intrinsic_info(IntrinsicId::kMfma16x16x32I8);
    // A[5][19]: 8 a lane, 19 / 8 = 2 -> lane 5 + 32 = 37, byte 19 % 8 = 3.
    CHECK(c3.operands[1].layout.map_fragment({5, 19}) == std::pair<int64_t, int64_t>{37, 3});
    // B[27][9]: 27 / 8 = 3 -> lane 9 + 48 = 57, byte 3.
    CHECK(c3.operands[2].layout.map_fragment({27, 9}) == std::pair<int64_t, int64_t>{57, 3});
    // D[6][11]: register 6 % 4 = 2 of lane 11 + 16 * (6 / 4) = 27.
    CHECK(c3.operands[0].layout.map_fragment({6, 11}) == std::pair<int64_t, int64_t>{27, 2});
    const IntrinsicInfo& c2 = intrinsic_info(IntrinsicId::kMfma16x16x16I8);
    // A[5][9]: 4 a lane, 9 / 4 = 2 -> lane 37, byte 1.
    CHECK(c2.operands[1].layout.map_fragment({5, 9}) == std::pair<int64_t, int64_t>{37, 1});
    for (const IntrinsicInfo* info : {&c3, &c2}) {
      const int per = info->k / 4;
      for (int lane = 0; lane < 64; ++lane) {
        for (int e = 0; e < per; ++e) {
          CHECK(info->operands[1].layout.map_fragment({lane % 16, ab_k(lane, e, per)}) ==
                std::pair<int64_t, int64_t>{lane, e});
          CHECK(info->operands[2].layout.map_fragment({ab_k(lane, e, per), lane % 16}) ==
                std::pair<int64_t, int64_t>{lane, e});
        }
      }
    }
  }

  TEST_CASE("each generation's target has its own int8 instruction, found by shape") {
    CHECK(find_matrix_intrinsic(false, 16, 16, 32, DataType::i8()) == IntrinsicId::kMfma16x16x32I8);
    CHECK(find_matrix_intrinsic(false, 16, 16, 16, DataType::i8()) == IntrinsicId::kMfma16x16x16I8);
    const IntrinsicInfo& c3 = intrinsic_info(IntrinsicId::kMfma16x16x32I8);
    const IntrinsicInfo& c2 = intrinsic_info(IntrinsicId::kMfma16x16x16I8);
    CHECK(c3.name == "mfma_16x16x32_i8");
    CHECK(c2.name == "mfma_16x16x16_i8");
    CHECK(c3.warp_size == 64);
    // LLVM: 16x16x16i8 is gfx908/gfx90a only, 16x16x32_i8 gfx940 and later.
    CHECK(find_target("gfx942").has(*c3.home));
    CHECK_FALSE(find_target("gfx942").has(*c2.home));
    CHECK(find_target("gfx90a").has(*c2.home));
    CHECK_FALSE(find_target("gfx90a").has(*c3.home));
    CHECK_FALSE(find_target("sm80").has(*c3.home));
  }

  TEST_CASE("it computes D = A B + C exactly in int32, K = 32 and K = 16") {
    auto a = [](int i, int k) { return (i * 7 + k * 3) % 256 - 128; };  // every int8 value
    auto b = [](int k, int n) { return (k * 5 + n * 11) % 255 - 127; };
    auto c = [](int i, int n) { return int64_t{1000} * i - 37 * n; };
    for (IntrinsicId id : {IntrinsicId::kMfma16x16x32I8, IntrinsicId::kMfma16x16x16I8}) {
      const IntrinsicInfo& info = intrinsic_info(id);
      MfmaWarp w(info.k);
      run(info, w, a, b, c);
      for (int lane = 0; lane < 64; ++lane) {
        for (int r = 0; r < 4; ++r) {
          int i = d_row(lane, r), n = d_col(lane);
          int64_t want = c(i, n);
          for (int k = 0; k < info.k; ++k) want += a(i, k) * b(k, n);
          INFO(info.name << " lane " << lane << " d_" << r << " = D[" << i << ", " << n << "]");
          CHECK(w.get(0, lane, r) == want);
        }
      }
    }
  }

  TEST_CASE("a sum past the int32 range wraps") {
    // D[0, 0] = INT32_MAX + A[0][31] B[31][0] = 2^31 -> -2^31 (A[0][31]: lane 48, byte 7).
    const IntrinsicInfo& info = intrinsic_info(IntrinsicId::kMfma16x16x32I8);
    MfmaWarp w(32);
    run(
        info, w, [](int i, int k) { return i == 0 && k == 31 ? 1 : 0; },
        [](int k, int n) { return k == 31 && n == 0 ? 1 : 0; },
        [](int i, int n) { return i == 0 && n == 0 ? int64_t{INT32_MAX} : 0; });
    CHECK(w.get(0, 0, 0) == int64_t{INT32_MIN});  // lane 0, register 0 is D[0, 0]
    CHECK(w.get(0, 0, 1) == 0);
  }

  TEST_CASE("its HIP helper packs the bytes into the builtin's integers; it has no CUDA spelling") {
    const IntrinsicInfo& c3 = intrinsic_info(IntrinsicId::kMfma16x16x32I8);
    std::string hip = c3.home->helper(Language::kHip, c3);
    CHECK(hip.find("void tessel_mfma_16x16x32_i8(int* d, const void* a, const void* b, const "
                   "int* c)") != std::string::npos);
    // 8 int8 in a 64-bit operand (the builtin takes long, long, int4).
    CHECK(hip.find("__builtin_amdgcn_mfma_i32_16x16x32_i8(static_cast<long>(av), "
                   "static_cast<long>(bv), cv, 0, 0, 0)") != std::string::npos);
    CHECK(hip.find("i < 8") != std::string::npos);
    const IntrinsicInfo& c2 = intrinsic_info(IntrinsicId::kMfma16x16x16I8);
    std::string hip2 = c2.home->helper(Language::kHip, c2);
    CHECK(hip2.find("__builtin_amdgcn_mfma_i32_16x16x16i8(static_cast<int>(av), "
                    "static_cast<int>(bv), cv, 0, 0, 0)") != std::string::npos);
    CHECK_THROWS_AS(c3.home->helper(Language::kCuda, c3), UserError);
  }

  TEST_CASE("the int2 x int8 GEMM lowers to the int8 MFMA on gfx942 and gfx90a") {
    const Example* e = find_example("dequant_gemm_int2");
    REQUIRE(e != nullptr);
    Kernel k = e->build(make_params(*e, {}));
    std::string gfx942 = print_kernel(lower_kernel(k, find_target("gfx942")).kernel);
    CHECK(gfx942.find("T.mfma_16x16x32_i8(") != std::string::npos);
    std::string gfx90a = print_kernel(lower_kernel(k, find_target("gfx90a")).kernel);
    CHECK(gfx90a.find("T.mfma_16x16x16_i8(") != std::string::npos);
    CHECK(gfx90a.find("T.mfma_16x16x32_i8(") == std::string::npos);
  }

  TEST_CASE("the int2 x int8 GEMM on gfx942 and gfx90a equals the tile level, conflict-free") {
    // 128 x 128 x 128, 128 x 128 x 64 tiles: 1 block of 2 k-steps (two MFMA k-steps each on
    // gfx942, four on gfx90a).
    for (const char* target : {"gfx942", "gfx90a"}) {
      CliResult r = run_tessel({"run", "dequant_gemm_int2", "--level", "thread", "--target", target,
                                "-D", "M=128", "-D", "N=128", "-D", "K=128", "--json"});
      INFO(target << ": " << r.err);
      REQUIRE(r.status == 0);
      auto j = nlohmann::json::parse(r.out);
      CHECK(j["passed"] == true);
      CHECK(j["max_abs_err"] == 0);  // int32: exact
      CHECK(j["sim"]["shared"]["bank_conflicts"] == 0);
      CHECK(j["sim"]["findings"].empty());
    }
  }

  TEST_CASE("verify proves the int2 x int8 GEMM on gfx942 and gfx90a") {
    for (const char* target : {"gfx942", "gfx90a"}) {
      CliResult r = run_tessel({"verify", "dequant_gemm_int2", "--target", target, "-D", "M=128",
                                "-D", "N=128", "-D", "K=128", "--json"});
      INFO(target << ": " << r.out.substr(0, 3000));
      CHECK(r.status == 0);
      auto j = nlohmann::json::parse(r.out);
      CHECK(j["failed"] == 0);
      CHECK(j["proved"].get<int>() > 0);
    }
  }

  TEST_CASE("the int2 GEMM's HIP compiles for gfx942 and gfx90a with clang where present") {
    // The builtins become the instructions themselves (LLVM's gfx942 and gfx90a spellings).
    compile_int2("gfx942", "v_mfma_i32_16x16x32_i8");
    compile_int2("gfx90a", "v_mfma_i32_16x16x16i8");
  }
}  // TEST_SUITE
