# The weight-only quantised GEMM of the TileLang paper's Fig. 17 (Appendix B.2): Ct = dequant(B) @
# A^T where B packs two 4-bit unsigned integers per int8 byte. The inner function is the figure's
# text; the enclosing def supplies the names it uses, as BitBLAS's original example does.
# `_tir_packed_to_unsigned_convert` is built into Tessel's parser (TVM's definition:
# ((val >> (pos * nbit)) & ((1 << nbit) - 1)), in the storage type, cast to `dtype`).
# The built-in `dequant_gemm` (examples/dequant_gemm.cpp) is the same kernel with a reference.
#
#   tessel run examples/kernels/dequant_gemm.py -D M=256 -D N=256
#
# tessel: reference=dequant_gemm
import tilelang
import tilelang.language as T
from tilelang.quantize import _tir_packed_to_unsigned_convert


def dequant_gemm(M=512, N=512, K=512, block_M=128, block_N=128, block_K=32, num_stages=3,
                 threads=128, in_dtype="float16", out_dtype="float16", accum_dtype="float32"):
    num_bits = 4  # the figure unpacks two values per byte (j // 2, j % 2)
    num_elems_per_byte = 8 // num_bits
    storage_dtype = "int8"
    A_shape = (M, K)
    B_shape = (N, K // num_elems_per_byte)
    A_shared_shape = (block_M, block_K)
    B_shared_shape = (block_N, block_K // num_elems_per_byte)
    B_dequantize_shared_shape = (block_N, block_K)

    @tilelang.jit
    def matmul_fp16_fp4(
        A: T.Tensor(A_shape, in_dtype),
        B: T.Tensor(B_shape, storage_dtype),
        Ct: T.Tensor((N, M), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype)
            B_shared = T.alloc_shared(B_shared_shape, storage_dtype)
            B_local = T.alloc_fragment(B_shared_shape, storage_dtype)
            B_dequantize_local = T.alloc_fragment(B_dequantize_shared_shape, in_dtype)
            Ct_local = T.alloc_fragment((block_N, block_M), accum_dtype)

            T.clear(Ct_local)
            for k in T.Pipelined(
                T.ceildiv(K, block_K),
                num_stages=num_stages
            ):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K // num_elems_per_byte], B_shared)
                T.copy(B_shared, B_local)
                for i, j in T.Parallel(block_N, block_K):
                    B_dequantize_local[i, j] = _tir_packed_to_unsigned_convert("int", 8)(
                        num_bits,
                        B_local[i, j // 2],
                        j % 2,
                        dtype=in_dtype,
                    )
                T.gemm(B_dequantize_local, A_shared, Ct_local, transpose_B=True)
            T.copy(Ct_local, Ct[bx * block_N, by * block_M])

    return matmul_fp16_fp4
