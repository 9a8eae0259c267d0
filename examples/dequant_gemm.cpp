// Weight-only quantised GEMM as in the paper's Fig. 17: B holds num_bits-bit unsigned integers
// packed into int8 bytes; each k-step copies a packed tile, unpacks it element-wise in registers
// (TVM's _tir_packed_to_unsigned_convert("int", 8)) and multiplies: Ct = dequant(B) @ A^T.
// examples/kernels/dequant_gemm.py is the same kernel in TileLang syntax.
#include <vector>

#include "core/builder.h"
#include "examples/reference_math.h"
#include "examples/registry.h"
#include "examples/sampled_product.h"

namespace tessel {

namespace {

/// _tir_packed_to_unsigned_convert("int", 8)(nbit, val, pos, dtype): the nbit-bit field at
/// position `pos` of the int8 `val`, as an unsigned number of type `dtype`. TVM defines it as
/// ((val >> (pos * nbit)) & ((1 << nbit) - 1)).astype(dtype), shift and mask in int8.
Expr packed_to_unsigned(int64_t nbit, const Expr& val, const Expr& pos, DataType dtype) {
  Expr shift = cast(DataType::i8(), pos * nbit);
  Expr mask = IntImmNode::make(DataType::i8(), (int64_t{1} << nbit) - 1);
  return cast(dtype, (val >> shift) & mask);
}

Kernel build_dequant_gemm(const Params& p) {
  int64_t M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
  int64_t bM = p.positive("block_M"), bN = p.positive("block_N"), bK = p.positive("block_K");
  int stages = static_cast<int>(p.integer("num_stages"));
  int64_t num_bits = p.integer("num_bits");
  DataType in = p.dtype("in_dtype"), out = p.dtype("out_dtype"), acc = p.dtype("accum_dtype");
  if (num_bits != 1 && num_bits != 2 && num_bits != 4) {
    user_error("kernel 'dequant_gemm': num_bits=" + std::to_string(num_bits) +
               " is not 1, 2 or 4; the int8 storage packs 8 / num_bits values per byte");
  }
  int64_t elems = 8 / num_bits;  // values per storage byte
  if (K % elems != 0 || bK % elems != 0) {
    user_error("kernel 'dequant_gemm': K=" + std::to_string(K) +
               " and block_K=" + std::to_string(bK) + " must be multiples of the " +
               std::to_string(elems) + " values packed in a byte");
  }
  DataType storage = DataType::i8();

  KernelBuilder T("dequant_gemm");
  auto A = T.tensor("A", {M, K}, in);
  auto B = T.tensor("B", {N, K / elems}, storage);
  auto Ct = T.tensor("Ct", {N, M}, out);
  auto [bx, by] = T.kernel2(ceildiv(N, bN), ceildiv(M, bM), static_cast<int>(p.integer("threads")));
  auto A_shared = T.alloc_shared("A_shared", {bM, bK}, in);
  auto B_shared = T.alloc_shared("B_shared", {bN, bK / elems}, storage);
  auto B_local = T.alloc_fragment("B_local", {bN, bK / elems}, storage);
  auto B_dequantize_local = T.alloc_fragment("B_dequantize_local", {bN, bK}, in);
  auto Ct_local = T.alloc_fragment("Ct_local", {bN, bM}, acc);
  T.clear(Ct_local);
  T.pipelined(ceildiv(K, bK), stages, [&](Var k) {
    T.copy(A(by * bM, k * bK), A_shared);
    T.copy(B(bx * bN, k * bK / elems), B_shared);
    T.copy(B_shared, B_local);
    T.parallel(bN, bK, [&](Var i, Var j) {
      B_dequantize_local(i, j) = packed_to_unsigned(num_bits, B_local(i, j / elems), j % elems, in);
    });
    T.gemm(B_dequantize_local, A_shared, Ct_local, GemmOptions{.transpose_B = true});
  });
  T.copy(Ct_local, Ct(bx * bN, by * bM));
  return T.finish();
}

/// The rows of W (MatrixPart): W[n, k] is the unsigned field k % elems of byte B[n, k / elems],
/// low bits first; the field width comes from the shapes (K / B's columns values per byte). The
/// one unpacking of the full and the sampled reference.
MatrixPart unpacked_rows(const HostTensor& B, int64_t K) {
  return [&B, K](const std::vector<int64_t>& rows, MatrixD& out) {
    const int64_t packed = B.shape()[1], elems = K / packed;
    const int bits = static_cast<int>(8 / elems);
    out.resize(static_cast<int64_t>(rows.size()), K);
    for (size_t i = 0; i < rows.size(); ++i) {
      const uint8_t* row = B.data() + rows[i] * packed;  // int8 storage: two's-complement bytes
      for (int64_t k = 0; k < K; ++k) {
        out(static_cast<int64_t>(i), k) =
            (row[k / elems] >> (bits * (k % elems))) & ((1 << bits) - 1);
      }
    }
  };
}

/// Ct = W @ A^T, W unpacked and multiplied on every core.
void dequant_gemm_reference(TensorMap& t) {
  const HostTensor& B = t.at("B");
  MatrixD A = to_matrix(t.at("A"));
  MatrixD W = all_rows(unpacked_rows(B, A.cols()), B.shape()[0], A.cols());
  from_matrix(t.at("Ct"), parallel_product(W, A, /*transpose_b=*/true));
}

/// Ct = W @ A^T on the simulated blocks' tiles Ct[bx * block_N, by * block_M] in full and on
/// `per_tile` seeded rows and columns of every other tile: only the rows of W the product asks
/// for are unpacked (unpacked_rows, as the full reference unpacks them).
std::vector<SampledOutput> dequant_gemm_sampled_reference(const Params& p, const TensorMap& t,
                                                          const ReferenceSampleRequest& req) {
  const HostTensor &A = t.at("A"), &B = t.at("B");
  const int64_t K = A.shape()[1];
  TiledProduct c{"Ct",
                 B.shape()[0],
                 A.shape()[0],
                 K,
                 p.positive("block_N"),
                 p.positive("block_M"),
                 /*rows_on_x=*/true,
                 "(ceildiv(N, block_N), ceildiv(M, block_M))"};
  return {sampled_tiled_product(c, unpacked_rows(B, K), tensor_rows_as_columns(A), req)};
}

}  // namespace

Example dequant_gemm_example() {
  Example e;
  e.name = "dequant_gemm";
  e.description =
      "Ct = dequant(B) @ A^T with B packed num_bits-bit unsigned ints in int8 (the "
      "paper's Fig. 17)";
  e.params = {{"M", "512", "rows of A, columns of Ct"},
              {"N", "512", "rows of B and Ct"},
              {"K", "512", "the reduction dimension (unpacked)"},
              {"block_M", "128", "columns of a block's Ct tile"},
              {"block_N", "128", "rows of a block's Ct tile"},
              {"block_K", "32", "depth of one k-step (unpacked)"},
              {"num_stages", "3", "software-pipeline depth of the k loop"},
              {"threads", "128", "threads per block"},
              {"num_bits", "4", "bits per packed value: 1, 2 or 4"},
              {"in_dtype", "float16", "type of A and of the unpacked B"},
              {"out_dtype", "float16", "type of Ct"},
              {"accum_dtype", "float32", "accumulator type"}};
  e.outputs = {"Ct"};
  e.build = build_dequant_gemm;
  e.reference = [](const Params&, TensorMap& t) { dequant_gemm_reference(t); };
  e.reference_macs = gemm_shape_macs;
  e.sampled_reference = dequant_gemm_sampled_reference;
  return e;
}

}  // namespace tessel
