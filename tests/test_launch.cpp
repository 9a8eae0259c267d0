// Launch structure of real TileLang files: grids and rasterisation, thread blocks of 1 to 3
// dimensions and of any size (a partial last warp), scalar parameters, views and several launches.
// Each kernel runs from its text at tile level and, lowered, at thread level against values
// derived by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>

#include "codegen/emit.h"
#include "codegen/toolchain.h"
#include "core/builder.h"
#include "core/kernel_equal.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/printer.h"
#include "interp/thread_interpreter.h"
#include "interp/tile_interpreter.h"

using namespace tessel;

namespace {

Kernel parse(const std::string& text, const std::map<std::string, std::string>& defines = {}) {
  return parse_kernel(text, "launch.py", defines).kernel;
}

/// A tensor whose element at flat index i is f(i).
HostTensor tensor(
    DataType dtype, std::vector<int64_t> shape,
    const std::function<double(int64_t)>& f = [](int64_t) { return 0.0; }) {
  HostTensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.set(i, f(i));
  return t;
}

/// Runs `kernel` at tile level and, lowered for `target`, at thread level, each on its own copy
/// of `inputs`; returns both results.
std::pair<TensorMap, ThreadRunResult> run_levels(const Kernel& kernel, TensorMap& tile,
                                                 const std::string& target = "sm80") {
  TensorMap thread = tile;
  run_tile_level(kernel, tile);
  ThreadRunOptions options;
  options.target = target;
  ThreadRunResult r =
      run_thread_level(lower_kernel(kernel, find_target(target)).kernel, thread, options);
  return {thread, r};
}

/// Checks every element of `t` against f(flat index).
void check_values(const HostTensor& t, const std::function<double(int64_t)>& f,
                  const std::string& what) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    if (t.at(i) != f(i) && wrong++ < 3) {
      FAIL_CHECK(what << "[" << i << "] = " << t.at(i) << ", expected " << f(i));
    }
  }
  CHECK_MESSAGE(wrong == 0, what << ": " << wrong << " wrong element(s)");
}

/// The kernel printed and parsed back is the same kernel.
void check_round_trip(const Kernel& k) {
  std::string printed = print_kernel(k);
  INFO("printed:\n" << printed);
  auto diff = kernel_difference(k, parse(printed));
  CHECK_MESSAGE(!diff, (diff ? *diff : ""));
}

/// Emits `k` for `target_name` and compiles it where the compiler exists; returns the source.
std::string emit_and_compile(const Kernel& k, const char* target_name) {
  const Target& target = find_target(target_name);
  EmittedSource src = emit_source(lower_kernel(k, target).kernel, target);
  std::string dir =
      (std::filesystem::temp_directory_path() / ("tessel_launch_" + target.name)).string();
  CompileResult r = compile_device_code(src, target, dir);
  if (!r.skipped.empty()) {
    MESSAGE("skipped compiling for " << target.name << ": " << r.skipped);
  } else {
    INFO(k->name << " for " << target.name << ": " << r.command << "\n" << r.log.substr(0, 2000));
    CHECK(r.compiled);
  }
  return src.code;
}

