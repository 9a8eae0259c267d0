// The printer's output is golden: exact expected text for kernels built by hand.
#include <doctest/doctest.h>

#include "core/builder.h"
#include "core/printer.h"
#include "examples/registry.h"

using namespace tessel;

TEST_SUITE("printer") {

TEST_CASE("gemm prints as the paper's Fig. 16") {
  const Example* gemm = find_example("gemm");
  REQUIRE(gemm != nullptr);
  Kernel k = gemm->build(make_params(*gemm, {{"M", "200"}, {"N", "136"}, {"K", "72"}}));
  // ceildiv(136, 128) = 2 and ceildiv(200, 128) = 2 fold; ceildiv(72, 32) = 3 k-steps.
  CHECK(print_kernel(k) ==
        "@T.prim_func\n"
        "def gemm(A: T.Tensor((200, 72), \"float16\"), B: T.Tensor((72, 136), \"float16\"), "
        "C: T.Tensor((200, 136), \"float32\")):\n"
        "    with T.Kernel(2, 2, threads=128) as (bx, by):\n"
        "        A_shared = T.alloc_shared((128, 32), \"float16\")\n"
        "        B_shared = T.alloc_shared((32, 128), \"float16\")\n"
        "        C_local = T.alloc_fragment((128, 128), \"float32\")\n"
        "        T.clear(C_local)\n"
        "        for k in T.Pipelined(3, num_stages=3):\n"
        "            T.copy(A[by * 128, k * 32], A_shared)\n"
        "            T.copy(B[k * 32, bx * 128], B_shared)\n"
        "            T.gemm(A_shared, B_shared, C_local)\n"
        "        T.copy(C_local, C[by * 128, bx * 128])\n");
}

TEST_CASE("nested Parallel loops print as one loop with several variables") {
  KernelBuilder T("scale");
  auto X = T.tensor("X", {64, 64}, DataType::f32());
  Var bx = T.kernel1(1, 128);
  auto F = T.alloc_fragment("F", {64, 64}, DataType::f32());
  T.copy(X, F);
  T.parallel(64, 64, [&](Var i, Var j) { F(i, j) = F(i, j) * 2.0; });
  T.copy(F, X(bx * 64, 0));
  CHECK(print_kernel(T.finish()) ==
        "@T.prim_func\n"
        "def scale(X: T.Tensor((64, 64), \"float32\")):\n"
        "    with T.Kernel(1, threads=128) as (bx,):\n"
        "        F = T.alloc_fragment((64, 64), \"float32\")\n"
        "        T.copy(X, F)\n"
        "        for i, j in T.Parallel(64, 64):\n"
        "            F[i, j] = F[i, j] * 2.0\n"
        "        T.copy(F, X[bx * 64, 0])\n");
}

TEST_CASE("dynamic dimensions, guards and thread bindings print") {
  KernelBuilder T("tail");
  Var N = T.dynamic("N");
  auto A = T.tensor("A", {N}, DataType::f32());
  Var bx = T.kernel1(ceildiv(N, 128), 128);
  Var tx = T.get_thread_binding();
  auto S = T.alloc_shared("S", {128}, DataType::f32());
  T.if_then(bx * 128 + tx < N, [&] { S(tx) = A(bx * 128 + tx); }, [&] { S(tx) = Expr(0.0); });
  T.sync_threads();
  T.serial(4, [&](Var i) { A(bx * 128 + i) = S(i); });
  CHECK(print_kernel(T.finish()) ==
        "N = T.dynamic(\"N\")\n"
        "@T.prim_func\n"
        "def tail(A: T.Tensor((N,), \"float32\")):\n"
        "    with T.Kernel((N + 127) // 128, threads=128) as (bx,):\n"
        "        tx = T.get_thread_binding()\n"
        "        S = T.alloc_shared((128,), \"float32\")\n"
        "        if bx * 128 + tx < N:\n"
        "            S[tx] = A[bx * 128 + tx]\n"
        "        else:\n"
        "            S[tx] = 0.0\n"
        "        T.sync_threads()\n"
        "        for i in T.serial(4):\n"
        "            A[bx * 128 + i] = S[i]\n");
}

TEST_CASE("gemm options, reduce options, fills, atomics and slices print with keywords") {
  KernelBuilder T("misc");
  auto C = T.tensor("C", {64, 64}, DataType::f32());
  T.kernel1(1, 128);
  auto A = T.alloc_shared("A_s", {64, 32}, DataType::f16());
  auto B = T.alloc_shared("B_s", {64, 32}, DataType::f16());
  auto F = T.alloc_fragment("F", {64, 64}, DataType::f32());
  auto R = T.alloc_fragment("R", {64}, DataType::f32());
  T.fill(F, 1.0);
  T.gemm(A, B, F, GemmOptions{.transpose_B = true, .clear_accum = true,
                             .policy = GemmWarpPolicy::kFullRow});
  T.reduce_absmax(F, R, 1, false);
  T.atomic_add(C.at({span(0, 32), all()}), F.at({span(32, 64), all()}));
  T.use_swizzle(8);
  CHECK(print_kernel(T.finish()) ==
        "@T.prim_func\n"
        "def misc(C: T.Tensor((64, 64), \"float32\")):\n"
        "    with T.Kernel(1, threads=128) as (bx,):\n"
        "        A_s = T.alloc_shared((64, 32), \"float16\")\n"
        "        B_s = T.alloc_shared((64, 32), \"float16\")\n"
        "        F = T.alloc_fragment((64, 64), \"float32\")\n"
        "        R = T.alloc_fragment((64,), \"float32\")\n"
        "        T.fill(F, 1.0)\n"
        "        T.gemm(A_s, B_s, F, transpose_B=True, clear_accum=True, "
        "policy=T.GemmWarpPolicy.FullRow)\n"
        "        T.reduce_absmax(F, R, dim=1, clear=False)\n"
        "        T.atomic_add(C[0:32, :], F[32:64, :])\n"
        "        T.use_swizzle(panel_size=8)\n");
}

}  // TEST_SUITE
