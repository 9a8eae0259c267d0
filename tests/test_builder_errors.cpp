// Bad kernels built with the C++ builder raise user errors that name the kernel, operator,
// buffers and the fix — never internal errors or crashes.
#include <doctest/doctest.h>

#include "core/builder.h"
#include "core/error.h"
#include "core/printer.h"

using namespace tessel;

namespace {
const DataType f16 = DataType::f16();
const DataType f32 = DataType::f32();
}  // namespace

TEST_SUITE("builder errors") {

TEST_CASE("more threads than a block may have names the kernel and the limit") {
  KernelBuilder T("k");
  T.kernel1(4, 2048);
  CHECK_THROWS_WITH_AS(T.finish(),
                       "kernel 'k': threads=2048 must be between 1 and 1024 (the threads a block "
                       "may have)",
                       UserError);
}

TEST_CASE("a thread count that is not a multiple of the warp size is a valid block") {
  KernelBuilder T("k");
  T.kernel1(4, 100);
  CHECK(T.finish()->threads == 100);
}

TEST_CASE("a zero grid extent is rejected") {
  KernelBuilder T("k");
  T.kernel1(0, 128);
  CHECK_THROWS_WITH_AS(T.finish(), doctest::Contains("grid extent 0 is 0"), UserError);
}

TEST_CASE("a negative buffer extent names the buffer and dimension") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  CHECK_THROWS_WITH_AS(T.alloc_shared("S", {16, -4}, f16),
                       doctest::Contains("extent of dimension 1 is -4; every extent must be positive"),
                       UserError);
}

TEST_CASE("allocating before T.Kernel is an error") {
  KernelBuilder T("k");
  CHECK_THROWS_WITH_AS(T.alloc_shared("S", {16}, f16),
                       doctest::Contains("comes before T.Kernel(...)"), UserError);
}

TEST_CASE("gemm with mismatched K names both buffers and their shapes") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto A = T.alloc_shared("A_s", {64, 32}, f16);
  auto B = T.alloc_shared("B_s", {16, 64}, f16);
  auto C = T.alloc_fragment("C_l", {64, 64}, f32);
  CHECK_THROWS_WITH_AS(
      T.gemm(A, B, C),
      doctest::Contains("K (the reduction dimension) of 'A_s' (64, 32) is 32 but K (the "
                        "reduction dimension) of 'B_s' (16, 64) is 16"),
      UserError);
}

TEST_CASE("gemm with a 3-d operand is rejected") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto A = T.alloc_shared("A_s", {2, 64, 32}, f16);
  auto B = T.alloc_shared("B_s", {32, 64}, f16);
  auto C = T.alloc_fragment("C_l", {64, 64}, f32);
  CHECK_THROWS_WITH_AS(T.gemm(A, B, C), doctest::Contains("'A_s' has 3 dimensions (2, 64, 32)"),
                       UserError);
}

TEST_CASE("gemm inputs of different dtypes are rejected") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto A = T.alloc_shared("A_s", {64, 32}, f16);
  auto B = T.alloc_shared("B_s", {32, 64}, DataType::bf16());
  auto C = T.alloc_fragment("C_l", {64, 64}, f32);
  CHECK_THROWS_WITH_AS(T.gemm(A, B, C),
                       doctest::Contains("'A_s' is float16 but 'B_s' is bfloat16"), UserError);
}

TEST_CASE("gemm reading global memory asks for a copy first") {
  KernelBuilder T("k");
  auto A = T.tensor("A", {64, 32}, f16);
  T.kernel1(1, 128);
  auto B = T.alloc_shared("B_s", {32, 64}, f16);
  auto C = T.alloc_fragment("C_l", {64, 64}, f32);
  CHECK_THROWS_WITH_AS(T.gemm(A, B, C), doctest::Contains("'A' is in global memory"), UserError);
}

TEST_CASE("gemm accumulating into a half-precision fragment is rejected") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto A = T.alloc_shared("A_s", {64, 32}, f16);
  auto B = T.alloc_shared("B_s", {32, 64}, f16);
  auto C = T.alloc_fragment("C_l", {64, 64}, DataType::i32());
  CHECK_THROWS_WITH_AS(T.gemm(A, B, C), doctest::Contains("accumulate in float32"), UserError);
}

TEST_CASE("copy between tiles of different shapes names both buffers") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto S = T.alloc_shared("S", {64, 32}, f16);
  auto F = T.alloc_fragment("F", {32, 64}, f16);
  CHECK_THROWS_WITH_AS(T.copy(S, F),
                       doctest::Contains("the tile of 'S' has shape (64, 32) but the tile of 'F' "
                                         "has shape (32, 64)"),
                       UserError);
}

TEST_CASE("copy with both sides as points cannot know the tile shape") {
  KernelBuilder T("k");
  auto A = T.tensor("A", {64, 64}, f16);
  T.kernel1(1, 128);
  auto S = T.alloc_shared("S", {64, 64}, f16);
  CHECK_THROWS_WITH_AS(T.copy(A(0, 0), S(0, 0)), doctest::Contains("both 'A' and 'S' are given as single points"),
                       UserError);
}

TEST_CASE("a point region with too few indices for the tile asks for slices") {
  KernelBuilder T("k");
  auto A = T.tensor("A", {64}, f16);
  T.kernel1(1, 128);
  auto S = T.alloc_shared("S", {8, 8}, f16);
  CHECK_THROWS_WITH_AS(T.copy(A(0), S), doctest::Contains("write the region with slices"),
                       UserError);
}

