// Regression tests of issue 13's miscompiles: kernels in the style of real TileLang files
// (LayerNorm, split-K GEMM, online softmax, MLA-style slices) lowered to threads, run at both
// levels and checked against values computed here, independently of Tessel.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>

#include "core/intrinsics.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/printer.h"
#include "core/stmt_functor.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;

namespace {

/// One kernel file's tensors after a run at tile level and, lowered, at thread level.
struct BothLevels {
  Kernel kernel;
  Kernel lowered;
  TensorMap inputs, tile, thread;
  sim::SimReport report;
};

/// Parses `source`, makes tensors (inputs random from seed 3, `outputs` NaN bytes), lets `setup`
/// change them (an output that starts at zero), then runs both levels on copies.
BothLevels run_levels(const std::string& source, const std::vector<std::string>& outputs,
                      const std::string& target = "sm80",
                      const std::function<void(TensorMap&)>& setup = {}) {
  BothLevels r;
  r.kernel = parse_kernel(source, "test.py").kernel;
  r.inputs = make_tensors(r.kernel, {}, outputs, 3);
  if (setup) setup(r.inputs);
  r.tile = r.thread = r.inputs;
  run_tile_level(r.kernel, r.tile);
  r.lowered = lower_kernel(r.kernel, find_target(target)).kernel;
  ThreadRunOptions options;
  options.target = target;
  r.report = run_thread_level(r.lowered, r.thread, options).report;
  return r;
}

/// Element `flat` of tensor `name` at both levels equals `want` within `tol` (absolute).
void check_both(const BothLevels& r, const std::string& name, int64_t flat, double want,
                double tol) {
  double tile = r.tile.at(name).at(flat), thread = r.thread.at(name).at(flat);
  CHECK_MESSAGE(std::fabs(tile - want) <= tol,
                name << "[" << flat << "] at tile level: " << tile << ", expected " << want);
  CHECK_MESSAGE(std::fabs(thread - want) <= tol,
                name << "[" << flat << "] at thread level: " << thread << ", expected " << want);
}

int count_kind(const Stmt& s, StmtKind kind) {
  int n = 0;
  for_each_stmt(s, [&](const Stmt& x) { n += x.kind() == kind; });
  return n;
}

std::string user_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// LayerNorm's first half (TileLang's layer-norm examples keep the row mean in a fragment and
// also write it out): the row sums come from a reduction, so `mean_row` is replicated over the
// 32 threads that share a row, and the loop writes it together with the global `Mean`.
const char* kLayerNormMean = R"(
import tilelang.language as T


def layernorm_mean(M=64, N=128, blk_m=16, threads=128):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32"),
             Mean: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            x = T.alloc_fragment((blk_m, N), "float32")
            row_sum = T.alloc_fragment((blk_m,), "float32")
            mean_row = T.alloc_fragment((blk_m,), "float32")
            T.copy(X[bx * blk_m, 0], x)
            T.reduce_sum(x, row_sum, dim=1)
            for i in T.Parallel(blk_m):
                STORES
            for i, j in T.Parallel(blk_m, N):
                x[i, j] = x[i, j] - mean_row[i]
            T.copy(x, Y[bx * blk_m, 0])

    return main
)";

std::string layernorm_with(const std::string& stores) {
  std::string s = kLayerNormMean;
  return s.replace(s.find("STORES"), 6, stores);
}

/// Mean and Y = X - mean, computed row by row in double.
void check_layernorm(const BothLevels& r) {
  const HostTensor& x = r.inputs.at("X");
  for (int64_t row = 0; row < 64; ++row) {
    double sum = 0;
    for (int64_t j = 0; j < 128; ++j) sum += x.at(row * 128 + j);
    double mean = sum / 128;
    check_both(r, "Mean", row, mean, 1e-5);
    for (int64_t j = 0; j < 128; j += 37)
      check_both(r, "Y", row * 128 + j, x.at(row * 128 + j) - mean, 1e-5);
  }
  CHECK(r.report.findings.empty());
}

// Split-K GEMM as TileLang's example writes it: each of `split_k` blocks along z multiplies one
// slice of K and adds its partial tile into C with element atomics.
const char* kSplitK = R"(
import tilelang.language as T


