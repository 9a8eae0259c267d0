// The host side of the GPU runner, without a GPU: each launch's function, grid (placed on the
// hardware axes), block shape, dynamic shared memory and tensor maps, and the arguments in the
// emitted source's order with a kernel's T.alloc_global scratch among them.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "codegen/host_launch.h"
#include "codegen/toolchain.h"
#include "core/error.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "interp/tile_interpreter.h"
#include "tests/cli_runner.h"
#include "tools/kernel_views.h"
#include "tools/run_device.h"

using namespace tessel;

namespace {

/// Two launches of different shapes through a scratch tensor D (12 x 32): a 2 x 3 grid of
/// 16 x 4-thread blocks, each a 4 x 16 tile, then 3 blocks of 32 threads, each 4 rows.
const char* kTwoShapes = R"(import tilelang.language as T


@T.prim_func
def two_shapes(A: T.Tensor((12, 32), "float32"), C: T.Tensor((12, 32), "float32")):
    D = T.alloc_global((12, 32), "float32")
    with T.Kernel(2, 3, threads=(16, 4)) as (bx, by):
        tx = T.get_thread_binding(0)
        ty = T.get_thread_binding(1)
        D[by * 4 + ty, bx * 16 + tx] = A[by * 4 + ty, bx * 16 + tx] * 2.0
    with T.Kernel(3, threads=32) as bx:
        tx = T.get_thread_binding()
        for r in T.serial(4):
            C[bx * 4 + r, tx] = D[bx * 4 + r, tx] + 1.0
)";

/// A warp-specialised GEMM into scratch (on sm90 its producer loads A and B by TMA), then a
/// launch that scales the scratch into C: only the first launch takes tensor maps.
const char* kTmaThenScale = R"(import tilelang.language as T


@T.prim_func
def gemm_then_scale(A: T.Tensor((128, 64), "float16"), B: T.Tensor((64, 128), "float16"),
                    C: T.Tensor((128, 128), "float32")):
    D = T.alloc_global((128, 128), "float32")
    with T.Kernel(1, 1, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 32), "float16")
        B_s = T.alloc_shared((32, 128), "float16")
        acc = T.alloc_fragment((128, 128), "float32")
        T.clear(acc)
        for k in T.Pipelined(2, num_stages=2):
            T.copy(A[0, k * 32], A_s)
            T.copy(B[k * 32, 0], B_s)
            T.gemm(A_s, B_s, acc)
        T.copy(acc, D)
    with T.Kernel(128, threads=128) as bx:
        for j in T.Parallel(128):
            C[bx, j] = D[bx, j] * 2.0
)";

}  // namespace

