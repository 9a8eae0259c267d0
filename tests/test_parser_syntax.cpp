// The accepted TileLang syntax: each construct of the front end builds the IR it should, checked
// against kernels built with the C++ builder or against hand-written printed forms.
#include <doctest/doctest.h>

#include "core/builder.h"
#include "core/builtin_layouts.h"
#include "core/expr_parser.h"
#include "core/kernel_equal.h"
#include "core/kernel_parser.h"
#include "core/printer.h"

using namespace tessel;

namespace {

Kernel parse(const std::string& text, const std::map<std::string, std::string>& defines = {}) {
  return parse_kernel(text, "k.py", defines).kernel;
}

void check_equal(const Kernel& expected, const Kernel& actual) {
  auto diff = kernel_difference(expected, actual);
  INFO("expected:\n" << print_kernel(expected) << "parsed:\n" << print_kernel(actual));
  CHECK_MESSAGE(!diff, (diff ? *diff : ""));
}

// A small kernel used by several cases: scale a 64 x 64 tile, written with the builder.
Kernel scale_kernel() {
  KernelBuilder T("scale");
  auto X = T.tensor("X", {64, 64}, DataType::f32());
  Var bx = T.kernel1(1, 128);
  auto F = T.alloc_fragment("F", {64, 64}, DataType::f32());
  T.copy(X, F);
  T.parallel(64, 64, [&](Var i, Var j) { F(i, j) = F(i, j) * 2.0; });
  T.copy(F, X(bx * 64, 0));
  return T.finish();
}

}  // namespace

