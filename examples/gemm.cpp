// GEMM as in the paper's Fig. 16 (fp16/bf16 in, fp32 accumulate), with transpose_B and
// register-A (`rs`) variants.
#include "core/builder.h"
#include "examples/reference_math.h"
#include "examples/registry.h"

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
  from_matrix(t.at("C"), parallel_product(A, transpose_b ? MatrixD(B.transpose()) : B));
}

Example make(Variant v, std::string name, std::string description) {
  Example e;
  e.name = std::move(name);
  e.description = std::move(description);
  e.params = gemm_params();
  e.outputs = {"C"};
  e.build = [v](const Params& p) { return build_gemm(p, v); };
  e.reference = [v](const Params&, TensorMap& t) { gemm_reference(t, v == Variant::kTransposeB); };
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