def matmul_splitk(M=64, N=64, K=256, block_M=32, block_N=32, block_K=32, split_k=4,
                  threads=128):
    splitK = K // split_k

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k,
                      threads=threads) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(splitK, block_K), num_stages=2):
                T.copy(A[by * block_M, bz * splitK + ko * block_K], A_shared)
                T.copy(B[bz * splitK + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(block_M, block_N):
                STORE

    return main
)";

std::string splitk_with(const std::string& store) {
  std::string s = kSplitK;
  return s.replace(s.find("STORE"), 5, store);
}

void zero_c(TensorMap& t) {
  HostTensor& c = t.at("C");
  for (int64_t i = 0; i < c.size(); ++i) c.set(i, 0);
}

// The running maximum and sum of an online softmax (FlashAttention's inner loop without the
// second gemm): `m` is filled before the loop and updated by reduce_max(clear=False), then read
// by Parallel loops over the rows.
const char* kOnlineLogSumExp = R"(
import tilelang.language as T


def online_lse(M=64, N=256, block_M=16, block_N=64, threads=128):
    scale = 1.44269504

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Lse: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            m_prev = T.alloc_fragment((block_M,), "float32")
            l = T.alloc_fragment((block_M,), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            T.fill(m, -T.infinity("float32"))
            T.fill(l, 0)
            for k in T.serial(N // block_N):
                T.copy(X[bx * block_M, k * block_N], x)
                T.copy(m, m_prev)
                T.reduce_max(x, m, dim=1, clear=False)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.exp2((x[i, j] - m[i]) * scale)
                T.reduce_sum(x, s, dim=1)
                for i in T.Parallel(block_M):
                    l[i] = l[i] * T.exp2((m_prev[i] - m[i]) * scale) + s[i]
            for i in T.Parallel(block_M):
                Lse[bx * block_M + i] = m[i] + T.log2(l[i]) / scale

    return main
)";

// MLA decode keeps a block of 64 head rows in its accumulator but only `valid_h` heads exist:
// it copies the valid rows of the fragment out through shared memory.
const char* kHeadSlice = R"(
import tilelang.language as T


def mla_heads(heads=16, dim=64, seqlen=64, block_H=64, threads=128):
    valid_h = min(heads, block_H)

    @T.prim_func
    def main(Q: T.Tensor((heads, dim), "float16"), KV: T.Tensor((seqlen, dim), "float16"),
             O: T.Tensor((heads, seqlen), "float16")):
        with T.Kernel(1, threads=threads) as bx:
            Q_shared = T.alloc_shared((block_H, dim), "float16")
            KV_shared = T.alloc_shared((seqlen, dim), "float16")
            acc_o = T.alloc_fragment((block_H, seqlen), "float32")
            O_shared = T.alloc_shared((valid_h, seqlen), "float16")
            T.clear(Q_shared)
            T.copy(Q[0, 0], Q_shared[0:valid_h, :])
            T.copy(KV[0, 0], KV_shared)
            T.gemm(Q_shared, KV_shared, acc_o, transpose_B=True, clear_accum=True)
            T.copy(acc_o[:valid_h, :], O_shared)
            T.copy(O_shared, O[0, 0])

    return main
)";

// Row sums written as a column: a (block_M, 1) fragment copied to an origin in a (M, 1) tensor.
const char* kColumnSums = R"(
import tilelang.language as T


def column_sums(M=64, N=32, block_M=32, threads=128):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), S: T.Tensor((M, 1), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            row = T.alloc_fragment((block_M,), "float32")
            s = T.alloc_fragment((block_M, 1), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_sum(x, row, dim=1)
            for i, k in T.Parallel(block_M, 1):
                s[i, k] = row[i]
            T.copy(s, S[bx * block_M, 0])

    return main
)";

}  // namespace

