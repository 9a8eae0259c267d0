// T.fill / T.clear and T.reduce_* at tile level on the dtypes their fast paths take (a whole
// buffer of whole-byte elements; float32 and int32 sources) and on the ones they do not (a part of
// a buffer), against values derived by hand.
#include <doctest/doctest.h>

#include "core/kernel_parser.h"
#include "examples/run_example.h"
#include "interp/tile_interpreter.h"

using namespace tessel;

TEST_SUITE("tile level: fill and reduce") {
  TEST_CASE("fills of whole buffers and of parts, and row reductions, give the hand values") {
    Kernel k = parse_kernel(R"(import tilelang.language as T


@T.prim_func
def ops(X: T.Tensor((4, 8), "float32"), I: T.Tensor((4, 8), "int32"),
        F: T.Tensor((4, 8), "float16"), G: T.Tensor((4, 8), "int8"),
        S: T.Tensor((4,), "float32"), M: T.Tensor((4,), "int32")):
    with T.Kernel(1, threads=32) as bx:
        xs = T.alloc_fragment((4, 8), "float32")
        s = T.alloc_fragment((4,), "float32")
        ys = T.alloc_fragment((4, 8), "int32")
        m = T.alloc_fragment((4,), "int32")
        T.copy(X, xs)
        T.reduce_sum(xs, s, dim=1)
        T.copy(s, S)
        T.copy(I, ys)
        T.reduce_max(ys, m, dim=1)
        T.copy(m, M)
        T.fill(F, 1.5)
        T.fill(F[1:3, 2:5], -2.0)
        T.clear(G)
)",
                            "ops.py", {})
                   .kernel;
    TensorMap t = make_tensors(k, {}, {"F", "G", "S", "M"}, 1);
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 8; ++j) {
        t.at("X").set(i * 8 + j, static_cast<double>(i * 8 + j) + 0.25);
        t.at("I").set(i * 8 + j, static_cast<double>(j * 5 % 8 - i * 3));
        t.at("G").set(i * 8 + j, 7);
      }
    }
    run_tile_level(k, t, TileRunOptions{});
    for (int64_t i = 0; i < 4; ++i) {
      // Row i of X: 8i + j + 0.25 for j = 0..7, summing to 64i + 28 + 2.
      CHECK(t.at("S").at(i) == static_cast<double>(64 * i + 30));
      // Row i of I: j * 5 % 8 takes every value 0..7 once, so the maximum is 7 - 3i.
      CHECK(t.at("M").at(i) == static_cast<double>(7 - 3 * i));
      for (int64_t j = 0; j < 8; ++j) {
        const bool part = i >= 1 && i < 3 && j >= 2 && j < 5;
        INFO("F[" << i << ", " << j << "]");
        CHECK(t.at("F").at(i * 8 + j) == (part ? -2.0 : 1.5));
        CHECK(t.at("G").at(i * 8 + j) == 0.0);
      }
    }
  }
}
