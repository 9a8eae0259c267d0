// The dequantising GEMM and GEMV family of the paper's low-bit workloads (W_INT4A_FP16,
// W_NF4A_FP16, W_INT2A_INT8 and FP4 E2M1 with a group scale): weights packed in uint8 bytes are
// unpacked with shifts and masks in registers inside the k loop, then multiplied.
//   GEMM: Ct[N, M] = W[N, K] @ A[M, K]^T, the shape of the paper's Fig. 17 (the unpacked tile is
//         the register operand of T.gemm); int2 weights meet int8 activations and accumulate in
//         int32 (unpacked into shared memory: the int8 gemm runs as scalar multiply-adds).
//   GEMV: C[N] = W[N, K] @ A[K] (the paper's V0-V7 have m = 1): each block owns block_N rows,
//         multiplies a block_K slice element-wise and reduces it into its accumulators.
// W[n, k] = decode(field k % per_byte of B[n, k / per_byte]) (examples/dequant_formats.h), times
// Scale[n, k / group_size] for nf4 and fp4. The references decode bytes on the host (Eigen,
// double). examples/kernels/dequant_{gemm,gemv}_*.py are the same kernels in TileLang syntax.
#include <algorithm>
#include <vector>

#include "core/builder.h"
#include "core/builtin_layouts.h"
#include "core/error.h"
#include "examples/dequant_formats.h"
#include "examples/reference_math.h"
#include "examples/registry.h"
#include "examples/sampled_product.h"

