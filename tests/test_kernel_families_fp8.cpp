// The fp8 family (examples/kernels/fp8.py): the saturating per-token cast to float8_e4m3 and
// float8_e5m2 checked bit for bit against patterns derived by hand from the OCP FP8 formats, the
// fp8 GEMM against plain sums, and the generated code: __nv_fp8 types for CUDA (compiled with
// nvcc where it is installed), a refusal for HIP arithmetic on fp8.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>

#include "codegen/emit.h"
#include "codegen/toolchain.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "interp/thread_interpreter.h"
#include "interp/tile_interpreter.h"
#include "tests/cli_runner.h"

using namespace tessel;

namespace {

std::string fp8_file() { return std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/fp8.py"; }

HostTensor filled(DataType dtype, std::vector<int64_t> shape,
                  const std::function<double(int64_t)>& f) {
  HostTensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.set(i, f(i));
  return t;
}

std::vector<TensorMap> both_levels(const Kernel& kernel, const TensorMap& inputs) {
  TensorMap tile = inputs, thread = inputs;
  run_tile_level(kernel, tile);
  run_thread_level(lower_kernel(kernel, find_target("sm80")).kernel, thread);
  return {tile, thread};
}

struct Case {
  double x;
  uint64_t bits;
};

/// Runs per_token_cast_to_fp8 on an 8 x 128 input whose row 0 holds `row0` (padded with zeros)
/// and row 1 holds twice `row0`; checks X_fp8's bit patterns and the scales.
void check_cast(const std::string& fp8_dtype, double fp8_max, const std::vector<Case>& row0) {
  ParsedKernel p = parse_kernel_file(
      fp8_file(), {{"M", "8"}, {"N", "128"}, {"blk_m", "8"}, {"fp8_dtype", fp8_dtype}},
      "per_token_cast_to_fp8");
  DataType f8 = *DataType::parse(fp8_dtype);
  auto x = [&](int64_t f) {
    int64_t r = f / 128, j = f % 128;
    if (r > 1 || j >= static_cast<int64_t>(row0.size())) return 0.0;
    return row0[j].x * (r == 1 ? 2.0 : 1.0);
  };
  TensorMap in{{"X", filled(DataType::f32(), {8, 128}, x)},
               {"X_fp8", HostTensor(f8, {8, 128})},
               {"X_amax", HostTensor(DataType::f32(), {8, 1})}};
  for (TensorMap& t : both_levels(p.kernel, in)) {
    const HostTensor& q = t["X_fp8"];
    for (size_t j = 0; j < row0.size(); ++j) {
      CAPTURE(row0[j].x);
      // Row 0's largest magnitude is fp8_max, so its scale is 1; row 1's is 2 and x / 2 is row 0.
      CHECK(load_bits(f8, q.data(), static_cast<int64_t>(j)) == row0[j].bits);
      CHECK(load_bits(f8, q.data(), 128 + static_cast<int64_t>(j)) == row0[j].bits);
    }
    CHECK(t["X_amax"].at(0) == 1.0);
    CHECK(t["X_amax"].at(1) == 2.0);
    // An all-zero row: max|x| is raised to 1e-4 (as float32), the scale is that / fp8_max.
    CHECK(t["X_amax"].at(2) == static_cast<double>(1e-4f / static_cast<float>(fp8_max)));
    CHECK(load_bits(f8, q.data(), 2 * 128 + 5) == 0);
  }
}

}  // namespace

TEST_SUITE("kernel families") {
  TEST_CASE("fp8.py per_token_cast_to_fp8: e4m3 bit patterns derived by hand") {
    // E4M3: sign, 4 exponent bits (bias 7), 3 mantissa bits; the largest finite value is
    // 1.75 * 2^8 = 448 = 0.1111.110; the smallest subnormal 2^-6 / 8 = 2^-9.
    check_cast("float8_e4m3", 448.0,
               {{448.0, 0x7E},         // 0 1111 110
                {-448.0, 0xFE},        // sign set
                {1.0, 0x38},           // 0 0111 000
                {-1.0, 0xB8},          //
                {1.0625, 0x38},        // 1 + 1/16: tie of 1.0 and 1.125, even is 1.0
                {1.1875, 0x3A},        // 1 + 3/16: tie of 1.125 and 1.25, even is 1.25
                {240.0, 0x77},         // 1.875 * 2^7: 0 1110 111
                {0.001953125, 0x01},   // 2^-9, the smallest subnormal
                {0.0009765625, 0x00},  // 2^-10: tie of 0 and 2^-9, even is 0
                {0.0029296875, 0x02},  // 1.5 * 2^-9: tie of 2^-9 and 2^-8, even is 2^-8
                {0.0, 0x00}});
  }

  TEST_CASE("fp8.py per_token_cast_to_fp8: e5m2 bit patterns derived by hand") {
    // E5M2: 5 exponent bits (bias 15), 2 mantissa bits; largest finite 1.75 * 2^15 = 57344 =
    // 0.11110.11; smallest subnormal 2^-14 / 4 = 2^-16.
    check_cast("float8_e5m2", 57344.0,
               {{57344.0, 0x7B},              // 0 11110 11
                {1.0, 0x3C},                  // 0 01111 00
                {1.125, 0x3C},                // tie of 1.0 and 1.25: even is 1.0
                {1.375, 0x3E},                // tie of 1.25 and 1.5: even is 1.5
                {-3.0, 0xC2},                 // 1 10000 10
                {1.52587890625e-05, 0x01}});  // 2^-16
  }

  TEST_CASE("fp8.py gemm_fp8: e4m3 operands, fp32 sums at both levels") {
    const int64_t M = 64, N = 64, K = 128;
    // Multiples of 1/4 up to 1: exact in e4m3; every sum of products is exact in fp32.
    auto a = [](int64_t f) { return ((f / K + f % K) % 5 - 2) * 0.5; };
    auto b = [](int64_t f) { return ((2 * (f / K) + f % K) % 3 - 1) * 0.25; };
    ParsedKernel p =
        parse_kernel_file(fp8_file(), {{"M", "64"}, {"N", "64"}, {"K", "128"}}, "gemm_fp8");
    TensorMap in{{"A", filled(DataType::e4m3(), {M, K}, a)},
                 {"B", filled(DataType::e4m3(), {N, K}, b)},
                 {"C", HostTensor(DataType::f32(), {M, N})}};
    for (TensorMap& t : both_levels(p.kernel, in)) {
      int64_t wrong = 0;
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
          double sum = 0;
          for (int64_t k = 0; k < K; ++k) sum += a(i * K + k) * b(j * K + k);
          wrong += t["C"].at(i * N + j) != sum;
        }
      }
      CHECK(wrong == 0);
    }
    // By hand: A all 1.0 and B all 0.5 give 128 * 0.5 = 64 everywhere.
    TensorMap ones{{"A", filled(DataType::e4m3(), {M, K}, [](int64_t) { return 1.0; })},
                   {"B", filled(DataType::e4m3(), {N, K}, [](int64_t) { return 0.5; })},
                   {"C", HostTensor(DataType::f32(), {M, N})}};
    for (TensorMap& t : both_levels(p.kernel, ones)) CHECK(t["C"].at(M * N - 1) == 64.0);
  }

  TEST_CASE("fp8.py: CUDA code uses __nv_fp8 types; HIP refuses arithmetic on fp8") {
    const Target& sm80 = find_target("sm80");
    ParsedKernel cast = parse_kernel_file(fp8_file(), {{"M", "16"}, {"N", "256"}, {"blk_m", "8"}},
                                          "per_token_cast_to_fp8");
    ParsedKernel gemm =
        parse_kernel_file(fp8_file(), {{"M", "64"}, {"N", "64"}, {"K", "128"}}, "gemm_fp8");
    std::string dir = (std::filesystem::temp_directory_path() / "tessel_codegen_fp8").string();
    for (const Kernel* k : {&cast.kernel, &gemm.kernel}) {
      EmittedSource src = emit_source(lower_kernel(*k, sm80).kernel, sm80);
      CHECK(src.code.find("#include <cuda_fp8.h>") != std::string::npos);
      CHECK(src.code.find("__nv_fp8_e4m3* __restrict__") != std::string::npos);
      CompileResult r = compile_device_code(src, sm80, dir);
      if (!r.skipped.empty()) {
        MESSAGE("skipped compiling the fp8 kernels: " << r.skipped);
        continue;
      }
      INFO(r.command << "\n" << r.log.substr(0, 2000));
      CHECK(r.compiled);
    }
    CliResult hip = run_tessel({"emit", fp8_file(), "--kernel", "gemm_fp8", "-D", "M=64", "-D",
                                "N=64", "-D", "K=128", "--target", "hip"});
    CHECK(hip.status == 1);
    CHECK(hip.err.find("converts or computes with float8_e4m3 values") != std::string::npos);
    CHECK(hip.err.find("FNUZ") != std::string::npos);
  }
}