TEST_CASE("reduce into a buffer of the wrong shape names the shape to allocate") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto F = T.alloc_fragment("F", {64, 32}, f32);
  auto R = T.alloc_fragment("R", {32}, f32);
  CHECK_THROWS_WITH_AS(T.reduce_max(F, R, 1),
                       doctest::Contains("reducing dim 1 of 'F' gives shape (64,), but 'R'"),
                       UserError);
}

TEST_CASE("reduce over a dimension the source lacks is rejected") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto F = T.alloc_fragment("F", {64, 32}, f32);
  auto R = T.alloc_fragment("R", {64}, f32);
  CHECK_THROWS_WITH_AS(T.reduce_sum(F, R, 2), doctest::Contains("dim=2 but 'F' has 2 dimension(s)"),
                       UserError);
}

TEST_CASE("a negative reduce dim past the rank is refused with the dim as written") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto F = T.alloc_fragment("F", {64, 32}, f32);
  auto R = T.alloc_fragment("R", {64}, f32);
  CHECK_THROWS_WITH_AS(T.reduce_sum(F, R, -3),
                       doctest::Contains("dim=-3 but 'F' has 2 dimension(s); pick a dim in [-2, 2)"),
                       UserError);
}

TEST_CASE("a store with the wrong number of indices names the buffer") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto S = T.alloc_shared("S", {8, 8}, f32);
  CHECK_THROWS_WITH_AS(S(1) = Expr(1.0),
                       doctest::Contains("store of 'S' with 1 index(es), but it has 2 dimension(s)"),
                       UserError);
}

TEST_CASE("a float index is rejected") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto S = T.alloc_shared("S", {8}, f32);
  CHECK_THROWS_WITH_AS(Expr(S(Expr(1.5))), doctest::Contains("indices must be integers"),
                       UserError);
}

TEST_CASE("an atomic into a fragment is rejected") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto F = T.alloc_fragment("F", {8}, f32);
  auto G = T.alloc_fragment("G", {8}, f32);
  CHECK_THROWS_WITH_AS(T.atomic_add(F, G), doctest::Contains("atomics update global or shared memory"),
                       UserError);
}

TEST_CASE("a negative pipeline depth is rejected") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  CHECK_THROWS_WITH_AS(T.pipelined(4, -1, [](Var) {}), doctest::Contains("num_stages=-1 is negative"),
                       UserError);
}

TEST_CASE("a kernel without a launch cannot be finished") {
  KernelBuilder T("k");
  CHECK_THROWS_WITH_AS(T.finish(), doctest::Contains("has no T.Kernel(...) launch"), UserError);
}

TEST_CASE("builder records the caller's source location on operators") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto S = T.alloc_shared("S", {64, 32}, f16);
  auto F = T.alloc_fragment("F", {32, 64}, f16);
  std::string where = "T.copy at test_builder_errors.cpp:" + std::to_string(__LINE__ + 1);
  CHECK_THROWS_WITH_AS(T.copy(S, F), doctest::Contains(where.c_str()), UserError);
}

}  // TEST_SUITE

TEST_SUITE("annotate_layout") {

TEST_CASE("a layout whose shape differs from the buffer's names the buffer") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto S = T.alloc_shared("S", {64, 32}, DataType::f16());
  CHECK_THROWS_WITH_AS(T.annotate_layout({{S, Layout::row_major({32, 64})}}),
                       doctest::Contains("the layout for 'S' takes indices of shape (32, 64)"),
                       UserError);
}

TEST_CASE("a Layout on a fragment asks for a Fragment") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto F = T.alloc_fragment("F", {16, 16}, DataType::f32());
  CHECK_THROWS_WITH_AS(T.annotate_layout({{F, Layout::row_major({16, 16})}}),
                       doctest::Contains("'F' is a local.fragment buffer but was given a Layout; annotate fragments with a Fragment"),
                       UserError);
}

TEST_CASE("a non-injective shared layout is refused where it is annotated, naming two indices") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto S = T.alloc_shared("S", {4, 4}, DataType::f32());
  // i * 2 + j: S[0, 2] and S[1, 0] both land at offset 2 (row-major order finds (0, 2) first).
  Layout folded = Layout::from_fn({4, 4}, [](const std::vector<Var>& v) {
    return std::vector<Expr>{v[0] * 2 + v[1]};
  });
  CHECK_THROWS_WITH_AS(T.annotate_layout({{S, folded}}),
                       doctest::Contains("the layout given to 'S' is not injective: S[0, 2] and "
                                         "S[1, 0] both map to offset (2)"),
                       UserError);
}

TEST_CASE("a fragment that puts two elements in one register is refused where it is annotated") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto F = T.alloc_fragment("F", {8, 8}, DataType::f32());
  // thread i, register j % 4: F[0, 0] and F[0, 4] share thread 0, register 0.
  Fragment clash = Fragment::from_fn({8, 8}, [](const std::vector<Var>& v, const Var&) {
    return std::pair<Expr, Expr>(v[0], floormod(v[1], 4));
  });
  CHECK_THROWS_WITH_AS(T.annotate_layout({{F, clash}}),
                       doctest::Contains("F[0, 0] (replica 0) and F[0, 4] (replica 0) both live in "
                                         "thread 0, register 0"),
                       UserError);
}

TEST_CASE("an annotated layout prints in the spec syntax and leaves results unchanged") {
  KernelBuilder T("k");
  T.kernel1(1, 128);
  auto S = T.alloc_shared("S", {4, 4}, DataType::f32());
  // Row-major 4x4 is i * 4 + j (the printer writes the forward expression over i, j).
  T.annotate_layout({{S, Layout::row_major({4, 4})}});
  Kernel k = T.finish();
  CHECK(print_kernel(k).find("T.annotate_layout({S: Layout([4, 4], lambda i, j: i * 4 + j)})") !=
        std::string::npos);
}

}  // TEST_SUITE
