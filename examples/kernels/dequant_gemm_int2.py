# Ct = dequant(B) @ A^T with signed int2 weights (-2..1), four per uint8 byte, lowest bits first,
# with int8 activations and int32 accumulation (W_INT2A_INT8).
# The shape of the paper's Fig. 17 (its W_*A_* dequantised GEMMs): every k-step copies a packed
# tile,
# unpacks it with shifts and masks in registers and multiplies. The built-in
# `dequant_gemm_int2` (examples/dequant_family.cpp) is the same kernel with an Eigen reference.
#
#   tessel run examples/kernels/dequant_gemm_int2.py --level thread -D M=128 -D N=128 -D K=256
#
# tessel: reference=dequant_gemm_int2
import tilelang
import tilelang.language as T


def dequant_gemm_int2(M=256, N=256, K=512, block_M=128, block_N=128, block_K=64, num_stages=3,
                      threads=128):
    num_elems_per_byte = 4
    in_dtype = "int8"
    accum_dtype = "int32"

    @T.prim_func
    def main(
            A: T.Tensor((M, K), in_dtype),
            B: T.Tensor((N, K // num_elems_per_byte), "uint8"),
            Ct: T.Tensor((N, M), "int32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K // num_elems_per_byte), "uint8")
            B_local = T.alloc_fragment((block_N, block_K // num_elems_per_byte), "uint8")
            # Both int8 operands in shared memory: mma.m16n8k32 on sm80 reads them as 4-byte words,
            # a target without an int8 matrix instruction with scalar multiply-adds.
            B_dequantize = T.alloc_shared((block_N, block_K), in_dtype)
            Ct_local = T.alloc_fragment((block_N, block_M), accum_dtype)

            T.clear(Ct_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K // num_elems_per_byte], B_shared)
                T.copy(B_shared, B_local)
                for i, j in T.Parallel(block_N, block_K):
                    q = (B_local[i, j // 4] >> (2 * (j % 4))) & 0x3
                    # sign-extend the 2-bit field: 0, 1 stay, 2, 3 -> -2, -1
                    B_dequantize[i, j] = T.Cast(in_dtype, (q ^ 2) - 2)
                T.gemm(B_dequantize, A_shared, Ct_local, transpose_B=True)
            T.copy(Ct_local, Ct[bx * block_N, by * block_M])

    return main