TEST_SUITE("kernel families") {
  TEST_CASE("fp8.py goes through print, emit for CUDA, both run levels, and verify") {
    struct Run {
      const char* kernel;
      std::vector<std::string> defines;
      bool proves;  // every proof holds
    };
    // gemm_fp8 on sm80 has no fp8 mma: its scalar multiply-adds read B_shared (64 x 64 bytes,
    // transposed) with 4-way bank conflicts, which verify reports (exit 1) — a finding, not an
    // error of the kernel's values.
    for (const Run& r : {Run{"per_token_cast_to_fp8", {"M=16", "N=256", "blk_m=8"}, true},
                         Run{"gemm_fp8", {"M=128", "N=128", "K=128"}, false}}) {
      for (std::vector<std::string> cmd : {std::vector<std::string>{"print"},
                                           {"emit", "--target", "cuda"},
                                           {"run", "--level", "tile"},
                                           {"run", "--level", "thread"},
                                           {"verify"}}) {
        cmd.insert(cmd.begin() + 1, fp8_file());
        cmd.insert(cmd.end(), {"--kernel", r.kernel});
        for (const std::string& d : r.defines) cmd.insert(cmd.end(), {"-D", d});
        CAPTURE(r.kernel);
        CAPTURE(cmd[0]);
        CliResult out = run_tessel(cmd);
        CHECK_MESSAGE(out.status == (cmd[0] == "verify" && !r.proves ? 1 : 0), out.err);
        if (cmd[0] == "verify" && !r.proves)
          CHECK(out.out.find("bank conflict") != std::string::npos);
      }
    }
  }
}