namespace tessel {

namespace {

struct Shape {
  int64_t N, K, group;
};

std::string kernel_name(bool gemv, LowBit f) {
  return std::string(gemv ? "dequant_gemv_" : "dequant_gemm_") + lowbit_name(f);
}

/// Refuses shapes the packing or the grouping cannot hold, naming the kernel and the fix.
void check_shape(const std::string& name, LowBit f, int64_t N, int64_t K, int64_t bN, int64_t bK,
                 int64_t group) {
  const int64_t per = lowbit_per_byte(f);
  if (K % per != 0 || bK % per != 0) {
    user_error("kernel '" + name + "': K=" + std::to_string(K) +
               " and block_K=" + std::to_string(bK) + " must be multiples of the " +
               std::to_string(per) + " " + lowbit_name(f) + " values packed in a byte");
  }
  if (lowbit_scaled(f)) {
    if (group % per != 0 || K % group != 0) {
      user_error("kernel '" + name + "': group_size=" + std::to_string(group) + " must divide K=" +
                 std::to_string(K) + " and be a multiple of " + std::to_string(per));
    }
    // The scale is read straight from global memory at (row, column / group_size): whole tiles
    // keep those reads in bounds.
    if (N % bN != 0 || K % bK != 0) {
      user_error("kernel '" + name + "': N=" + std::to_string(N) + " and K=" + std::to_string(K) +
                 " must be multiples of block_N=" + std::to_string(bN) + " and block_K=" +
                 std::to_string(bK) + " (the group scales are read per element, unguarded)");
    }
  }
}

/// The 16 NF4 code values in a per-thread float32 table, written once before the k loop.
BufferRef nf4_table(KernelBuilder& T) {
  auto lut = T.alloc_local("lut", {make_int(16)}, DataType::f32());
  for (int i = 0; i < 16; ++i) lut(make_int(i)) = make_const(DataType::f32(), kNF4Table[i]);
  return lut;
}

/// The value of weight (row, col) of the tile whose packed bytes are `packed`, as `type`:
/// decoded, looked up (nf4) and scaled (nf4, fp4) in float32.
Expr weight(LowBit f, const BufferRef& packed, const BufferRef* lut, const BufferRef* scale,
            const Expr& i, const Expr& j, const Expr& scale_row, const Expr& scale_col,
            DataType type) {
  const int64_t per = lowbit_per_byte(f);
  Expr v = decode_field(f, packed(i, floordiv(j, make_int(per))), floormod(j, make_int(per)));
  if (f == LowBit::kNF4) v = (*lut)(v);
  if (scale) v = cast(DataType::f32(), v) * cast(DataType::f32(), (*scale)(scale_row, scale_col));
  return cast(type, v);
}

Kernel build_gemm(LowBit f, const Params& p) {
  const std::string name = kernel_name(false, f);
  int64_t M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
  int64_t bM = p.positive("block_M"), bN = p.positive("block_N"), bK = p.positive("block_K");
  int64_t group = lowbit_scaled(f) ? p.positive("group_size") : K;
  check_shape(name, f, N, K, bN, bK, group);
  const bool int8 = f == LowBit::kInt2;
  const DataType in = int8 ? DataType::i8() : DataType::f16();
  const DataType acc = int8 ? DataType::i32() : DataType::f32();
  const DataType out = int8 ? DataType::i32() : DataType::f16();
  const int64_t per = lowbit_per_byte(f);

  KernelBuilder T(name);
  auto A = T.tensor("A", {M, K}, in);
  auto B = T.tensor("B", {N, K / per}, DataType::u8());
  BufferRef Scale;
  if (lowbit_scaled(f)) Scale = T.tensor("Scale", {N, K / group}, DataType::f16());
  auto Ct = T.tensor("Ct", {N, M}, out);
  auto [bx, by] = T.kernel2(ceildiv(N, bN), ceildiv(M, bM), static_cast<int>(p.integer("threads")));
  auto A_shared = T.alloc_shared("A_shared", {bM, bK}, in);
  auto B_shared = T.alloc_shared("B_shared", {bN, bK / per}, DataType::u8());
  auto B_local = T.alloc_fragment("B_local", {bN, bK / per}, DataType::u8());
  // int8 x int8: both operands in shared memory, so that the gemm lowers to mma.m16n8k32 (sm80)
  // and, on a target without an int8 matrix instruction, to scalar multiply-adds, which read
  // both from shared memory.
  auto B_dequant = int8 ? T.alloc_shared("B_dequantize_shared", {bN, bK}, in)
                        : T.alloc_fragment("B_dequantize_local", {bN, bK}, in);
  auto Ct_local = T.alloc_fragment("Ct_local", {bN, bM}, acc);
  if (!int8) {
    // Rows of 32 packed bytes (block_K 64): the register copy's lanes 16 apart read rows 4
    // apart, one bank in the plain layout; swizzled (make_swizzled_layout), other banks.
    T.annotate_layout({{B_shared, gemm_operand_layout(bN, bK / per, DataType::u8())}});
  }
  BufferRef lut;
  if (f == LowBit::kNF4) lut = nf4_table(T);
  T.clear(Ct_local);
  T.pipelined(ceildiv(K, bK), static_cast<int>(p.integer("num_stages")), [&](Var k) {
    T.copy(A(by * bM, k * bK), A_shared);
    T.copy(B(bx * bN, k * bK / per), B_shared);
    T.copy(B_shared, B_local);
    T.parallel(bN, bK, [&](Var i, Var j) {
      B_dequant(i, j) = weight(f, B_local, f == LowBit::kNF4 ? &lut : nullptr,
                               lowbit_scaled(f) ? &Scale : nullptr, i, j, bx * bN + i,
                               floordiv(k * bK + j, make_int(group)), in);
    });
    T.gemm(B_dequant, A_shared, Ct_local, GemmOptions{.transpose_B = true});
  });
  T.copy(Ct_local, Ct(bx * bN, by * bM));
  return T.finish();
}

Kernel build_gemv(LowBit f, const Params& p) {
  const std::string name = kernel_name(true, f);
  int64_t N = p.integer("N"), K = p.integer("K");
  int64_t bN = p.positive("block_N"), bK = p.positive("block_K");
  int64_t group = lowbit_scaled(f) ? p.positive("group_size") : K;
  check_shape(name, f, N, K, bN, bK, group);
  const bool int8 = f == LowBit::kInt2;
  const DataType in = int8 ? DataType::i8() : DataType::f16();
  const DataType acc = int8 ? DataType::i32() : DataType::f32();
  const DataType out = int8 ? DataType::i32() : DataType::f16();
  const int64_t per = lowbit_per_byte(f);

  KernelBuilder T(name);
  auto A = T.tensor("A", {K}, in);
  auto B = T.tensor("B", {N, K / per}, DataType::u8());
  BufferRef Scale;
  if (lowbit_scaled(f)) Scale = T.tensor("Scale", {N, K / group}, DataType::f16());
  auto C = T.tensor("C", {N}, out);
  Var bx = T.kernel1(ceildiv(N, bN), static_cast<int>(p.integer("threads")));
  auto A_shared = T.alloc_shared("A_shared", {bK}, in);
  auto B_local = T.alloc_fragment("B_local", {bN, bK / per}, DataType::u8());
  auto prod = T.alloc_fragment("prod", {bN, bK}, acc);
  auto C_local = T.alloc_fragment("C_local", {bN}, acc);
  BufferRef lut;
  if (f == LowBit::kNF4) lut = nf4_table(T);
  T.clear(C_local);
  T.pipelined(ceildiv(K, bK), static_cast<int>(p.integer("num_stages")), [&](Var k) {
    T.copy(A(k * bK), A_shared);
    T.copy(B(bx * bN, k * bK / per), B_local);
    T.parallel(bN, bK, [&](Var i, Var j) {
      Expr w = weight(f, B_local, f == LowBit::kNF4 ? &lut : nullptr,
                      lowbit_scaled(f) ? &Scale : nullptr, i, j, bx * bN + i,
                      floordiv(k * bK + j, make_int(group)), acc);
      prod(i, j) = w * cast(acc, A_shared(j));
    });
    T.reduce_sum(prod, C_local, 1, /*clear=*/false);
  });
  T.copy(C_local, C(bx * bN));
  return T.finish();
}

/// The rows of W (MatrixPart): W[n, k] decoded from the packed bytes and scaled, then rounded to
/// `type`, the type the kernel multiplies it in (float16 for the GEMMs' operand: an fp4 value
/// times a float16 scale has 12 significant bits; float32 for the GEMVs), in double. The one
/// decoding of every reference of the family, full or sampled.
MatrixPart dequantized_rows(LowBit f, const TensorMap& t, int64_t K, DataType type) {
  const HostTensor& B = t.at("B");
  internal_check(B.dtype() == DataType::u8(), "dequant reference: B holds uint8 bytes");
  const HostTensor* scale = lowbit_scaled(f) ? &t.at("Scale") : nullptr;
  // host_decode of every byte at every field position, once: decoded[pos * 256 + byte].
  const int64_t per = lowbit_per_byte(f);
  std::vector<double> decoded(static_cast<size_t>(per) * 256);
  for (int64_t pos = 0; pos < per; ++pos) {
    for (int byte = 0; byte < 256; ++byte) {
      double w = host_decode(f, static_cast<uint8_t>(byte), static_cast<int>(pos));
      decoded[static_cast<size_t>(pos * 256 + byte)] = scale ? w : round_to(type, w);
    }
  }
  return [&B, scale, decoded, per, K, type](const std::vector<int64_t>& rows, MatrixD& out) {
    const int64_t packed = B.shape()[1];
    const int64_t groups = scale ? scale->shape()[1] : 1, group_size = K / groups;
    out.resize(static_cast<int64_t>(rows.size()), K);
    for (size_t i = 0; i < rows.size(); ++i) {
      const int64_t n = rows[i];
      const uint8_t* row = B.data() + n * packed;
      double* w_row = out.row(static_cast<int64_t>(i)).data();
      // Byte by byte, its `per` fields in order (the fields of one byte share a group: the
      // group size is a multiple of per), with no division an element.
      double group_scale = 1;
      for (int64_t b = 0, k = 0, group = 0, next_group = 0; b < packed; ++b) {
        const double* fields = decoded.data() + row[b];
        if (scale && k == next_group) {
          group_scale = scale->at(n * groups + group++);
          next_group += group_size;
        }
        for (int64_t pos = 0; pos < per; ++pos, ++k) {
          const double w = fields[pos * 256];
          w_row[k] = scale ? round_to(type, w * group_scale) : w;
        }
      }
    }
  };
}

/// The type the GEMMs multiply the weights in: int8 for int2 (with int8 activations), else
/// float16.
DataType gemm_operand(LowBit f) { return f == LowBit::kInt2 ? DataType::i8() : DataType::f16(); }

/// Ct = W A^T, W decoded and multiplied on every core.
void gemm_reference(LowBit f, TensorMap& t) {
  MatrixD A = to_matrix(t.at("A"));
  const int64_t N = t.at("B").shape()[0], K = A.cols();
  MatrixD W = all_rows(dequantized_rows(f, t, K, gemm_operand(f)), N, K);
  from_matrix(t.at("Ct"), parallel_product(W, A, /*transpose_b=*/true));
}

/// Ct = W A^T on the simulated blocks' tiles Ct[bx * block_N, by * block_M] in full and on
/// `per_tile` seeded rows and columns of every other tile: only the rows of W the product asks
/// for are decoded (dequantized_rows, as the full reference decodes them).
std::vector<SampledOutput> gemm_sampled_reference(LowBit f, const Params& p, const TensorMap& t,
                                                  const ReferenceSampleRequest& req) {
  const HostTensor& A = t.at("A");
  const int64_t K = A.shape()[1];
  TiledProduct c{"Ct",
                 t.at("Ct").shape()[0],
                 A.shape()[0],
                 K,
                 p.positive("block_N"),
                 p.positive("block_M"),
                 /*rows_on_x=*/true,
                 "(ceildiv(N, block_N), ceildiv(M, block_M))"};
  return {sampled_tiled_product(c, dequantized_rows(f, t, K, gemm_operand(f)),
                                tensor_rows_as_columns(A), req)};
}

/// Rows of W decoded per slice of kRowSlice rows, the slices spread over the cores.
constexpr int64_t kRowSlice = 64;

/// C = W a, a slice of kRowSlice rows at a time on every core: W is never held whole (at the
/// paper's V4, N x K doubles would take 6.6 GB). Each row's dot product is Eigen's, as for the
/// whole matrix.
void gemv_reference(LowBit f, TensorMap& t) {
  const HostTensor& A = t.at("A");
  const int64_t K = A.shape()[0];
  Eigen::VectorXd a(K);
  for (int64_t k = 0; k < K; ++k) a(k) = A.at(k);
  const DataType operand = f == LowBit::kInt2 ? DataType::i32() : DataType::f32();
  const MatrixPart w_rows = dequantized_rows(f, t, K, operand);
  HostTensor& C = t.at("C");
  const int64_t N = C.shape()[0];
  Eigen::VectorXd c(N);
  parallel_for((N + kRowSlice - 1) / kRowSlice, [&](int64_t s) {
    std::vector<int64_t> rows;
    for (int64_t n = s * kRowSlice; n < std::min(N, (s + 1) * kRowSlice); ++n) rows.push_back(n);
    MatrixD W;
    w_rows(rows, W);
    c.segment(rows.front(), W.rows()).noalias() = W * a;
  });
  for (int64_t n = 0; n < N; ++n) C.set(n, c(n));
}

std::string format_words(LowBit f) {
  switch (f) {
    case LowBit::kUInt4:
      return "unsigned int4 weights (0..15), float16 activations";
    case LowBit::kInt4:
      return "signed int4 weights (-8..7), float16 activations";
    case LowBit::kNF4:
      return "NF4 weights (QLoRA's 16-value table) times a float16 group scale, float16 "
             "activations";
    case LowBit::kFP4:
      return "FP4 E2M1 weights times a float16 group scale, float16 activations";
    case LowBit::kInt2:
      return "signed int2 weights (-2..1), int8 activations, int32 accumulation";
  }
  return "";
}

Example gemm_example(LowBit f) {
  Example e;
  e.name = kernel_name(false, f);
  e.description = "Ct = dequant(B) @ A^T, " + format_words(f);
  e.params = {{"M", "256", "rows of A, columns of Ct"},
              {"N", "256", "rows of B and Ct"},
              {"K", "512", "the reduction dimension (unpacked)"},
              // 128 x 128 tiles for every format, int2's int8 x int8 -> int32 too (128
              // accumulator registers a thread, as the fp32 ones of the others); 64 deep, as
              // TileLang's int8 x int2 prefill kernel (examples/bitnet-1.58b, chunk 64). Its fp4
              // example takes 128, whose three stages of A would not fit gfx942's 64 KiB of LDS.
              {"block_M", "128", "columns of a block's Ct tile"},
              {"block_N", "128", "rows of a block's Ct tile"},
              {"block_K", "64", "depth of one k-step (unpacked)"},
              {"num_stages", "3", "software-pipeline depth of the k loop"},
              {"threads", "128", "threads per block"}};
  if (lowbit_scaled(f)) e.params.push_back({"group_size", "128", "weights per scale along K"});
  e.outputs = {"Ct"};
  e.build = [f](const Params& p) { return build_gemm(f, p); };
  e.reference = [f](const Params&, TensorMap& t) { gemm_reference(f, t); };
  e.reference_macs = gemm_shape_macs;
  e.sampled_reference = [f](const Params& p, const TensorMap& t, const ReferenceSampleRequest& r) {
    return gemm_sampled_reference(f, p, t, r);
  };
  return e;
}

Example gemv_example(LowBit f) {
  Example e;
  e.name = kernel_name(true, f);
  e.description = "C = dequant(B) @ A (m = 1), " + format_words(f);
  e.params = {{"N", "1024", "rows of B, length of C"},
              {"K", "1024", "the reduction dimension (unpacked), length of A"},
              {"block_N", "8", "rows of C per block"},
              {"block_K", "128", "depth of one k-step (unpacked)"},
              {"num_stages", "2", "software-pipeline depth of the k loop"},
              {"threads", "128", "threads per block"}};
  if (lowbit_scaled(f)) e.params.push_back({"group_size", "128", "weights per scale along K"});
  e.outputs = {"C"};
  e.build = [f](const Params& p) { return build_gemv(f, p); };
  e.reference = [f](const Params&, TensorMap& t) { gemv_reference(f, t); };
  return e;
}

}  // namespace

std::vector<Example> dequant_family_examples() {
  std::vector<Example> out;
  for (LowBit f : {LowBit::kUInt4, LowBit::kInt4, LowBit::kNF4, LowBit::kFP4, LowBit::kInt2}) {
    out.push_back(gemm_example(f));
    out.push_back(gemv_example(f));
  }
  return out;
}

}  // namespace tessel
