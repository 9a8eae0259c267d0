# The `gemm` example with its shared tiles annotated row-major instead of swizzled: correct, but
# every ldmatrix phase reads eight 16-byte rows that start in the same few banks. A's rows are
# block_K * 2 = 64 bytes, so rows r and r + 2 share banks (4-way conflicts); B's are
# block_N * 2 = 256 bytes, all eight rows of a phase in the same four banks (8-way).
#
#   tessel report examples/kernels/gemm_row_major.py -o gemm_row_major.html
#
# tessel: reference=gemm
import tilelang
import tilelang.language as T


def gemm_row_major(M=256, N=256, K=128, num_stages=3, threads=128, dtype="float16"):
    block_M, block_N, block_K = 128, 128, 32  # fixed: the annotated layouts spell them out
    accum_dtype = "float32"

    @T.prim_func
    def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.annotate_layout({
                A_shared: Layout([128, 32], lambda i, j: i * 32 + j),
                B_shared: Layout([32, 128], lambda i, j: i * 128 + j),
            })

            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            T.copy(C_local, C[by * block_M, bx * block_N])

    return main