TEST_SUITE("parser syntax") {
  TEST_CASE("a bare @T.prim_func with imports, comments and a docstring") {
    check_equal(scale_kernel(), parse(R"(# scale a tile
import tilelang
import tilelang.language as T

@T.prim_func
def scale(X: T.Tensor((64, 64), "float32")):
    """Doubles X in place."""
    with T.Kernel(1, threads=128) as bx:  # one block
        F = T.alloc_fragment((64, 64), "float32")
        T.copy(X, F)
        for i, j in T.Parallel(64, 64):
            F[i, j] = F[i, j] * 2.0
        T.copy(F, X[bx * 64, 0])
)"));
  }

  TEST_CASE("a T.macro is inlined where it is called, with its closure and defaults") {
    check_equal(scale_kernel(), parse(R"(
import tilelang.language as T

def scale(n=64, factor=2.0):
    @T.macro
    def double(buf, rows=n):
        for i, j in T.Parallel(rows, n):
            buf[i, j] = buf[i, j] * factor

    @T.prim_func
    def main(X: T.Tensor((n, n), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((n, n), "float32")
            T.copy(X, F)
            double(F)
            T.copy(F, X[bx * n, 0])

    return main
)"));
  }

  TEST_CASE("number constants fold; expressions of the kernel become lets that print back") {
    Kernel k = parse(R"(
@T.prim_func
def k(A: T.Tensor((256,), "float32")):
    with T.Kernel(2, threads=128) as bx:
        width = 128
        base = bx * width
        for i in T.Parallel(width):
            idx = base + i
            A[idx] = A[idx] + 1.0
)");
    // `width` folds into its uses; `base` and `idx` are lets, printed where they were written.
    CHECK(print_kernel(k) ==
          "@T.prim_func\n"
          "def k(A: T.Tensor((256,), \"float32\")):\n"
          "    with T.Kernel(2, threads=128) as (bx,):\n"
          "        base = bx * 128\n"
          "        for i in T.Parallel(128):\n"
          "            idx = base + i\n"
          "            A[idx] = A[idx] + 1.0\n");
    CHECK(print_kernel(parse(print_kernel(k))) == print_kernel(k));
  }

  TEST_CASE("elif nests an if in the else branch; a constant condition picks its branch") {
    Kernel k = parse(R"(
def k(swizzle=True):
    @T.prim_func
    def main(A: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            if swizzle:
                T.use_swizzle(panel_size=4)
            else:
                T.use_swizzle(panel_size=8)
            if tx < 32:
                A[tx] = 1
            elif tx < 64:
                A[tx] = 2
            else:
                A[tx] = 3
    return main
)",
                     {{"swizzle", "false"}});
    CHECK(print_kernel(k) ==
          "@T.prim_func\n"
          "def k(A: T.Tensor((128,), \"int32\")):\n"
          "    with T.Kernel(1, threads=128) as (bx,):\n"
          "        tx = T.get_thread_binding()\n"
          "        T.use_swizzle(panel_size=8)\n"
          "        if tx < 32:\n"
          "            A[tx] = 1\n"
          "        else:\n"
          "            if tx < 64:\n"
          "                A[tx] = 2\n"
          "            else:\n"
          "                A[tx] = 3\n");
  }

  TEST_CASE("names bound in the branch a constant condition picks stay visible after it") {
    const char* src = R"(
def k(wide=True):
    @T.prim_func
    def main(A: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            if wide:
                base = bx * 128
            else:
                base = bx * 64
            for i in T.Parallel(64):
                A[base + i] = 0.0
    return main
)";
    CHECK(print_stmt(parse(src)->body, 0) ==
          "base = bx * 128\n"
          "for i in T.Parallel(64):\n"
          "    A[base + i] = 0.0\n");
    Kernel narrow = parse(src, {{"wide", "False"}});
    CHECK(print_stmt(narrow->body, 0) ==
          "base = bx * 64\n"
          "for i in T.Parallel(64):\n"
          "    A[base + i] = 0.0\n");
  }

  TEST_CASE("thread-level constructs build what the builder builds") {
    KernelBuilder T("tail");
    Var N = T.dynamic("N");
    auto A = T.tensor("A", {N}, DataType::f32());
    Var bx = T.kernel1(ceildiv(N, 128), 128);
    Var tx = T.get_thread_binding();
    auto S = T.alloc_shared("S", {128}, DataType::f32());
    T.if_then(
        bx * 128 + tx < N, [&] { S(tx) = A(bx * 128 + tx); }, [&] { S(tx) = Expr(0.0); });
    T.sync_threads();
    T.serial(4, [&](Var i) { A(bx * 128 + i) = call(Builtin::kShflXor, {S(i), make_int(1)}); });
    check_equal(T.finish(), parse(R"(
N = T.dynamic("N")

@T.prim_func
def tail(A: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 128), threads=128) as (bx,):
        tx = T.get_thread_binding()
        S = T.alloc_shared((128,), "float32")
        if bx * 128 + tx < N:
            S[tx] = A[bx * 128 + tx]
        else:
            S[tx] = 0.0
        T.sync_threads()
        for i in T.serial(4):
            A[bx * 128 + i] = T.shfl_xor(S[i], 1)
)"));
  }

  TEST_CASE("operator keywords, policies, negative reduce dims, atomics and slices") {
    KernelBuilder T("misc");
    auto C = T.tensor("C", {64, 64}, DataType::f32());
    T.kernel1(1, 128);
    auto A = T.alloc_shared("A_s", {64, 32}, DataType::f16());
    auto B = T.alloc_shared("B_s", {64, 32}, DataType::f16());
    auto F = T.alloc_fragment("F", {64, 64}, DataType::f32());
    auto R = T.alloc_fragment("R", {64}, DataType::f32());
    T.fill(F, 1.0);
    T.gemm(
        A, B, F,
        GemmOptions{.transpose_B = true, .clear_accum = true, .policy = GemmWarpPolicy::kFullRow});
    T.reduce_absmax(F, R, 1, false);
    T.atomic_add(C.at({span(0, 32), all()}), F.at({span(32, 64), all()}));
    T.atomic_add(C(3, 4), R(7));
    check_equal(T.finish(), parse(R"(
@T.prim_func
def misc(C: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=128):
        A_s = T.alloc_shared((64, 32), "float16")
        B_s = T.alloc_shared((64, 32), T.float16)
        F = T.alloc_fragment((64, 64), "float32")
        R = T.alloc_fragment((64,), "float32")
        T.fill(F, 1.0)
        T.gemm(A_s, B_s, F, policy=T.GemmWarpPolicy.FullRow, transpose_B=True, clear_accum=True)
        T.reduce_absmax(F, R, dim=-1, clear=False)
        T.atomic_add(C[0:32, :], F[32:, :])
        T.atomic_add(C[3, 4], R[7])
)"));
  }

  TEST_CASE("T.annotate_layout takes layout specs for shared and fragment buffers") {
    KernelBuilder T("annotated");
    auto A = T.tensor("A", {64, 64}, DataType::f16());
    T.kernel1(1, 128);
    auto S = T.alloc_shared("S", {64, 64}, DataType::f16());
    T.annotate_layout({{S, parse_layout_spec("swizzle_128b(64, 64, f16)")}});
    T.copy(A, S);
    Kernel expected = T.finish();
    Kernel k = parse(R"(
@T.prim_func
def annotated(A: T.Tensor((64, 64), "float16")):
    with T.Kernel(1, threads=128):
        S = T.alloc_shared((64, 64), "float16")
        T.annotate_layout({S: swizzle_128b(64, 64, f16)})
        T.copy(A, S)
)");
    check_equal(expected, k);
    // The printed form spells the layout out as a lambda; it parses back to the same kernel.
    check_equal(expected, parse(print_kernel(k)));
  }

  TEST_CASE("a layout spec in T.annotate_layout reads the file's integer names") {
    // rows = 64, cols = 32, pad = 4: the spec is padded(64, 32, 4), `i` and `j` stay the lambda's.
    KernelBuilder T("padded_tile");
    auto A = T.tensor("A", {64, 32}, DataType::i8());
    T.kernel1(1, 128);
    auto S = T.alloc_shared("S", {64, 32}, DataType::i8());
    T.annotate_layout({{S, padded(64, 32, 4)}});
    T.copy(A, S);
    Kernel expected = T.finish();
    Kernel k = parse(R"(
def make(rows=64, cols=32, pad=4, i=7):
    @T.prim_func
    def padded_tile(A: T.Tensor((rows, cols), "int8")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((rows, cols), "int8")
            T.annotate_layout({S: T.Layout([rows, cols], lambda i, j: i * (cols + pad) + j)})
            T.copy(A, S)
    return padded_tile
)");
    check_equal(expected, k);
  }

  TEST_CASE("T.alloc_var and augmented assignments update in place") {
    Kernel k = parse(R"(
@T.prim_func
def acc(A: T.Tensor((128,), "float32"), S: T.Tensor((1,), "float32")):
    with T.Kernel(1, threads=128) as bx:
        total = T.alloc_var("float32", init=0.0)
        for i in range(2, 10):
            total += A[i]; total = total * 0.5
        S[0] -= total
)");
    // range(2, 10) starts at 2 for 8 iterations, printed as the serial loop T.serial(2, 10).
    CHECK(print_kernel(k) ==
          "@T.prim_func\n"
          "def acc(A: T.Tensor((128,), \"float32\"), S: T.Tensor((1,), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as (bx,):\n"
          "        total = T.alloc_var(\"float32\", init=0.0)\n"
          "        for i in T.serial(2, 10):\n"
          "            total[0] = total[0] + A[i]\n"
          "            total[0] = total[0] * 0.5\n"
          "        S[0] = S[0] - total[0]\n");
  }

  TEST_CASE("T.grid nests serial loops and one-line blocks hold simple statements") {
    Kernel k = parse(R"(
@T.prim_func
def g(A: T.Tensor((4, 8), "int32")):
    with T.Kernel(1, threads=32) as bx:
        for i, j in T.grid(4, 8):
            if i < j: A[i, j] = i * 8 + j
)");
    CHECK(print_kernel(k) ==
          "@T.prim_func\n"
          "def g(A: T.Tensor((4, 8), \"int32\")):\n"
          "    with T.Kernel(1, threads=32) as (bx,):\n"
          "        for i in T.serial(4):\n"
          "            for j in T.serial(8):\n"
          "                if i < j:\n"
          "                    A[i, j] = i * 8 + j\n");
  }

  TEST_CASE("slices with computed bounds give regions of the right extent") {
    Kernel k = parse(R"(
def k(bk=32):
    @T.prim_func
    def main(A: T.Tensor((4, 128, 16), "float16")):
        with T.Kernel(4, threads=128) as bx:
            S = T.alloc_shared((bk, 16), "float16")
            for k in T.serial(128 // bk):
                T.copy(A[bx, k * bk:(k + 1) * bk, :], S)
    return main
)");
    // (k + 1) * 32 - k * 32 simplifies to the constant 32: the region prints with its end.
    CHECK(print_stmt(k->body, 0) ==
          "S = T.alloc_shared((32, 16), \"float16\")\n"
          "for k in T.serial(4):\n"
          "    T.copy(A[bx, k * 32:k * 32 + 32, :], S)\n");
  }

  TEST_CASE("-D values override defaults with the parameter's kind") {
    const char* src = R"(
def k(n=64, dtype="float16", flag=False, scale=1.5):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=32) as bx:
            if flag:
                A[0] = scale
    return main
)";
    Kernel k = parse(src, {{"n", "96"}, {"dtype", "bfloat16"}, {"flag", "true"}, {"scale", "2"}});
    CHECK(print_kernel(k) ==
          "@T.prim_func\n"
          "def k(A: T.Tensor((96,), \"bfloat16\")):\n"
          "    with T.Kernel(1, threads=32) as (bx,):\n"
          "        A[0] = T.bfloat16(2.0)\n");
    // Without -D the default False drops the store: the body is empty.
    CHECK(print_stmt(parse(src)->body, 0) == "pass\n");
    // A quoted string and a tuple parse too; names that are not parameters are ignored here.
    CHECK(parse(src, {{"dtype", "\"float32\""}, {"unrelated", "1"}})->params[0]->dtype ==
          DataType::f32());
  }

  TEST_CASE("aliases of tilelang.language, buffer shapes and tuple unpacking resolve") {
    Kernel k = parse(R"(
import tilelang.language as TL
from tilelang import language as L2

def k(M=64, N=32):
    shape = (M, N)
    rows, cols = shape

    @TL.prim_func
    def main(A: L2.Tensor(shape, "float32"), B: TL.Tensor((A.shape[1], A.shape[0]), A.dtype)):
        with TL.Kernel(1, threads=128) as bx:
            for i, j in TL.Parallel(rows, cols):
                B[j, i] = A[i, j]
    return main
)");
    CHECK(print_kernel(k) ==
          "@T.prim_func\n"
          "def k(A: T.Tensor((64, 32), \"float32\"), B: T.Tensor((32, 64), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as (bx,):\n"
          "        for i, j in T.Parallel(64, 32):\n"
          "            B[j, i] = A[i, j]\n");
  }

  TEST_CASE("host code around the kernel is skipped") {
    Kernel k = parse(R"(
import torch

def ref_program(A, B):
    return A @ B

@T.prim_func
def k(A: T.Tensor((32,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        T.clear(A)

if __name__ == "__main__":
    a = torch.randn(32)
    print(k(a))
)");
    CHECK(print_stmt(k->body, 0) == "T.clear(A)\n");
  }

  TEST_CASE("the packed-to-unsigned converter shifts and masks in the storage type") {
    Kernel k = parse(R"(
@T.prim_func
def unpack(B: T.Tensor((8,), "uint8"), W: T.Tensor((16,), "float16")):
    with T.Kernel(1, threads=32) as bx:
        convert = _tir_packed_to_unsigned_convert("uint", 8)
        for j in T.Parallel(16):
            W[j] = convert(4, B[j // 2], j % 2, dtype="float16")
)");
    // ((B >> (pos * 4)) & 15) in uint8, then cast: TVM's definition.
    CHECK(print_stmt(k->body, 0) ==
          "for j in T.Parallel(16):\n"
          "    W[j] = T.cast(B[j // 2] >> T.cast(j % 2 * 4, \"uint8\") & T.uint8(15), "
          "\"float16\")\n");
  }

}  // TEST_SUITE