TEST_SUITE("issue 13 miscompiles") {
  TEST_CASE(
      "a Parallel loop writing a replicated fragment and global memory writes every replica") {
    BothLevels r = run_levels(layernorm_with("mean_row[i] = row_sum[i] / N\n"
                                             "                Mean[bx * blk_m + i] = mean_row[i]"),
                              {"Y", "Mean"});
    check_layernorm(r);
    // Only the global store is once per element: the fragment store is outside any `if`.
    std::string text = print_kernel(r.lowered);
    CHECK(text.find("mean_row[l] = row_sum[l] / 128.0\n            if tx % 32 == 0:\n"
                    "                Mean[") != std::string::npos);
  }

  TEST_CASE("a replicated fragment written through a let binding is written in every replica") {
    check_layernorm(run_levels(layernorm_with("mu = row_sum[i] / N\n"
                                              "                mean_row[i] = mu\n"
                                              "                Mean[bx * blk_m + i] = mu"),
                               {"Y", "Mean"}));
    check_layernorm(run_levels(layernorm_with("mean_row[i] = row_sum[i] / N\n"
                                              "                mu = mean_row[i]\n"
                                              "                Mean[bx * blk_m + i] = mu"),
                               {"Y", "Mean"}));
  }

  TEST_CASE("a global store under a let binding needs no barrier in every iteration") {
    BothLevels r = run_levels(layernorm_with("mu = row_sum[i] / N\n"
                                             "                mean_row[i] = mu\n"
                                             "                Mean[bx * blk_m + i] = mu"),
                              {"Y", "Mean"});
    // The only shared memory is the reduction's; nothing in this kernel crosses threads through
    // shared memory inside the mean loop.
    CHECK(print_kernel(r.lowered).find("for l in T.serial(4):\n            T.sync_threads()") ==
          std::string::npos);
  }

  TEST_CASE("an element atomic_add in a Parallel loop becomes per-thread atomics (split-K)") {
    const std::string atomic = "T.atomic_add(C[by * block_M + i, bx * block_N + j], C_local[i, j])";
    for (const std::string target : {"sm80", "gfx942"}) {
      CAPTURE(target);
      BothLevels r = run_levels(splitk_with(atomic), {"C"}, target, zero_c);
      CHECK(count_kind(r.lowered->body, StmtKind::kTileOpCall) == 0);
      // C = A B summed over all of K in double: the four partial products add up to it.
      const HostTensor &a = r.inputs.at("A"), &b = r.inputs.at("B");
      for (int64_t i = 0; i < 64; i += 5) {
        for (int64_t j = 0; j < 64; j += 3) {
          double want = 0;
          for (int64_t k = 0; k < 256; ++k) want += a.at(i * 256 + k) * b.at(k * 64 + j);
          check_both(r, "C", i * 64 + j, want, 1e-3 + 1e-3 * std::fabs(want));
        }
      }
      CHECK(r.report.findings.empty());
      // Atomics commute: no more barriers than the same loop with plain stores.
      Kernel plain =
          parse_kernel(splitk_with("C[by * block_M + i, bx * block_N + j] = C_local[i, j]"),
                       "test.py")
              .kernel;
      CHECK(count_kind(r.lowered->body, StmtKind::kBarrier) ==
            count_kind(lower_kernel(plain, find_target(target)).kernel->body, StmtKind::kBarrier));
    }
  }

  TEST_CASE("a tile operator inside T.Parallel is refused where it is written") {
    std::string err = user_error_of([] {
      parse_kernel(splitk_with("T.copy(C_local, C[by * block_M, bx * block_N])"), "test.py");
    });
    CHECK(err.find("T.copy at test.py:") != std::string::npos);
    CHECK(err.find("inside the T.Parallel loop over 'j'") != std::string::npos);
    CHECK(err.find("move it out of the loop") != std::string::npos);
  }

  TEST_CASE("a reduce_max output read by a later row loop is replicated where it is read") {
    BothLevels r = run_levels(kOnlineLogSumExp, {"Lse"});
    // log(sum_j exp(x_j)) per row, in double (the kernel computes it in base 2 with a running max).
    const HostTensor& x = r.inputs.at("X");
    for (int64_t row = 0; row < 64; ++row) {
      double sum = 0;
      for (int64_t j = 0; j < 256; ++j) sum += std::exp(x.at(row * 256 + j));
      check_both(r, "Lse", row, std::log(sum), 1e-4);
    }
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("a copy of a fragment slice runs where the fragment holds each element") {
    BothLevels r = run_levels(kHeadSlice, {"O"});
    // O[h, s] = sum_d Q[h, d] KV[s, d] for the 16 valid heads, rounded to fp16.
    const HostTensor &q = r.inputs.at("Q"), &kv = r.inputs.at("KV");
    for (int64_t h = 0; h < 16; ++h) {
      for (int64_t t = 0; t < 64; t += 7) {
        double want = 0;
        for (int64_t d = 0; d < 64; ++d) want += q.at(h * 64 + d) * kv.at(t * 64 + d);
        check_both(r, "O", h * 64 + t, want, 1e-2 + 1e-2 * std::fabs(want));
      }
    }
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("a copy to an origin keeps a tile's unit dimension (a column lands as a column)") {
    BothLevels r = run_levels(kColumnSums, {"S"});
    const HostTensor& x = r.inputs.at("X");
    for (int64_t row = 0; row < 64; ++row) {
      double sum = 0;
      for (int64_t j = 0; j < 32; ++j) sum += x.at(row * 32 + j);
      check_both(r, "S", row, sum, 1e-4);
    }
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("the built-in softmax with one column is right at both levels") {
    const Example* e = find_example("softmax");
    REQUIRE(e != nullptr);
    Params p = make_params(*e, {{"N", "1"}});
    // A row of one element: softmax is exactly 1 everywhere.
    ExampleRun tile = run_example_tile(*e, p, 2);
    CHECK(tile.passed);
    Kernel k = e->build(p);
    TensorMap t = make_tensors(k, {}, e->outputs, 2);
    run_thread_level(lower_kernel(k, find_target("sm80")).kernel, t);
    for (int64_t i = 0; i < t.at("Y").size(); ++i) CHECK(t.at("Y").at(i) == 1.0);
  }

  TEST_CASE(
      "comparisons treat equal infinities as equal and NaN against a number as a difference") {
    HostTensor got(DataType::f32(), {5}), want(DataType::f32(), {5});
    const double inf = INFINITY, nan = NAN;
    // got:  +inf  -inf  NaN  NaN  +inf
    // want: +inf  -inf  NaN  1.0  -inf   -> elements 3 and 4 differ
    const double g[] = {inf, -inf, nan, nan, inf}, w[] = {inf, -inf, nan, 1.0, -inf};
    for (int i = 0; i < 5; ++i) got.set(i, g[i]), want.set(i, w[i]);
    Comparison c = compare(got, want, Tolerance::for_dtype(DataType::f32()));
    CHECK_FALSE(c.passed);
    CHECK(c.mismatches == 2);
    CHECK(c.first_mismatch == 3);
    HostTensor same = got;
    CHECK(compare(got, same, Tolerance::for_dtype(DataType::f32())).passed);
    HostTensor finite(DataType::f32(), {1}), infinite(DataType::f32(), {1});
    finite.set(0, 3.0e38), infinite.set(0, inf);
    CHECK_FALSE(compare(infinite, finite, Tolerance::for_dtype(DataType::f32())).passed);
    CHECK_FALSE(compare(finite, infinite, Tolerance::for_dtype(DataType::f32())).passed);
  }

}  // TEST_SUITE

namespace {

// A shared tile filled by a pipelined loop and read after it: the read must see the last
// iteration's tile (4 iterations over 2 versions: the last one wrote version 1, and the read
// after the loop read version 0, the third iteration's tile).
const char* kReadAfterPipeline = R"(
import tilelang.language as T


def read_after_pipeline(M=64, K=128, block_M=64, block_K=32, threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), C: T.Tensor((M, block_K), "float32"),
             S: T.Tensor((M, block_K), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            A_shared = T.alloc_shared((block_M, block_K), "float32")
            acc = T.alloc_fragment((block_M, block_K), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // block_K, num_stages=2):
                T.copy(A[0, k * block_K], A_shared)
                for i, j in T.Parallel(block_M, block_K):
                    acc[i, j] += A_shared[i, j]
            T.copy(A_shared, C[0, 0])
            T.copy(acc, S[0, 0])

    return main
)";

// Row sums of (16, 1) f16 tiles into a row vector filled first. The fill used to choose the
// vector's layout (4 elements per thread) before the copy chose the tile's (8 per thread, its
// 16-byte vectors): each thread then added its 8 elements into registers of rows it does not
// hold, and `verify` proved every check.
const char* kReduceIntoFilled = R"(
import tilelang.language as T


def reduce_into_filled(M=64, N=1, block_M=16, threads=128):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float16"), S: T.Tensor((M,), "float32")):
        with T.Kernel(M // block_M, threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float16")
            r = T.alloc_fragment((block_M,), "float32")
            T.fill(r, 1.0)
            T.copy(X[bx * block_M, 0], x)
            T.reduce_sum(x, r, dim=1, clear=False)
            T.copy(r, S[bx * block_M])

    return main
)";

const char* kReduceLaidOutByLoop = R"(
import tilelang.language as T


@T.prim_func
def fuzz_100443(X: T.Tensor((16, 16), "float32"), O0: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, threads=32) as (bx,):
        t0_frag = T.alloc_fragment((16, 16), "float16")
        t1_frag = T.alloc_fragment((16, 16), "float32")
        v3_frag = T.alloc_fragment((16,), "float32")
        t4_shared = T.alloc_shared((16, 16), "float32")
        T.fill(t0_frag, T.float16(0.5))
        T.copy(X[bx * 16, 0], t1_frag)
        T.reduce_max(t1_frag, v3_frag, dim=1)
        for i, j in T.Parallel(16, 16):
            t4_shared[i, j] = T.cast(t0_frag[i, j], "float32") * v3_frag[i]
        T.copy(t4_shared, O0[bx * 16, 0])
)";

const char* kReduceLaidOutByGemmLoop = R"(
import tilelang.language as T


@T.prim_func
def fuzz_17(X: T.Tensor((16, 16), "float32"), GA3: T.Tensor((16, 16), "float16"),
            GB3: T.Tensor((16, 16), "float16"), O0: T.Tensor((1, 16), "float32")):
    with T.Kernel(1, threads=32) as (bx,):
        t0_frag = T.alloc_fragment((16, 16), "float32")
        v3_frag = T.alloc_fragment((16,), "float32")
        t4_frag = T.alloc_fragment((16, 16), "float32")
        t5_shared = T.alloc_shared((16, 16), "float32")
        A3_shared = T.alloc_shared((16, 16), "float16")
        B3_shared = T.alloc_shared((16, 16), "float16")
        T.copy(X[bx * 16, 0], t0_frag)
        T.reduce_max(t0_frag, v3_frag, dim=0)
        for i in T.Parallel(16):
            O0[bx, i] = v3_frag[i]
        T.clear(t4_frag)
        T.copy(GA3[0, 0], A3_shared)
        T.copy(GB3[0, 0], B3_shared)
        T.gemm(A3_shared, B3_shared, t4_frag)
        for i, j in T.Parallel(16, 16):
            t5_shared[i, j] = t4_frag[i, j] - v3_frag[j]
)";

const char* kTwoReductionsOneVector = R"(
import tilelang.language as T


@T.prim_func
def fuzz_786(X: T.Tensor((16, 32), "float32"), GA2: T.Tensor((16, 16), "float16"),
             GB2: T.Tensor((16, 32), "float16"), O0: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=32) as (bx,):
        t0_frag = T.alloc_fragment((16, 32), "float32")
        v1_frag = T.alloc_fragment((16,), "float32")
        t2_frag = T.alloc_fragment((16, 32), "float32")
        A2_shared = T.alloc_shared((16, 16), "float16")
        B2_shared = T.alloc_shared((16, 32), "float16")
        T.copy(X[bx * 16, 0], t0_frag)
        T.reduce_min(t0_frag, v1_frag, dim=1)
        T.copy(GA2[bx * 16, 0], A2_shared)
        T.copy(GB2[0, 0], B2_shared)
        T.gemm(A2_shared, B2_shared, t0_frag)
        T.copy(X[bx * 16, 0], t2_frag)
        T.reduce_abssum(t2_frag, v1_frag, dim=1, clear=False)
        T.copy(v1_frag, O0[bx * 16])
)";

const char* kColumnMax96 = R"(
import tilelang.language as T


def column_max(M=64, N=16, block_M=16, threads=96):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32")):
        with T.Kernel(M // block_M, threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            r = T.alloc_fragment((N,), "float32")
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * 2.0
            T.reduce_max(x, r, dim=0)
            T.copy(r, S[bx * N])

    return main
)";

// A row vector broadcast over a tile whose rows span 6 threads (24 columns, 4 per thread), over
// a block of 96: the vector's readers form no group of thread bits, so it is held by every
// thread; the loop that writes it runs in every thread, its global stores once.
const char* kBroadcast96 = R"(
import tilelang.language as T


def broadcast(M=64, N=24, block_M=16, threads=96):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32"),
             S: T.Tensor((M,), "float32")):
        with T.Kernel(M // block_M, threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            v = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            for i in T.Parallel(block_M):
                v[i] = X[bx * block_M + i, 0] + 1.0
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * v[i]
            for i in T.Parallel(block_M):
                S[bx * block_M + i] = v[i] * 2.0
            T.copy(x, Y[bx * block_M, 0])

    return main
)";

const char* kFillLocal = R"(
import tilelang.language as T


@T.prim_func
def fill_local(X: T.Tensor((16, 16), "float32"), O: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, threads=32) as (bx,):
        tmp = T.alloc_local((2,), "float32")
        T.fill(tmp, 0.25)
        t = T.alloc_fragment((16, 16), "float32")
        for i, j in T.Parallel(16, 16):
            t[i, j] = X[i, j] + tmp[1]
        T.copy(t, O[0, 0])
)";

