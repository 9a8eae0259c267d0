// Split-K GEMM (TileLang's example_tilelang_gemm_splitk shape): the K dimension is cut into
// split_k slices, one per block along z; each block multiplies its slice into a register tile and
// adds it to C with one tile atomic (T.atomic_add(C[...], C_local)). C starts at zero (the host
// zeroes it), so the result is the sum of the split_k partial products, in whatever order the
// blocks finish: exact up to the rounding of the additions in C's type (docs/workloads.md).
#include "core/builder.h"
#include "examples/reference_math.h"
#include "examples/registry.h"

namespace tessel {

namespace {

Kernel build_gemm_splitk(const Params& p) {
  const int64_t M = p.positive("M"), N = p.positive("N"), K = p.positive("K");
  const int64_t bM = p.positive("block_M"), bN = p.positive("block_N"), bK = p.positive("block_K");
  const int64_t split_k = p.positive("split_k");
  const DataType dtype = p.dtype("dtype"), out = p.dtype("out_dtype");
  if (K % (split_k * bK) != 0) {
    throw ParamError("gemm_splitk: K=" + std::to_string(K) +
                     " must be a multiple of split_k * block_K = " + std::to_string(split_k * bK));
  }
  const int64_t slice = K / split_k;  // the K range of one block

  KernelBuilder T("gemm_splitk");
  auto A = T.tensor("A", {M, K}, dtype);
  auto B = T.tensor("B", {K, N}, dtype);
  auto C = T.tensor("C", {M, N}, out);
  auto idx = T.kernel(
      {ceildiv(make_int(N), make_int(bN)), ceildiv(make_int(M), make_int(bM)), make_int(split_k)},
      static_cast<int>(p.positive("threads")));
  const Var bx = idx[0], by = idx[1], bz = idx[2];
  auto A_shared = T.alloc_shared("A_shared", {bM, bK}, dtype);
  auto B_shared = T.alloc_shared("B_shared", {bK, bN}, dtype);
  auto C_local = T.alloc_fragment("C_local", {bM, bN}, DataType::f32());
  T.clear(C_local);
  T.pipelined(make_int(slice / bK), static_cast<int>(p.integer("num_stages")), [&](Var k) {
    T.copy(A(by * bM, bz * slice + k * bK), A_shared);
    T.copy(B(bz * slice + k * bK, bx * bN), B_shared);
    T.gemm(A_shared, B_shared, C_local);
  });
  T.atomic_add(C(by * bM, bx * bN), C_local);
  return T.finish();
}

}  // namespace

Example gemm_splitk_example() {
  Example e;
  e.name = "gemm_splitk";
  e.description = "C = A @ B with K split over blocks, partial tiles added by T.atomic_add";
  e.params = {{"M", "256", "rows of A and C"},
              {"N", "256", "columns of B and C"},
              {"K", "512", "the reduction dimension"},
              {"block_M", "64", "rows of a block's C tile"},
              {"block_N", "64", "columns of a block's C tile"},
              {"block_K", "32", "depth of one k-step"},
              {"split_k", "4", "K slices, one block each (grid z)"},
              {"num_stages", "2", "software-pipeline depth of the k loop"},
              {"threads", "128", "threads per block"},
              {"dtype", "float16", "input type (float16 or bfloat16)"},
              {"out_dtype", "float32", "C's type: float32, or float16 (rounded per atomic add)"}};
  e.outputs = {"C"};
  e.zero_outputs = {"C"};
  e.build = build_gemm_splitk;
  e.reference = [](const Params&, TensorMap& t) {
    MatrixD A = to_matrix(t.at("A")), B = to_matrix(t.at("B"));
    from_matrix(t.at("C"), MatrixD(A * B));
  };
  return e;
}

}  // namespace tessel
