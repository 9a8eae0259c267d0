// The tile-level interpreter: operator semantics, thread-level control, and runtime errors.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <cmath>
#include <cstring>

#include "core/builder.h"
#include "core/error.h"
#include "core/kernel_parser.h"
#include "examples/run_example.h"
#include "interp/tile_interpreter.h"

using namespace tessel;

namespace {

HostTensor iota(DataType t, std::vector<int64_t> shape) {
  HostTensor h(t, std::move(shape));
  for (int64_t i = 0; i < h.size(); ++i) h.set(i, static_cast<double>(i));
  return h;
}

}  // namespace

TEST_SUITE("tile interpreter") {
  TEST_CASE("gemm passes with edges that are not multiples of the tile") {
    const Example* e = find_example("gemm");
    // 200 = 128 + 72, 136 = 128 + 8, 72 = 2 * 32 + 8: every tile edge hangs over.
    ExampleRun run =
        run_example_tile(*e, make_params(*e, {{"M", "200"}, {"N", "136"}, {"K", "72"}}), 1);
    CHECK(run.passed);
    CHECK(run.stats.blocks == 4);
  }

  TEST_CASE("bf16 and transpose_B gemm variants pass") {
    const Example* e = find_example("gemm");
    CHECK(
        run_example_tile(
            *e, make_params(*e, {{"M", "96"}, {"N", "160"}, {"K", "64"}, {"dtype", "bfloat16"}}), 2)
            .passed);
    const Example* t = find_example("gemm_transpose_b");
    CHECK(
        run_example_tile(*t, make_params(*t, {{"M", "200"}, {"N", "136"}, {"K", "72"}}), 3).passed);
    const Example* rs = find_example("gemm_rs");
    CHECK(run_example_tile(*rs, make_params(*rs, {{"M", "130"}, {"N", "64"}, {"K", "40"}}), 4)
              .passed);
  }

  TEST_CASE("softmax and the dynamic-shape elementwise kernel pass") {
    const Example* s = find_example("softmax");
    CHECK(run_example_tile(*s, make_params(*s, {{"M", "100"}}), 5).passed);
    const Example* e = find_example("elementwise");
    CHECK(run_example_tile(*e, make_params(*e, {{"N", "777"}}), 6).passed);
  }

  TEST_CASE("gemm accumulates products of fp16 inputs exactly in fp32") {
    // 1 x 32 @ 32 x 1 with A = 0.5 everywhere and B = 0.25 everywhere: 32 * 0.125 = 4 exactly.
    KernelBuilder T("dot");
    auto A = T.tensor("A", {16, 32}, DataType::f16());
    auto B = T.tensor("B", {32, 16}, DataType::f16());
    auto C = T.tensor("C", {16, 16}, DataType::f32());
    T.kernel1(1, 128);
    auto As = T.alloc_shared("As", {16, 32}, DataType::f16());
    auto Bs = T.alloc_shared("Bs", {32, 16}, DataType::f16());
    auto Cl = T.alloc_fragment("Cl", {16, 16}, DataType::f32());
    T.copy(A, As);
    T.copy(B, Bs);
    T.gemm(As, Bs, Cl, GemmOptions{.clear_accum = true});
    T.copy(Cl, C);
    TensorMap t;
    t.emplace("A", HostTensor(DataType::f16(), {16, 32}));
    t.emplace("B", HostTensor(DataType::f16(), {32, 16}));
    t.emplace("C", HostTensor(DataType::f32(), {16, 16}));
    for (int64_t i = 0; i < 512; ++i) {
      t.at("A").set(i, 0.5);
      t.at("B").set(i, 0.25);
    }
    run_tile_level(T.finish(), t);
    CHECK(t.at("C").at(0) == 4.0);
    CHECK(t.at("C").at(255) == 4.0);
  }

  // T.gemm decodes its f16 operands to float (eight at a time by the CPU where it can): every
  // finite half, subnormals and both zeros included, multiplied by an identity comes out as
  // itself. B holds bit pattern p at flat position p (inf and NaN patterns replaced by 0, since
  // 0 * inf would be NaN); C = I * B, so C[i, j] is the half with bits i * 4096 + j.
  TEST_CASE("gemm decodes every finite f16 operand exactly") {
    Kernel k = parse_kernel(R"(import tilelang.language as T


@T.prim_func
def identity(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 4096), "float16"),
             C: T.Tensor((16, 4096), "float32")):
    with T.Kernel(8, threads=128) as bx:
        A_s = T.alloc_shared((16, 16), "float16")
        B_s = T.alloc_shared((16, 512), "float16")
        C_l = T.alloc_fragment((16, 512), "float32")
        T.copy(A, A_s)
        T.copy(B[0:16, bx * 512:(bx + 1) * 512], B_s)
        T.clear(C_l)
        T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[0:16, bx * 512:(bx + 1) * 512])
)",
                            "identity.py", {})
                   .kernel;
    TensorMap t;
    t.emplace("A", HostTensor(DataType::f16(), {16, 16}));
    t.emplace("B", HostTensor(DataType::f16(), {16, 4096}));
    t.emplace("C", HostTensor(DataType::f32(), {16, 4096}));
    for (int64_t i = 0; i < 16; ++i) {
      for (int64_t j = 0; j < 16; ++j) t.at("A").set(i * 16 + j, i == j ? 1.0 : 0.0);
    }
    auto finite_bits = [](int64_t p) {
      return static_cast<uint16_t>((p & 0x7C00) == 0x7C00 ? 0 : p);
    };
    for (int64_t p = 0; p < 65536; ++p) {
      const uint16_t bits = finite_bits(p);
      std::memcpy(t.at("B").data() + p * 2, &bits, 2);
    }
    run_tile_level(k, t);
    int64_t wrong = 0;
    for (int64_t p = 0; p < 65536; ++p) {
      const double want = static_cast<double>(
          static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(finite_bits(p))));
      wrong += t.at("C").at(p) != want;
    }
    CHECK(wrong == 0);
  }

  TEST_CASE("copy past the tensor edge loads zeros and drops stores") {
    // A is 5 long; an 8-element tile is copied out (elements 5..7 read as zero), then filled with
    // 7 and copied back: elements 0..4 become 7, and the three stores past the edge are dropped
    // (an out-of-bounds write would be a user error, not a silent success).
    KernelBuilder T("edge");
    auto A = T.tensor("A", {5}, DataType::f32());
    auto Out = T.tensor("Out", {8}, DataType::f32());
    T.kernel1(1, 32);
    auto S = T.alloc_shared("S", {8}, DataType::f32());
    T.copy(A(0), S);
    T.copy(S, Out);
    T.fill(S, 7.0);
    T.copy(S, A(0));
    TensorMap t;
    t.emplace("A", iota(DataType::f32(), {5}));
    t.emplace("Out", HostTensor(DataType::f32(), {8}));
    run_tile_level(T.finish(), t);
    for (int i = 0; i < 5; ++i) CHECK(t.at("Out").at(i) == i);
    for (int i = 5; i < 8; ++i) CHECK(t.at("Out").at(i) == 0.0);
    for (int i = 0; i < 5; ++i) CHECK(t.at("A").at(i) == 7.0);
  }

  TEST_CASE("copy into a lower-precision buffer rounds to nearest even") {
    KernelBuilder T("cast");
    auto A = T.tensor("A", {2}, DataType::f32());
    auto B = T.tensor("B", {2}, DataType::f16());
    T.kernel1(1, 32);
    T.copy(A, B);
    TensorMap t;
    t.emplace("A", HostTensor(DataType::f32(), {2}));
    t.emplace("B", HostTensor(DataType::f16(), {2}));
    // f16 spacing at 1.0 is 2^-10; 1 + 2^-11 is a tie and rounds to the even 1.0,
    // 1 + 3 * 2^-11 is a tie and rounds to the even 1 + 2^-9.
    t.at("A").set(0, 1.0 + std::ldexp(1.0, -11));
    t.at("A").set(1, 1.0 + 3 * std::ldexp(1.0, -11));
    run_tile_level(T.finish(), t);
    CHECK(t.at("B").at(0) == 1.0);
    CHECK(t.at("B").at(1) == 1.0 + std::ldexp(1.0, -9));
  }

  TEST_CASE("a 2-d copy between two dtypes at a tensor edge rounds, drops and zero-fills by row") {
    // S (f32, 4 x 4) holds r * 4 + c + 2^-12 and goes to Out[1:5, 2:6] of a 3 x 5 f16 tensor:
    // rows 1-2 and columns 2-4 of Out are inside. Past 1 the f16 spacing is at least 2^-10, so
    // + 2^-12 rounds down to the integer; 2^-12 itself is an f16. The rest of Out keeps -1. Then
    // In[0:2, 1:5] of a 2 x 3 f16 tensor comes into a 2 x 4 f32 tile: columns 3 and 4 lie past the
    // edge and read zero.
    KernelBuilder T("cast_rows");
    auto A = T.tensor("A", {4, 4}, DataType::f32());
    auto Out = T.tensor("Out", {3, 5}, DataType::f16());
    auto In = T.tensor("In", {2, 3}, DataType::f16());
    auto Back = T.tensor("Back", {2, 4}, DataType::f32());
    T.kernel1(1, 32);
    auto S = T.alloc_shared("S", {4, 4}, DataType::f32());
    auto S2 = T.alloc_shared("S2", {2, 4}, DataType::f32());
    T.copy(A, S);
    T.copy(S, Out.at({Index::slice(1, 5), Index::slice(2, 6)}));
    T.copy(In.at({Index::slice(0, 2), Index::slice(1, 5)}), S2);
    T.copy(S2, Back);
    TensorMap t;
    t.emplace("A", HostTensor(DataType::f32(), {4, 4}));
    t.emplace("Out", HostTensor(DataType::f16(), {3, 5}));
    t.emplace("In", iota(DataType::f16(), {2, 3}));
    t.emplace("Back", HostTensor(DataType::f32(), {2, 4}));
    for (int64_t i = 0; i < 16; ++i)
      t.at("A").set(i, static_cast<double>(i) + std::ldexp(1.0, -12));
    for (int64_t i = 0; i < 15; ++i) t.at("Out").set(i, -1.0);
    run_tile_level(T.finish(), t);
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t c = 0; c < 5; ++c) {
        double want = -1.0;
        if (r >= 1 && c >= 2) want = (r - 1) * 4 + (c - 2) + (r == 1 && c == 2 ? 0x1p-12 : 0.0);
        INFO("Out[" << r << ", " << c << "]");
        CHECK(t.at("Out").at(r * 5 + c) == want);
      }
    }
    // In = iota: In[r, c] = r * 3 + c; Back[r, k] = In[r, 1 + k] for 1 + k < 3, else 0.
    for (int64_t r = 0; r < 2; ++r) {
      for (int64_t k = 0; k < 4; ++k) {
        INFO("Back[" << r << ", " << k << "]");
        CHECK(t.at("Back").at(r * 4 + k) == (1 + k < 3 ? r * 3 + 1 + k : 0.0));
      }
    }
  }

  TEST_CASE("a copy of a box out of a 4-d tensor takes the box's elements, row by row or whole") {
    // X (2, 3, 4, 5) holds its flat index: X[a, b, c, d] = ((a * 3 + b) * 4 + c) * 5 + d (all
    // exact in f16). The boxes: rows 1-2 of X[1, :, 2, :] (a unit dimension between the rows),
    // all of X[0] (one contiguous run of 60), and X[1, 0:3, 1:3, 1:4] (two stepped dimensions, rows
    // of 3). Each goes into a shared tile and back out to a tensor of the tile's shape. Last,
    // X[0, 0, 0:2, :] (10 elements in a row in X) into S4[1:3, 0:5] of a 4 x 6 tile filled with
    // -1 (rows of 5, 6 apart): only where both sides run on may the rows be one run.
    KernelBuilder T("boxes");
    auto X = T.tensor("X", {2, 3, 4, 5}, DataType::f16());
    auto O1 = T.tensor("O1", {2, 5}, DataType::f16());
    auto O2 = T.tensor("O2", {3, 4, 5}, DataType::f16());
    auto O3 = T.tensor("O3", {3, 2, 3}, DataType::f16());
    auto O4 = T.tensor("O4", {4, 6}, DataType::f16());
    T.kernel1(1, 32);
    auto S1 = T.alloc_shared("S1", {2, 5}, DataType::f16());
    auto S2 = T.alloc_shared("S2", {3, 4, 5}, DataType::f16());
    auto S3 = T.alloc_shared("S3", {3, 2, 3}, DataType::f16());
    auto S4 = T.alloc_shared("S4", {4, 6}, DataType::f16());
    T.copy(X.at({1, span(1, 3), 2, all()}), S1);
    T.copy(X.at({0, all(), all(), all()}), S2);
    T.copy(X.at({1, span(0, 3), span(1, 3), span(1, 4)}), S3);
    T.copy(S1, O1);
    T.copy(S2, O2);
    T.copy(S3, O3);
    T.fill(S4, -1.0);
    T.copy(X.at({0, 0, span(0, 2), all()}), S4.at({span(1, 3), span(0, 5)}));
    T.copy(S4, O4);
    TensorMap t;
    t.emplace("X", iota(DataType::f16(), {2, 3, 4, 5}));
    t.emplace("O1", HostTensor(DataType::f16(), {2, 5}));
    t.emplace("O2", HostTensor(DataType::f16(), {3, 4, 5}));
    t.emplace("O3", HostTensor(DataType::f16(), {3, 2, 3}));
    t.emplace("O4", HostTensor(DataType::f16(), {4, 6}));
    run_tile_level(T.finish(), t);
    auto x = [](int64_t a, int64_t b, int64_t c, int64_t d) {
      return static_cast<double>(((a * 3 + b) * 4 + c) * 5 + d);
    };
    int64_t wrong = 0;
    for (int64_t r = 0; r < 2; ++r) {
      for (int64_t d = 0; d < 5; ++d) wrong += t.at("O1").at(r * 5 + d) != x(1, 1 + r, 2, d);
    }
    for (int64_t i = 0; i < 60; ++i) wrong += t.at("O2").at(i) != static_cast<double>(i);
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t c = 0; c < 2; ++c) {
        for (int64_t d = 0; d < 3; ++d)
          wrong += t.at("O3").at((b * 2 + c) * 3 + d) != x(1, b, 1 + c, 1 + d);
      }
    }
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t c = 0; c < 6; ++c) {
        const bool copied = r >= 1 && r < 3 && c < 5;
        wrong += t.at("O4").at(r * 6 + c) != (copied ? x(0, 0, r - 1, c) : -1.0);
      }
    }
    CHECK(wrong == 0);
  }

  TEST_CASE("reduce_sum with clear=False adds to the old values") {
    KernelBuilder T("acc");
    auto X = T.tensor("X", {4, 3}, DataType::f32());
    auto Y = T.tensor("Y", {4}, DataType::f32());
    T.kernel1(1, 32);
    auto F = T.alloc_fragment("F", {4, 3}, DataType::f32());
    auto R = T.alloc_fragment("R", {4}, DataType::f32());
    T.copy(X, F);
    T.fill(R, 100.0);
    T.reduce_sum(F, R, 1, false);
    T.copy(R, Y);
    TensorMap t;
    t.emplace("X", iota(DataType::f32(), {4, 3}));
    t.emplace("Y", HostTensor(DataType::f32(), {4}));
    run_tile_level(T.finish(), t);
    // Row r holds 3r, 3r+1, 3r+2: sum 9r + 3, plus 100.
    for (int r = 0; r < 4; ++r) CHECK(t.at("Y").at(r) == 100 + 9 * r + 3);
  }

  TEST_CASE("reduce_absmax and reduce_min along dim 0") {
    KernelBuilder T("red");
    auto X = T.tensor("X", {3, 2}, DataType::f32());
    auto Y = T.tensor("Y", {2}, DataType::f32());
    auto Z = T.tensor("Z", {2}, DataType::f32());
    T.kernel1(1, 32);
    auto F = T.alloc_fragment("F", {3, 2}, DataType::f32());
    auto R = T.alloc_fragment("R", {2}, DataType::f32());
    auto Q = T.alloc_fragment("Q", {2}, DataType::f32());
    T.copy(X, F);
    T.reduce_absmax(F, R, 0);
    T.reduce_min(F, Q, 0);
    T.copy(R, Y);
    T.copy(Q, Z);
    TensorMap t;
    t.emplace("X", HostTensor(DataType::f32(), {3, 2}));
    double x[6] = {1, -7, -3, 2, 2, 5};  // columns: {1, -3, 2} and {-7, 2, 5}
    for (int i = 0; i < 6; ++i) t.at("X").set(i, x[i]);
    t.emplace("Y", HostTensor(DataType::f32(), {2}));
    t.emplace("Z", HostTensor(DataType::f32(), {2}));
    run_tile_level(T.finish(), t);
    CHECK(t.at("Y").at(0) == 3);
    CHECK(t.at("Y").at(1) == 7);
    CHECK(t.at("Z").at(0) == -3);
    CHECK(t.at("Z").at(1) == -7);
  }

  TEST_CASE("atomic_add from every block accumulates without lost updates") {
    // 64 blocks each add their 32-element tile of ones into one 32-element row: 64 everywhere.
    KernelBuilder T("atomics");
    auto Out = T.tensor("Out", {32}, DataType::f32());
    T.kernel1(64, 32);
    auto F = T.alloc_fragment("F", {32}, DataType::f32());
    T.fill(F, 1.0);
    T.atomic_add(Out(0), F);
    TensorMap t;
    t.emplace("Out", HostTensor(DataType::f32(), {32}));
    run_tile_level(T.finish(), t, TileRunOptions{2});
    for (int i = 0; i < 32; ++i) CHECK(t.at("Out").at(i) == 64.0);
  }

  TEST_CASE("thread-level code runs per thread with barriers between phases") {
    // Each thread writes its index to shared memory, then reads its neighbour's: out[t] = (t+1)%64.
    KernelBuilder T("rotate");
    auto Out = T.tensor("Out", {64}, DataType::i32());
    T.kernel1(1, 64);
    Var tx = T.get_thread_binding();
    auto S = T.alloc_shared("S", {64}, DataType::i32());
    S(tx) = tx;
    T.sync_threads();
    Out(tx) = S((tx + 1) % 64);
    TensorMap t;
    t.emplace("Out", HostTensor(DataType::i32(), {64}));
    run_tile_level(T.finish(), t);
    for (int i = 0; i < 64; ++i) CHECK(t.at("Out").at(i) == (i + 1) % 64);
  }

  // A value that is the same in every thread is bound once for the block; one that depends on
  // the thread, per thread. v is bound first by threads 0-3 only (k = 0: 1), then by all of them
  // (k = 1: 11), which every thread must then see: B[t] = 11. w and the loop's trip count depend
  // on the thread: C[t] = 3t + 1 + (1 + 2 + ... + t % 3). The serial k2 loop's variable, bound
  // for all threads, is read by a T.Parallel nest: D[i] = i + 0i + 1i + 2i = 4i.
  TEST_CASE("values bound for every thread and per thread both reach each thread") {
    Kernel k = parse_kernel(R"(import tilelang.language as T


@T.prim_func
def bindings(B: T.Tensor((64,), "int32"), C: T.Tensor((64,), "int32"),
             D: T.Tensor((64,), "int32")):
    with T.Kernel(1, threads=64) as bx:
        tx = T.get_thread_binding()
        for k in T.serial(2):
            if k == 1 or tx < 4:
                v = k * 10 + bx + 1
                B[tx] = v
        w = tx * 3 + 1
        acc = T.alloc_local((1,), "int32")
        acc[0] = 0
        for s in T.serial(tx % 3):
            acc[0] = acc[0] + s + 1
        C[tx] = w + acc[0]
        for i in T.Parallel(64):
            D[i] = i
        for k2 in T.serial(3):
            for i in T.Parallel(64):
                D[i] = D[i] + k2 * i
)",
                            "bindings.py", {})
                   .kernel;
    TensorMap t;
    for (const char* name : {"B", "C", "D"}) t.emplace(name, HostTensor(DataType::i32(), {64}));
    run_tile_level(k, t);
    int64_t wrong = 0;
    for (int64_t i = 0; i < 64; ++i) {
      const int64_t triangle[] = {0, 1, 3};
      wrong += t.at("B").at(i) != 11;
      wrong += t.at("C").at(i) != static_cast<double>(3 * i + 1 + triangle[i % 3]);
      wrong += t.at("D").at(i) != static_cast<double>(4 * i);
    }
    CHECK(wrong == 0);
  }

  TEST_CASE("a warp shuffle butterfly reduction sums a warp") {
    // Each lane holds its index; five xor steps leave sum(0..31) = 496 in every lane.
    KernelBuilder T("warp_sum");
    auto Out = T.tensor("Out", {32}, DataType::i32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto v = T.alloc_var("v", DataType::i32(), tx);
    for (int mask : {16, 8, 4, 2, 1}) v(0) = v(0) + call(Builtin::kShflXor, {v(0), mask});
    Out(tx) = v(0);
    TensorMap t;
    t.emplace("Out", HostTensor(DataType::i32(), {32}));
    run_tile_level(T.finish(), t);
    for (int i = 0; i < 32; ++i) CHECK(t.at("Out").at(i) == 496);
  }

  TEST_CASE("local buffers are private to each thread") {
    KernelBuilder T("private");
    auto Out = T.tensor("Out", {32}, DataType::i32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    auto L = T.alloc_local("L", {2}, DataType::i32());
    L(0) = tx * 10;
    L(1) = L(0) + 1;
    Out(tx) = L(1);
    TensorMap t;
    t.emplace("Out", HostTensor(DataType::i32(), {32}));
    run_tile_level(T.finish(), t);
    for (int i = 0; i < 32; ++i) CHECK(t.at("Out").at(i) == 10 * i + 1);
  }

  TEST_CASE("a barrier reached by only some threads is a user error") {
    KernelBuilder T("divergent");
    T.tensor("Out", {32}, DataType::i32());
    T.kernel1(1, 64);
    Var tx = T.get_thread_binding();
    T.if_then(tx < 32, [&] { T.sync_threads(); });
    TensorMap t;
    t.emplace("Out", HostTensor(DataType::i32(), {32}));
    CHECK_THROWS_WITH_AS(run_tile_level(T.finish(), t),
                         doctest::Contains("T.sync_threads() is reached by only 32 of 64 threads"),
                         UserError);
  }

  TEST_CASE("a tile operator inside a thread-dependent branch is a user error") {
    KernelBuilder T("branchy");
    auto A = T.tensor("A", {32}, DataType::f32());
    T.kernel1(1, 64);
    Var tx = T.get_thread_binding();
    auto S = T.alloc_shared("S", {32}, DataType::f32());
    T.if_then(tx == 0, [&] { T.copy(A, S); });
    TensorMap t;
    t.emplace("A", HostTensor(DataType::f32(), {32}));
    CHECK_THROWS_WITH_AS(run_tile_level(T.finish(), t),
                         doctest::Contains("T.copy at test_tile_interp.cpp"), UserError);
  }

  TEST_CASE("an out-of-bounds store names the buffer, indices, block and thread") {
    KernelBuilder T("oob");
    auto A = T.tensor("A", {100}, DataType::f32());
    Var bx = T.kernel1(1, 128);
    Var tx = T.get_thread_binding();
    A(bx * 128 + tx) = Expr(1.0);
    TensorMap t;
    t.emplace("A", HostTensor(DataType::f32(), {100}));
    CHECK_THROWS_WITH_AS(
        run_tile_level(T.finish(), t),
        "kernel 'oob', block (0,), thread 100: store to A[100] is out of bounds of "
        "its shape (100); guard the access with an `if` on the index or shrink "
        "the loop",
        UserError);
  }

  TEST_CASE("a tensor whose shape disagrees with the signature is a user error") {
    KernelBuilder T("shape");
    T.tensor("A", {64, 64}, DataType::f32());
    T.kernel1(1, 32);
    TensorMap t;
    t.emplace("A", HostTensor(DataType::f32(), {64, 32}));
    CHECK_THROWS_WITH_AS(run_tile_level(T.finish(), t),
                         doctest::Contains("tensor 'A' has extent 32 in dimension 1 but the "
                                           "signature says 64"),
                         UserError);
  }

  TEST_CASE("a forgotten T.clear shows up as a wrong result, not a silent pass") {
    // Allocations start as NaN bytes, so accumulating into an uncleared fragment poisons C.
    KernelBuilder T("noclear");
    auto A = T.tensor("A", {16, 16}, DataType::f16());
    auto C = T.tensor("C", {16, 16}, DataType::f32());
    T.kernel1(1, 32);
    auto As = T.alloc_shared("As", {16, 16}, DataType::f16());
    auto Cl = T.alloc_fragment("Cl", {16, 16}, DataType::f32());
    T.copy(A, As);
    T.gemm(As, As, Cl);
    T.copy(Cl, C);
    TensorMap t;
    t.emplace("A", HostTensor(DataType::f16(), {16, 16}));
    t.emplace("C", HostTensor(DataType::f32(), {16, 16}));
    run_tile_level(T.finish(), t);
    CHECK(std::isnan(t.at("C").at(0)));
  }

  TEST_CASE("symbolic dimensions are bound from the tensors") {
    KernelBuilder T("dyn");
    Var N = T.dynamic("N");
    auto A = T.tensor("A", {N}, DataType::i32());
    Var bx = T.kernel1(ceildiv(N, 32), 32);
    Var tx = T.get_thread_binding();
    T.if_then(bx * 32 + tx < N, [&] { A(bx * 32 + tx) = N; });
    TensorMap t;
    t.emplace("A", HostTensor(DataType::i32(), {45}));
    TileRunStats s = run_tile_level(T.finish(), t);
    CHECK(s.blocks == 2);  // ceil(45 / 32) = 2
    for (int i = 0; i < 45; ++i) CHECK(t.at("A").at(i) == 45);
  }

}  // TEST_SUITE

TEST_SUITE("tile interpreter locations") {
  TEST_CASE("an out-of-bounds load names the statement's source location when it has one") {
    KernelBuilder T("oobloc");
    auto A = T.tensor("A", {4}, DataType::f32());
    auto B = T.tensor("B", {32}, DataType::f32());
    T.kernel1(1, 32);
    Var tx = T.get_thread_binding();
    T.emit(StoreNode::make(B.buffer(), {tx}, A(tx), SourceLoc{"k.py", 7, 9}));
    TensorMap t;
    t.emplace("A", HostTensor(DataType::f32(), {4}));
    t.emplace("B", HostTensor(DataType::f32(), {32}));
    CHECK_THROWS_WITH_AS(run_tile_level(T.finish(), t),
                         doctest::Contains("thread 4 (at k.py:7:9): load of A[4] is out of bounds"),
                         UserError);
  }

}  // TEST_SUITE