std::string user_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("launch") {
  TEST_CASE("T.use_swizzle on a 3-d grid rasterises each batch plane and keeps results") {
    // 3 batches of a 4 x 6 matrix in 2 x 2 tiles: grid (3, 2, 3); the swizzle remaps (bx, by)
    // within each plane and must leave bz alone, so B = A + 100 * batch everywhere.
    Kernel k = parse(R"(
import tilelang.language as T

@T.prim_func
def batched_shift(A: T.Tensor((3, 4, 6), "float32"), B: T.Tensor((3, 4, 6), "float32")):
    with T.Kernel(3, 2, 3, threads=32) as (bx, by, bz):
        T.use_swizzle(panel_size=2, order="row", enable=True)
        tile = T.alloc_fragment((2, 2), "float32")
        T.copy(A[bz, by * 2, bx * 2], tile)
        for i, j in T.Parallel(2, 2):
            tile[i, j] = tile[i, j] + 100.0 * bz
        T.copy(tile, B[bz, by * 2, bx * 2])
)");
    auto a = [](int64_t i) { return static_cast<double>(i % 24); };
    auto expected = [](int64_t i) { return static_cast<double>(i % 24 + 100 * (i / 24)); };
    TensorMap t{{"A", tensor(DataType::f32(), {3, 4, 6}, a)},
                {"B", tensor(DataType::f32(), {3, 4, 6})}};
    auto [thread, r] = run_levels(k, t);
    check_values(t.at("B"), expected, "tile-level B");
    check_values(thread.at("B"), expected, "thread-level B");
    CHECK(r.report.findings.empty());
    // The remap binds new x and y indices; bz is read as it is.
    std::string lowered = print_kernel(rasterize_blocks(k));
    CHECK(lowered.find("bx_r = ") != std::string::npos);
    CHECK(lowered.find("by_r = ") != std::string::npos);
    CHECK(lowered.find("bz_r") == std::string::npos);
  }

  // ---- Thread blocks of 2 and 3 dimensions ---------------------------------------------------

  const char* kSwapRows = R"(
import tilelang.language as T

@T.prim_func
def swap_rows(Out: T.Tensor((4, 16), "float32")):
    with T.Kernel(1, threads=(16, 4)) as bx:
        tx = T.get_thread_binding(0)
        ty = T.get_thread_binding(1)
        v = T.alloc_var("float32")
        v = ty * 100 + tx
        Out[ty, tx] = T.shfl_xor(v, 16)
)";

  TEST_CASE("threads=(x, y) numbers threads x fastest: lane 16 of a warp is the next row") {
    // Warp 0 holds rows ty = 0, 1 (lanes 0-15 and 16-31), warp 1 rows 2, 3; shfl_xor(v, 16)
    // therefore swaps rows 0 <-> 1 and 2 <-> 3: Out[y, x] = (y ^ 1) * 100 + x.
    Kernel k = parse(kSwapRows);
    CHECK(k->threads == 64);
    CHECK(k->thread_dims == std::vector<int>{16, 4});
    auto expected = [](int64_t i) { return static_cast<double>(((i / 16) ^ 1) * 100 + i % 16); };
    TensorMap t{{"Out", tensor(DataType::f32(), {4, 16})}};
    auto [thread, r] = run_levels(k, t);
    check_values(t.at("Out"), expected, "tile-level Out");
    check_values(thread.at("Out"), expected, "thread-level Out");
    CHECK(r.report.findings.empty());
    check_round_trip(k);
  }

  TEST_CASE(
      "T.get_thread_bindings and the linear index of a 3-d block follow x + X * (y + Y * z)") {
    // Lin is (z, y, x) = (3, 2, 4) row-major, so its flat index z * 8 + y * 4 + x is the linear
    // thread index: Lin[i] = i. Dims[z, y, x] = x + 10 * y + 100 * z checks the unpacked indices.
    Kernel k = parse(R"(
import tilelang.language as T

@T.prim_func
def numbering(Lin: T.Tensor((3, 2, 4), "int32"), Dims: T.Tensor((3, 2, 4), "int32")):
    with T.Kernel(1, threads=(4, 2, 3)) as bx:
        tx, ty, tz = T.get_thread_bindings()
        Lin[tz, ty, tx] = T.linear_thread_index()
        Dims[tz, ty, tx] = tx + 10 * ty + 100 * tz
)");
    CHECK(k->threads == 24);
    TensorMap t{{"Lin", tensor(DataType::i32(), {3, 2, 4})},
                {"Dims", tensor(DataType::i32(), {3, 2, 4})}};
    auto [thread, r] = run_levels(k, t);
    auto lin = [](int64_t i) { return static_cast<double>(i); };
    auto dims = [](int64_t i) {
      return static_cast<double>(i % 4 + 10 * (i / 4 % 2) + 100 * (i / 8));
    };
    for (const TensorMap* m : {&t, &thread}) {
      check_values(m->at("Lin"), lin, "Lin");
      check_values(m->at("Dims"), dims, "Dims");
    }
    CHECK(r.report.findings.empty());
    check_round_trip(k);
  }

  TEST_CASE("the C++ builder makes the same 2-d block as the file") {
    KernelBuilder T("swap_rows");
    auto Out = T.tensor("Out", {4, 16}, DataType::f32());
    T.kernel({1}, std::vector<int>{16, 4});
    Expr tx = T.get_thread_binding(0), ty = T.get_thread_binding(1);
    auto v = T.alloc_var("v", DataType::f32());
    v(0) = cast(DataType::f32(), ty * 100 + tx);
    Out(ty, tx) = call(Builtin::kShflXor, {v(0), make_int(16)});
    Kernel built = T.finish();
    auto diff = kernel_difference(built, parse(kSwapRows));
    CHECK_MESSAGE(!diff, (diff ? *diff : ""));
  }

  TEST_CASE("a 2-d block launches with blockDim (x, y) and the linear index in CUDA and HIP") {
    Kernel k = parse(kSwapRows);
    std::string cuda = emit_and_compile(k, "sm80");
    CHECK(cuda.find("static_cast<int>(threadIdx.x) + 16 * static_cast<int>(threadIdx.y)") !=
          std::string::npos);
    CHECK(cuda.find("64 threads (16 x 4)") != std::string::npos);
    std::string hip = emit_and_compile(k, "gfx942");
    CHECK(hip.find("__builtin_amdgcn_workitem_id_y()") != std::string::npos);
    EmittedSource src =
        emit_source(lower_kernel(k, find_target("sm80")).kernel, find_target("sm80"));
    CHECK(src.thread_dims == std::vector<int>{16, 4});
  }

  TEST_CASE("a block shape beyond the hardware's limits is a kernel error naming it") {
    auto err = [](const std::string& threads) {
      return user_error_of([&] {
        parse(
            "@T.prim_func\ndef k(A: T.Tensor((4,), \"float32\")):\n    with T.Kernel(1, threads=" +
            threads + ") as bx:\n        T.clear(A)\n");
      });
    };
    CHECK(err("(32, 0)").find("threads=(32, 0): the y extent 0 must be between 1 and 1024") !=
          std::string::npos);
    CHECK(err("(8, 8, 128)").find("the z extent 128 must be between 1 and 64") !=
          std::string::npos);
    CHECK(err("(64, 32)").find("threads=(64, 32) is 2048 threads; a block may have at most 1024") !=
          std::string::npos);
    CHECK(err("2048").find("threads=2048 must be between 1 and 1024") != std::string::npos);
    CHECK(err("(1, 2, 3, 4)").find("threads= takes 1 to 3 extents (x, y, z), got 4") !=
          std::string::npos);
  }

  // ---- Thread counts that are not a multiple of the warp ---------------------------------------

  TEST_CASE("threads=100 runs a partial last warp of 4 lanes and reduces rows exactly") {
    // A[i, j] = i + j: row i sums to 100 * i + (0 + ... + 99) = 100 * i + 4950.
    Kernel k = parse(R"(
import tilelang.language as T

@T.prim_func
def row_sum(A: T.Tensor((8, 100), "float32"), S: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=100) as bx:
        A_frag = T.alloc_fragment((8, 100), "float32")
        S_frag = T.alloc_fragment((8,), "float32")
        T.copy(A, A_frag)
        T.reduce_sum(A_frag, S_frag, dim=1)
        T.copy(S_frag, S)
)");
    TensorMap t{
        {"A", tensor(DataType::f32(), {8, 100}, [](int64_t i) { return i / 100 + i % 100; })},
        {"S", tensor(DataType::f32(), {8})}};
    auto [thread, r] = run_levels(k, t);
    auto expected = [](int64_t i) { return 100.0 * i + 4950; };
    check_values(t.at("S"), expected, "tile-level S");
    check_values(thread.at("S"), expected, "thread-level S");
    CHECK(r.threads == 100);
    CHECK(r.report.findings.empty());
    check_round_trip(k);
    CHECK(emit_and_compile(k, "sm80").find("const unsigned tessel_lanes = ") != std::string::npos);
  }

  TEST_CASE("a partial warp's shared-memory requests count only its live lanes") {
    // 100 threads each store one float32 of a row, then read it back reversed: warps 0-2 make
    // one 32-word request per access, warp 3 one of 4 words. Every request is one wavefront
    // (consecutive words, distinct banks): 4 stores + 4 loads = 8 requests, 8 wavefronts, and
    // 2 * 100 lane accesses.
    Kernel k = parse(R"(
import tilelang.language as T

@T.prim_func
def reverse(A: T.Tensor((100,), "float32"), B: T.Tensor((100,), "float32")):
    with T.Kernel(1, threads=100) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((100,), "float32")
        S[tx] = A[tx]
        T.sync_threads()
        B[tx] = S[99 - tx]
)");
    TensorMap t{{"A", tensor(DataType::f32(), {100}, [](int64_t i) { return i; })},
                {"B", tensor(DataType::f32(), {100})}};
    auto [thread, r] = run_levels(k, t);
    auto expected = [](int64_t i) { return 99.0 - i; };
    check_values(t.at("B"), expected, "tile-level B");
    check_values(thread.at("B"), expected, "thread-level B");
    CHECK(r.report.findings.empty());
    CHECK(r.report.total.shared_requests == 8);
    CHECK(r.report.total.wavefronts == 8);
    CHECK(r.report.total.bank_conflicts == 0);
  }

  TEST_CASE("threads=1 runs a sequential prefix sum") {
    // P[i] = 0 + 1 + ... + i = i * (i + 1) / 2.
    Kernel k = parse(R"(
import tilelang.language as T

@T.prim_func
def prefix(A: T.Tensor((16,), "float32"), P: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=1) as bx:
        acc = T.alloc_var("float32")
        acc = 0.0
        for i in T.serial(16):
            acc = acc + A[i]
            P[i] = acc
)");
    TensorMap t{{"A", tensor(DataType::f32(), {16}, [](int64_t i) { return i; })},
                {"P", tensor(DataType::f32(), {16})}};
    auto [thread, r] = run_levels(k, t);
    auto expected = [](int64_t i) { return i * (i + 1) / 2.0; };
    check_values(t.at("P"), expected, "tile-level P");
    check_values(thread.at("P"), expected, "thread-level P");
    CHECK(r.threads == 1);
    CHECK(r.report.findings.empty());
    emit_and_compile(k, "sm80");
  }

  const char* kPartialGemm = R"(