const char* kGemmAnnotatedA = R"(
import tilelang.language as T


@T.prim_func
def gemm_annotated(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"),
                   C: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=128) as bx:
        A_shared = T.alloc_shared((64, 32), "float16")
        B_shared = T.alloc_shared((32, 64), "float16")
        C_local = T.alloc_fragment((64, 64), "float32")
        T.annotate_layout({A_shared: LAYOUT})
        T.clear(C_local)
        T.copy(A, A_shared)
        T.copy(B, B_shared)
        T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C)
)";

}  // namespace

TEST_SUITE("issue 13 lowering bugs") {
  TEST_CASE("a shared tile read after its pipelined loop holds the last iteration's data") {
    for (int64_t K : {128, 96, 32}) {  // 4, 3 and 1 iterations over 2 versions
      std::string src = kReadAfterPipeline;
      src.replace(src.find("K=128"), 5, "K=" + std::to_string(K));
      BothLevels r = run_levels(src, {"C", "S"});
      const HostTensor& a = r.inputs.at("A");
      // C = A[:, K - 32 : K]; S = the sum of A's K / 32 column tiles.
      for (int64_t i = 0; i < 64; ++i) {
        for (int64_t j = 0; j < 32; ++j) {
          check_both(r, "C", i * 32 + j, a.at(i * K + K - 32 + j), 0.0);
          double sum = 0;
          for (int64_t t = 0; t < K / 32; ++t) sum += a.at(i * K + t * 32 + j);
          check_both(r, "S", i * 32 + j, sum, 1e-4);
        }
      }
      CHECK(r.report.findings.empty());
    }
  }

  TEST_CASE("a reduction into a vector a fill laid out first is right at both levels") {
    BothLevels r = run_levels(kReduceIntoFilled, {"S"});
    const HostTensor& x = r.inputs.at("X");
    // S[i] = 1 + X[i, 0] (a row of one element added to the filled 1.0).
    for (int64_t i = 0; i < 64; ++i) check_both(r, "S", i, 1.0 + x.at(i), 1e-6);
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("a reduction into a vector a later loop over another tile laid out is right") {
    // fuzz seed 100443: v3's layout comes from the loop over the f16 tile t0 (8 per thread),
    // the reduce's source t1 is f32 (4 per thread). O0[i, j] = 0.5 * max_j' X[i, j'].
    BothLevels r = run_levels(kReduceLaidOutByLoop, {"O0"});
    const HostTensor& x = r.inputs.at("X");
    for (int64_t i = 0; i < 16; ++i) {
      double m = -INFINITY;
      for (int64_t j = 0; j < 16; ++j) m = std::max(m, x.at(i * 16 + j));
      for (int64_t j = 0; j < 16; ++j) check_both(r, "O0", i * 16 + j, 0.5 * m, 1e-6);
    }
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("a column reduction into a vector a gemm loop laid out is right") {
    // fuzz seed 17: O0[0, c] = max over the 16 rows of X[:, c].
    BothLevels r = run_levels(kReduceLaidOutByGemmLoop, {"O0"});
    const HostTensor& x = r.inputs.at("X");
    for (int64_t c = 0; c < 16; ++c) {
      double m = -INFINITY;
      for (int64_t i = 0; i < 16; ++i) m = std::max(m, x.at(i * 16 + c));
      check_both(r, "O0", c, m, 1e-6);
    }
  }

  TEST_CASE("two reductions from differently laid out tiles into one vector are right") {
    // fuzz seed 786: O0[i] = min_j X[i, j] + sum_j |X[i, j]|.
    BothLevels r = run_levels(kTwoReductionsOneVector, {"O0"});
    const HostTensor& x = r.inputs.at("X");
    for (int64_t i = 0; i < 16; ++i) {
      double lo = INFINITY, abs_sum = 0;
      for (int64_t j = 0; j < 32; ++j) {
        lo = std::min(lo, x.at(i * 32 + j));
        abs_sum += std::fabs(x.at(i * 32 + j));
      }
      check_both(r, "O0", i, lo + abs_sum, 1e-4);
    }
  }

  TEST_CASE("a column reduction over 96 threads reads no partner past the block") {
    // x (16, 16) uses threads 0-63; the column maxima are replicated over warps 0-1, whose
    // combining step read partner tx ^ 32 = 96-127 from threads 64-95 (out of bounds).
    BothLevels r = run_levels(kColumnMax96, {"S"});
    const HostTensor& x = r.inputs.at("X");
    for (int64_t b = 0; b < 4; ++b) {
      for (int64_t j = 0; j < 16; ++j) {
        double m = -INFINITY;
        for (int64_t i = 0; i < 16; ++i) m = std::max(m, 2.0 * x.at((b * 16 + i) * 16 + j));
        check_both(r, "S", b * 16 + j, m, 1e-6);
      }
    }
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("the reduction's cross-warp workspace is stored and loaded without bank conflicts") {
    // r (16 columns) is held by 4 registers of threads in warps 0-1; the workspace was laid out
    // thread-major (4 words per thread: lanes 8 apart in one bank, 4-way conflicts).
    BothLevels r = run_levels(kColumnMax96, {"S"});
    int64_t ideal = 0, conflicts = 0;
    for (size_t s = 0; s < r.report.sites.size(); ++s) {
      if (r.report.sites[s].buffer != "r_red") continue;
      ideal += r.report.per_site[s].ideal_wavefronts;
      conflicts += r.report.per_site[s].bank_conflicts;
    }
    CHECK(ideal > 0);
    CHECK(conflicts == 0);
  }

  TEST_CASE("a vector read by threads that form no bit group is held by every thread") {
    // Was refused ("6 threads that do not form one group of thread-index bits").
    // Y[r, c] = X[r, c] * (X[r, 0] + 1), S[r] = 2 * (X[r, 0] + 1).
    BothLevels r = run_levels(kBroadcast96, {"Y", "S"});
    const HostTensor& x = r.inputs.at("X");
    for (int64_t row = 0; row < 64; ++row) {
      double v = x.at(row * 24) + 1.0;
      check_both(r, "S", row, 2.0 * v, 1e-5);
      for (int64_t c = 0; c < 24; c += 5)
        check_both(r, "Y", row * 24 + c, x.at(row * 24 + c) * v, 1e-5);
    }
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("a kernel file's reduce dim=-3 on a 2-d fragment is refused at both levels") {
    // The parser added the rank to a negative dim and ReduceOp::make added it again: -3 became
    // 1, a valid dim, at the tile level.
    std::string src = kColumnMax96;
    src.replace(src.find("dim=0"), 5, "dim=-3");
    std::string msg = user_error_of([&] { parse_kernel(src, "test.py"); });
    CHECK(msg.find("dim=-3 but 'x' has 2 dimension(s)") != std::string::npos);
    src.replace(src.find("dim=-3"), 6, "dim=-2");  // -2 is dim 0: the column maxima
    CHECK(user_error_of([&] { parse_kernel(src, "test.py"); }).empty());
  }

  TEST_CASE("T.fill of a per-thread local buffer fills it in every thread") {
    // O = X + 0.25 (tmp[1] is 0.25 in every thread; only thread 0 filled it before).
    BothLevels r = run_levels(kFillLocal, {"O"});
    const HostTensor& x = r.inputs.at("X");
    for (int64_t e = 0; e < 256; ++e) check_both(r, "O", e, x.at(e) + 0.25, 1e-6);
    CHECK(r.report.findings.empty());
  }

  TEST_CASE("a gemm operand laid out so that ldmatrix would load other elements is refused") {
    auto error_with = [](const std::string& layout) {
      std::string src = kGemmAnnotatedA;
      src.replace(src.find("LAYOUT"), 6, layout);
      std::string msg = user_error_of(
          [&] { lower_kernel(parse_kernel(src, "test.py").kernel, find_target("sm80")); });
      return msg;
    };
    // Column-major: A_shared[0, 1] is 64 elements after A_shared[0, 0].
    std::string col = error_with("Layout([64, 32], lambda i, j: j * 64 + i)");
    CHECK(col.find("ldmatrix reads A_shared[0, 0:8] as 16 consecutive bytes") != std::string::npos);
    // Runs start aligned (element 0 stays in place) but are permuted inside: j % 8 -> 3 j % 8.
    // Alignment holds, so only this check stops ldmatrix from loading permuted rows.
    std::string perm =
        error_with("Layout([64, 32], lambda i, j: i * 32 + j // 8 * 8 + j % 8 * 3 % 8)");
    CHECK(perm.find("does not store it contiguously (element 1 is elsewhere)") !=
          std::string::npos);
    // A padded row stride that is a multiple of 8 keeps every run contiguous and aligned.
    CHECK(error_with("Layout([64, 32], lambda i, j: i * 40 + j)").empty());
  }

  TEST_CASE("cp.async into rows padded by less than a chunk moves chunks that stay aligned") {
    // An int8 64 x 32 tile with rows of 36 bytes: a lane's 16-byte run A[r, 16h : 16h + 16]
    // starts at byte 36 r + 16 h, a multiple of 4 only (r = 1: byte 36). The copy once became
    // cp_async_16 at those addresses (a GPU faults); it must move 4-byte pieces.
    const std::string src = R"(
@T.prim_func
def padded_rows(A: T.Tensor((64, 128), "int8"), O: T.Tensor((64, 128), "int8")):
    with T.Kernel(1, threads=128) as bx:
        A_shared = T.alloc_shared((64, 32), "int8")
        O_local = T.alloc_fragment((64, 32), "int8")
        T.annotate_layout({A_shared: T.Layout([64, 32], lambda i, j: i * 36 + j)})
        for k in T.Pipelined(4, num_stages=2):
            T.copy(A[0, k * 32], A_shared)
            T.copy(A_shared, O_local)
            T.copy(O_local, O[0, k * 32])
)";
    BothLevels r = run_levels(src, {"O"});
    for (int64_t e = 0; e < 64 * 128; e += 37) check_both(r, "O", e, r.inputs.at("A").at(e), 0);
    // No misaligned access (the shared -> register copy's 16-byte runs are issued as scalars:
    // a benign finding).
    for (const auto& f : r.report.findings) CHECK(f.benign);
    int wide = 0, narrow = 0;
    for_each_stmt(r.lowered->body, [&](const Stmt& x) {
      if (const auto* c = x.as<IntrinsicCallNode>()) {
        wide += c->intrinsic == IntrinsicId::kCpAsync16 || c->intrinsic == IntrinsicId::kCpAsync8;
        narrow += c->intrinsic == IntrinsicId::kCpAsync4;
      }
    });
    CHECK(wide == 0);
    // The lane's 16-byte run as four 4-byte pieces, in each of the two copy sites: 4 k-tiles > 1
    // (num_stages - 1), so the pipeline is peeled: the prologue iteration and the main loop.
    CHECK(narrow == 2 * 4);
  }

}  // TEST_SUITE
