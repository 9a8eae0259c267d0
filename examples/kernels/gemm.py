# C = A @ B, tiled and pipelined: the built-in `gemm` example (examples/gemm.cpp) as a kernel file
# in TileLang syntax. `tessel run examples/kernels/gemm.py -D M=1024` runs it on the CPU.
# tessel: reference=gemm
import tilelang
import tilelang.language as T


def gemm(M=512, N=512, K=512, block_M=128, block_N=128, block_K=32, num_stages=3, threads=128,
         dtype="float16"):
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

            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            T.copy(C_local, C[by * block_M, bx * block_N])

    return main
