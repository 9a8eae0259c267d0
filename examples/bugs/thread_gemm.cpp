// Two GEMMs written at thread level, C = A @ B with f16 inputs and an f32 result, for the
// thread-level interpreter and its benchmark (until the lowering pass produces such code from
// the tile-level `gemm` example):
// - gemm_simt: 64 x 64 block tiles staged in shared memory, 256 threads each computing a 4 x 4
//   micro-tile with scalar multiply-adds.
// - gemm_mma: the tensor-core path of sm80: 64 x 64 x 32 tiles copied with cp.async, fragments
//   loaded with ldmatrix (x4, and x4.trans for B) and multiplied with mma.sync.m16n8k16; four
//   warps in a 2 x 2 grid each compute 32 x 32. With swizzle=true the 16-byte chunks of each
//   shared row are XOR-permuted so that ldmatrix reads are conflict-free.
#include "core/builder.h"
#include "examples/bugs/thread_examples.h"
#include "examples/reference_math.h"

namespace tessel {

namespace {

void check_multiple(const char* kernel, const char* name, int64_t value, int64_t of) {
  if (value <= 0 || value % of != 0) {
    user_error(std::string("kernel '") + kernel + "': " + name + "=" + std::to_string(value) +
               " must be a positive multiple of " + std::to_string(of) + " (the block tile)");
  }
}

std::vector<ParamSpec> gemm_params(const char* size) {
  return {{"M", size, "rows of A and C"},
          {"N", size, "columns of B and C"},
          {"K", size, "the reduction dimension"}};
}

void gemm_reference(TensorMap& t) {
  from_matrix(t.at("C"), to_matrix(t.at("A")) * to_matrix(t.at("B")));
}

Kernel build_gemm_simt(const Params& p) {
  int64_t M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
  check_multiple("gemm_simt", "M", M, 64);
  check_multiple("gemm_simt", "N", N, 64);
  check_multiple("gemm_simt", "K", K, 16);
  const DataType f16 = DataType::f16(), f32 = DataType::f32();
  KernelBuilder T("gemm_simt");
  auto A = T.tensor("A", {M, K}, f16);
  auto B = T.tensor("B", {K, N}, f16);
  auto C = T.tensor("C", {M, N}, f32);
  auto [bx, by] = T.kernel2(N / 64, M / 64, 256);
  Var t = T.get_thread_binding();
  Expr tx = t % 16, ty = t / 16;
  auto A_s = T.alloc_shared("A_s", {64, 16}, f16);
  auto B_s = T.alloc_shared("B_s", {16, 64}, f16);
  auto acc = T.alloc_local("acc", {16}, f32);
  T.serial(16, [&](Var i) { acc(i) = make_const(f32, 0); });
  T.serial(
      K / 16,
      [&](Var k) {
        T.serial(
            4,
            [&](Var r) {
              Expr id = t + r * 256;
              A_s(id / 16, id % 16) = A(by * 64 + id / 16, k * 16 + id % 16);
              B_s(id / 64, id % 64) = B(k * 16 + id / 64, bx * 64 + id % 64);
            },
            "r");
        T.sync_threads();
        T.serial(
            16,
            [&](Var kk) {
              T.serial(
                  4,
                  [&](Var i) {
                    T.serial(
                        4,
                        [&](Var j) {
                          acc(i * 4 + j) = acc(i * 4 + j) + cast(f32, A_s(ty * 4 + i, kk)) *
                                                                cast(f32, B_s(kk, tx * 4 + j));
                        },
                        "j");
                  },
                  "i");
            },
            "kk");
        T.sync_threads();
      },
      "k");
  T.serial(
      4,
      [&](Var i) {
        T.serial(
            4, [&](Var j) { C(by * 64 + ty * 4 + i, bx * 64 + tx * 4 + j) = acc(i * 4 + j); }, "j");
      },
      "i");
  return T.finish();
}

Kernel build_gemm_mma(const Params& p) {
  int64_t M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
  check_multiple("gemm_mma", "M", M, 64);
  check_multiple("gemm_mma", "N", N, 64);
  check_multiple("gemm_mma", "K", K, 32);
  bool swizzle = p.boolean("swizzle");
  const DataType f16 = DataType::f16(), f32 = DataType::f32();
  KernelBuilder T("gemm_mma");
  auto A = T.tensor("A", {M, K}, f16);
  auto B = T.tensor("B", {K, N}, f16);
  auto C = T.tensor("C", {M, N}, f32);
  auto [bx, by] = T.kernel2(N / 64, M / 64, 128);
  Var t = T.get_thread_binding();
  Expr lane = t % 32, warp = t / 32, wm = warp / 2, wn = warp % 2;
  auto A_s = T.alloc_shared("A_s", {64, 32}, f16);  // rows of 4 16-byte chunks
  auto B_s = T.alloc_shared("B_s", {32, 64}, f16);  // rows of 8 16-byte chunks
  auto A_frag = T.alloc_local("A_frag", {16}, f16);
  auto B_frag = T.alloc_local("B_frag", {16}, f16);
  auto C_frag = T.alloc_local("C_frag", {32}, f32);
  // Column of element `col` (a multiple of 8) of row `row` after the XOR swizzle of its chunk.
  auto a_col = [&](Expr row, Expr col) { return swizzle ? ((col / 8) ^ (row / 2 % 4)) * 8 : col; };
  auto b_col = [&](Expr row, Expr col) { return swizzle ? ((col / 8) ^ (row % 8)) * 8 : col; };
  T.serial(32, [&](Var i) { C_frag(i) = make_const(f32, 0); });
  T.serial(
      K / 32,
      [&](Var k) {
        T.serial(
            2,
            [&](Var j) {
              Expr id = t + j * 128;
              Expr ar = id / 4, ac = id % 4 * 8;
              T.cp_async(A_s(ar, a_col(ar, ac)), A(by * 64 + ar, k * 32 + ac), 16);
              Expr br = id / 8, bc = id % 8 * 8;
              T.cp_async(B_s(br, b_col(br, bc)), B(k * 32 + br, bx * 64 + bc), 16);
            },
            "j");
        T.cp_async_commit_group();
        T.cp_async_wait_group(0);
        T.sync_threads();
        T.serial(
            2,
            [&](Var kk) {
              T.serial(
                  2,
                  [&](Var mi) {
                    Expr row = wm * 32 + mi * 16 + lane % 16;
                    T.ldmatrix(4, false, A_frag(mi * 8),
                               A_s(row, a_col(row, kk * 16 + lane / 16 * 8)));
                  },
                  "mi");
              T.serial(
                  2,
                  [&](Var pr) {
                    Expr row = kk * 16 + lane % 16;
                    T.ldmatrix(4, true, B_frag(pr * 8),
                               B_s(row, b_col(row, wn * 32 + pr * 16 + lane / 16 * 8)));
                  },
                  "pr");
              T.serial(
                  2,
                  [&](Var mi) {
                    T.serial(
                        4,
                        [&](Var nj) {
                          Expr c = (mi * 4 + nj) * 4;
                          T.mma_m16n8k16(C_frag(c), A_frag(mi * 8), B_frag(nj * 4), C_frag(c));
                        },
                        "nj");
                  },
                  "mi");
            },
            "kk");
        T.sync_threads();
      },
      "k");
  // C fragment element e of lane (g, t): row g + 8 (e / 2), column 2 t + e % 2.
  T.serial(
      2,
      [&](Var mi) {
        T.serial(
            4,
            [&](Var nj) {
              T.serial(
                  4,
                  [&](Var e) {
                    Expr row = wm * 32 + mi * 16 + lane / 4 + e / 2 * 8;
                    Expr col = wn * 32 + nj * 8 + lane % 4 * 2 + e % 2;
                    C(by * 64 + row, bx * 64 + col) = C_frag((mi * 4 + nj) * 4 + e);
                  },
                  "e");
            },
            "nj");
      },
      "mi");
  return T.finish();
}

}  // namespace

Example gemm_simt_example() {
  Example e;
  e.name = "gemm_simt";
  e.description =
      "C = A @ B at thread level: shared-memory tiles and 4 x 4 register "
      "micro-tiles per thread (correct)";
  e.params = gemm_params("128");
  e.outputs = {"C"};
  e.build = build_gemm_simt;
  e.reference = [](const Params&, TensorMap& t) { gemm_reference(t); };
  return e;
}

Example gemm_mma_example() {
  Example e;
  e.name = "gemm_mma";
  e.description =
      "C = A @ B at thread level with cp.async, ldmatrix and mma.sync.m16n8k16 "
      "(sm80 tensor cores; correct)";
  e.params = gemm_params("256");
  e.params.push_back({"swizzle", "true", "XOR-swizzle the shared tiles (false: bank conflicts)"});
  e.outputs = {"C"};
  e.build = build_gemm_mma;
  e.reference = [](const Params&, TensorMap& t) { gemm_reference(t); };
  return e;
}

}  // namespace tessel