import tilelang.language as T

@T.prim_func
def small_gemm(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"),
               C: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, threads=(16, 3)) as bx:
        A_s = T.alloc_shared((16, 16), "float16")
        B_s = T.alloc_shared((16, 16), "float16")
        C_f = T.alloc_fragment((16, 16), "float32")
        T.copy(A, A_s)
        T.copy(B, B_s)
        T.gemm(A_s, B_s, C_f, clear_accum=True)
        T.copy(C_f, C)
)";

  TEST_CASE("a gemm in a block of 48 threads runs as scalar multiply-adds, not mma") {
    // A = 2 I, B[k, j] = k + j: C = 2 B, exact in float16/float32.
    Kernel k = parse(kPartialGemm);
    TensorMap t{{"A", tensor(DataType::f16(), {16, 16},
                             [](int64_t i) { return i / 16 == i % 16 ? 2 : 0; })},
                {"B", tensor(DataType::f16(), {16, 16}, [](int64_t i) { return i / 16 + i % 16; })},
                {"C", tensor(DataType::f32(), {16, 16})}};
    auto [thread, r] = run_levels(k, t);
    auto expected = [](int64_t i) { return 2.0 * (i / 16 + i % 16); };
    check_values(t.at("C"), expected, "tile-level C");
    check_values(thread.at("C"), expected, "thread-level C");
    CHECK(r.report.findings.empty());
    std::string cuda = emit_and_compile(k, "sm80");
    CHECK(cuda.find("mma.sync") == std::string::npos);
  }

  TEST_CASE("a register-operand gemm in a partial warp says mma needs whole warps") {
    std::string m = user_error_of([] {
      Kernel k = parse(R"(
import tilelang.language as T

@T.prim_func
def rs_gemm(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"),
            C: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, threads=48) as bx:
        A_f = T.alloc_fragment((16, 16), "float16")
        B_s = T.alloc_shared((16, 16), "float16")
        C_f = T.alloc_fragment((16, 16), "float32")
        T.copy(A, A_f)
        T.copy(B, B_s)
        T.gemm(A_f, B_s, C_f)
        T.copy(C_f, C)
)");
      lower_kernel(k, find_target("sm80"));
    });
    CHECK(m.find("'A_f' is a fragment, but this gemm runs as scalar multiply-adds (threads=48 is "
                 "not a whole number of 32-lane warps (a matrix instruction needs every lane of "
                 "its warp))") != std::string::npos);
  }
}