TEST_SUITE("host launch") {
  TEST_CASE("a kernel of two launches gives each its own function, grid and block shape") {
    Kernel k = parse_kernel(kTwoShapes, "two_shapes.py").kernel;
    EmittedSource src = cli::emit_kernel(k, find_target("sm80"));
    TensorMap tensors = make_tensors(k, {}, {"C"}, 1);
    std::vector<HostLaunch> l = host_launches(src, launch_grids(k, bind_tensors(k, tensors)));
    REQUIRE(l.size() == 2);
    CHECK(l[0].entry == src.launches[0].entry);
    CHECK(l[1].entry == src.launches[1].entry);
    CHECK(l[0].entry != l[1].entry);
    CHECK(l[0].grid == std::array<int64_t, 3>{2, 3, 1});
    CHECK(l[0].block == std::array<int, 3>{16, 4, 1});
    CHECK(l[1].grid == std::array<int64_t, 3>{3, 1, 1});
    CHECK(l[1].block == std::array<int, 3>{32, 1, 1});
  }

  TEST_CASE("split-KV MLA decode launches its partials, then its combine, each on its grid") {
    const Example& e = *find_example("mla_decode_split");
    Kernel k = e.build(make_params(e, {{"batch", "3"}, {"heads", "64"}, {"num_split", "2"}}));
    EmittedSource src = cli::emit_kernel(k, find_target("sm90"));
    TensorMap tensors = make_tensors(k, {}, e.outputs, 1);
    std::vector<HostLaunch> l = host_launches(src, launch_grids(k, bind_tensors(k, tensors)));
    REQUIRE(l.size() == 2);
    // Launch 1: (batch, heads / block_H, num_split) = (3, 64 / 16, 2); launch 2, the combine:
    // (heads / block_H, batch) = (4, 3). 128 threads each (the default).
    CHECK(l[0].grid == std::array<int64_t, 3>{3, 4, 2});
    CHECK(l[1].grid == std::array<int64_t, 3>{4, 3, 1});
    for (size_t i = 0; i < 2; ++i) {
      CHECK(l[i].block == std::array<int, 3>{128, 1, 1});
      CHECK(l[i].dynamic_shared_bytes == src.launches[i].dynamic_shared_bytes);
    }
  }

  TEST_CASE("each launch carries its own TMA tensor maps, and the source compiles with nvcc") {
    Kernel k = parse_kernel(kTmaThenScale, "gemm_then_scale.py").kernel;
    const Target& sm90 = find_target("sm90");
    EmittedSource src = cli::emit_kernel(k, sm90);
    TensorMap tensors = make_tensors(k, {}, {"C"}, 1);
    std::vector<HostLaunch> l = host_launches(src, launch_grids(k, bind_tensors(k, tensors)));
    REQUIRE(l.size() == 2);
    // The GEMM's k-steps: A boxes of 128 x 32 and B boxes of 32 x (its swizzle span) halves.
    REQUIRE(l[0].tensor_maps.size() == 2);
    CHECK(l[0].tensor_maps[0].tensor == "A");
    CHECK(l[0].tensor_maps[0].box == std::vector<int64_t>{128, 32});
    CHECK(l[0].tensor_maps[1].tensor == "B");
    CHECK(l[1].tensor_maps.empty());
    CHECK(l[1].grid == std::array<int64_t, 3>{128, 1, 1});
    // Launch 1's function takes its maps after the arguments; launch 2's takes none.
    const size_t first = src.code.find(l[0].entry + "("), second = src.code.find(l[1].entry + "(");
    REQUIRE(first != std::string::npos);
    REQUIRE(second != std::string::npos);
    const std::string sig1 = src.code.substr(first, src.code.find(')', first) - first);
    const std::string sig2 = src.code.substr(second, src.code.find(')', second) - second);
    CHECK(sig1.find("CUtensorMap " + l[0].tensor_maps[1].name) != std::string::npos);
    CHECK(sig2.find("CUtensorMap") == std::string::npos);
    CompileResult r = compile_device_code(
        src, sm90, (std::filesystem::temp_directory_path() / "tessel_host_launch").string());
    if (!r.skipped.empty()) {
      MESSAGE("skipped compiling for sm90: " << r.skipped);
      return;
    }
    INFO(r.command << "\n" << r.log.substr(0, 2000));
    CHECK(r.compiled);
  }

  TEST_CASE("emit --json gives each launch's grid axes and tensor maps for a host to encode") {
    const std::string path =
        (std::filesystem::temp_directory_path() / "tessel_gemm_then_scale.py").string();
    std::ofstream(path) << kTmaThenScale;
    CliResult r = run_tessel({"emit", path, "--target", "sm90", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["launches"].size() == 2);
    const auto& maps = j["launches"][0]["tensor_maps"];
    REQUIRE(maps.size() == 2);
    CHECK(maps[0]["tensor"] == "A");
    CHECK(maps[0]["dtype"] == "float16");
    CHECK(maps[0]["box"] == nlohmann::json({128, 32}));
    // A's box rows are 32 halves = 64 bytes: the 64-byte swizzle.
    CHECK(maps[0]["swizzle_bytes"] == 64);
    CHECK(j["launches"][1]["tensor_maps"].empty());
    CHECK(j["launches"][0]["grid_axes"] == nlohmann::json({0, 1}));
    CHECK(j["launches"][1]["grid_axes"] == nlohmann::json({0}));
  }

  TEST_CASE("a block-index extent above 65535 is launched along x where the source says so") {
    EmittedSource src;
    src.entry = "k";
    src.threads = 128;
    src.grid_axes = {2, 1, 0};  // the printer's folding of chunk_scan CC5's grid
    // CC5: (headdim / block_N, chunk_size / block_M, batch * nchunks * nheads)
    //    = (64 / 64, 256 / 64, 64 * (8192 / 256) * 64) = (1, 4, 131072).
    std::vector<HostLaunch> l = host_launches(src, {{1, 4, 131072}});
    CHECK(l[0].grid == std::array<int64_t, 3>{131072, 4, 1});
  }

  TEST_CASE("grids the hardware cannot launch are user errors naming the launch and the axis") {
    EmittedSource src;
    src.entry = "kern";
    src.threads = 64;
    CHECK_THROWS_WITH_AS(
        host_launches(src, {{2, 70000}}),
        doctest::Contains("launch kern: 70000 blocks along y; a GPU launches 1 to 65535 there"),
        UserError);
    CHECK_THROWS_WITH_AS(host_launches(src, {{0}}), doctest::Contains("0 blocks along x"),
                         UserError);
    CHECK_THROWS_WITH_AS(host_launches(src, {{1}, {1}}),
                         doctest::Contains("2 grids for 1 launches"), UserError);
    CHECK_THROWS_WITH_AS(host_launches(src, {{1, 1, 1, 1}}),
                         doctest::Contains("a grid of 4 extents"), UserError);
  }

  TEST_CASE("a device call is every launch's grid and the tensors, then the scratch (0xFF bytes)") {
    Kernel k = parse_kernel(kTwoShapes, "two_shapes.py").kernel;
    EmittedSource src = cli::emit_kernel(k, find_target("sm80"));
    TensorMap tensors = make_tensors(k, {}, {"C"}, 1);
    cli::DeviceCall call = cli::device_call(k, tensors);
    // The block-index extents of the two launches: (2, 3), then (3).
    CHECK(call.grids == std::vector<std::vector<int64_t>>{{2, 3}, {3}});
    const std::vector<LaunchArg>& args = call.args;
    REQUIRE(src.arguments == std::vector<std::string>{"A", "C", "D"});
    REQUIRE(args.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      const HostTensor& t = tensors.at(src.arguments[i]);
      CHECK(args[i].data == t.data());
      CHECK(args[i].bytes == 12 * 32 * 4);
      CHECK(args[i].shape == std::vector<int64_t>{12, 32});
      CHECK_FALSE(args[i].is_scalar);
    }
    // The scratch starts as the interpreters start it: every byte 0xFF (a NaN).
    int not_ff = 0;
    for (size_t b = 0; b < args[2].bytes; ++b) not_ff += args[2].data[b] != 0xFF;
    CHECK(not_ff == 0);
  }
}
