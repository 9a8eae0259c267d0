// Launch structure of real TileLang files: grids and rasterisation, thread blocks of 1 to 3
// dimensions and of any size (a partial last warp), scalar parameters, views and several launches.
// Each kernel runs from its text at tile level and, lowered, at thread level against values
// derived by hand.
#include <doctest/doctest.h>

#include <functional>

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
}
