# BUG on purpose, in one element only: the signed-int4 dequantised GEMM of the built-in
# `dequant_gemm_int4` (Ct = dequant(B) @ A^T), but the block that owns Ct[bug_row, bug_col] adds
# 1000 to that one element before storing its tile. The tile level runs the same bug, so only the
# reference can find it: a full reference always, a sampled one (`--reference sampled`) when the
# element lies in a sampled row or column or in a simulated block's tile.
# tessel: reference=dequant_gemm_int4
import tilelang.language as T


def dequant_gemm_one_wrong_element(M=96, N=128, K=64, block_M=32, block_N=32, block_K=32,
                                   num_stages=2, threads=128, bug_row=0, bug_col=0):

    @T.prim_func
    def main(
            A: T.Tensor((M, K), "float16"),
            B: T.Tensor((N, K // 2), "uint8"),
            Ct: T.Tensor((N, M), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_N, block_K // 2), "uint8")
            B_local = T.alloc_fragment((block_N, block_K // 2), "uint8")
            B_dequantize = T.alloc_fragment((block_N, block_K), "float16")
            Ct_local = T.alloc_fragment((block_N, block_M), "float32")

            T.clear(Ct_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K // 2], B_shared)
                T.copy(B_shared, B_local)
                for i, j in T.Parallel(block_N, block_K):
                    q = (B_local[i, j // 2] >> (4 * (j % 2))) & 0xF
                    B_dequantize[i, j] = T.Cast("float16", (q ^ 8) - 8)
                T.gemm(B_dequantize, A_shared, Ct_local, transpose_B=True)
            for i, j in T.Parallel(block_N, block_M):
                if bx * block_N + i == bug_row and by * block_M + j == bug_col:
                    Ct_local[i, j] = Ct_local[i, j] + 1000.0
            T.copy(Ct_local, Ct[bx * block_N, by * block_M])

    return main
