// GEMM as in the paper's Fig. 16 (fp16/bf16 in, fp32 accumulate), with transpose_B and
// register-A (`rs`) variants.
#include "core/builder.h"
#include "examples/reference_math.h"
#include "examples/registry.h"
#include "examples/sampled_product.h"

namespace tessel {

namespace {

enum class Variant { kPlain, kTransposeB, kRegisterA };

std::vector<ParamSpec> gemm_params() {
  return {{"M", "512", "rows of A and C"},
          {"N", "512", "columns of B and C"},
          {"K", "512", "the reduction dimension"},
          {"block_M", "128", "rows of a block's C tile"},
          {"block_N", "128", "columns of a block's C tile"},
          {"block_K", "32", "depth of one k-step"},
          {"num_stages", "3", "software-pipeline depth of the k loop"},
          {"threads", "128", "threads per block"},
          {"dtype", "float16", "input type (float16 or bfloat16); C is float32"}};
}

Kernel build_gemm(const Params& p, Variant variant) {
  int64_t M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
  int64_t bM = p.positive("block_M"), bN = p.positive("block_N"), bK = p.positive("block_K");
  int stages = static_cast<int>(p.integer("num_stages"));
  DataType dtype = p.dtype("dtype");
  const char* name = variant == Variant::kPlain        ? "gemm"
                     : variant == Variant::kTransposeB ? "gemm_transpose_b"
                                                       : "gemm_rs";
  bool tb = variant == Variant::kTransposeB;

  KernelBuilder T(name);
  auto A = T.tensor("A", {M, K}, dtype);
  auto B = tb ? T.tensor("B", {N, K}, dtype) : T.tensor("B", {K, N}, dtype);
  auto C = T.tensor("C", {M, N}, DataType::f32());
  auto [bx, by] = T.kernel2(ceildiv(N, bN), ceildiv(M, bM), static_cast<int>(p.integer("threads")));
  auto A_shared = T.alloc_shared("A_shared", {bM, bK}, dtype);
  auto B_shared = tb ? T.alloc_shared("B_shared", {bN, bK}, dtype)
                     : T.alloc_shared("B_shared", {bK, bN}, dtype);
  BufferRef A_local;
  if (variant == Variant::kRegisterA) A_local = T.alloc_fragment("A_local", {bM, bK}, dtype);
  auto C_local = T.alloc_fragment("C_local", {bM, bN}, DataType::f32());
  T.clear(C_local);
  T.pipelined(ceildiv(K, bK), stages, [&](Var k) {
    T.copy(A(by * bM, k * bK), A_shared);
    if (tb) {
      T.copy(B(bx * bN, k * bK), B_shared);
    } else {
      T.copy(B(k * bK, bx * bN), B_shared);
    }
    if (variant == Variant::kRegisterA) {
      T.copy(A_shared, A_local);
      T.gemm(A_local, B_shared, C_local);
    } else {
      T.gemm(A_shared, B_shared, C_local, GemmOptions{.transpose_B = tb});
    }
  });
  T.copy(C_local, C(by * bM, bx * bN));
  return T.finish();
}

void gemm_reference(TensorMap& t, bool transpose_b) {
  MatrixD A = to_matrix(t.at("A")), B = to_matrix(t.at("B"));
  from_matrix(t.at("C"), parallel_product(A, B, transpose_b));
}

/// C = A·B (B stored (N, K) when transpose_b) on the simulated blocks' tiles of C in full and on
/// `per_tile` seeded rows and columns of every block_M × block_N tile. Block (bx, by) writes
/// C[by * bM, bx * bN] on a (ceildiv(N, bN), ceildiv(M, bM)) grid.
std::vector<SampledOutput> gemm_sampled_reference(const Params& p, const TensorMap& t,
                                                  const ReferenceSampleRequest& req,
                                                  bool transpose_b) {
  const HostTensor &A = t.at("A"), &B = t.at("B");
  const int64_t N = t.at("C").shape()[1];
  MatrixPart b_cols = tensor_rows_as_columns(B);  // column j of B is row j of the stored (N, K)
  if (!transpose_b) {
    b_cols = [&B, N](const std::vector<int64_t>& cols, MatrixD& out) {
      const int64_t K = B.shape()[0], n = static_cast<int64_t>(cols.size());
      out.resize(K, n);
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t j = 0; j < n; ++j) out(k, j) = B.at(k * N + cols[j]);
      }
    };
  }
  TiledProduct c{"C",
                 A.shape()[0],
                 N,
                 A.shape()[1],
                 p.positive("block_M"),
                 p.positive("block_N"),
                 /*rows_on_x=*/false,
                 "(ceildiv(N, block_N), ceildiv(M, block_M))"};
  return {sampled_tiled_product(c, tensor_rows(A), b_cols, req)};
}

Example make(Variant v, std::string name, std::string description) {
  Example e;
  e.name = std::move(name);
  e.description = std::move(description);
  e.params = gemm_params();
  e.outputs = {"C"};
  e.build = [v](const Params& p) { return build_gemm(p, v); };
  e.reference = [v](const Params&, TensorMap& t) { gemm_reference(t, v == Variant::kTransposeB); };
  e.reference_macs = gemm_shape_macs;
  e.sampled_reference = [v](const Params& p, const TensorMap& t, const ReferenceSampleRequest& r) {
    return gemm_sampled_reference(p, t, r, v == Variant::kTransposeB);
  };
  return e;
}

}  // namespace

Example gemm_example() {
  return make(Variant::kPlain, "gemm", "C = A @ B, tiled and pipelined (the paper's Fig. 16)");
}
Example gemm_transpose_b_example() {
  return make(Variant::kTransposeB, "gemm_transpose_b", "C = A @ B^T with B stored (N, K)");
}
Example gemm_rs_example() {
  return make(Variant::kRegisterA, "gemm_rs",
              "C = A @ B with the A tile moved into registers first (the rs gemm)");
}

}  // namespace tessel
