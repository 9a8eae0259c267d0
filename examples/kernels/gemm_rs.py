# C = A @ B with the A tile moved into registers before the product (the "rs" gemm): the
# built-in `gemm_rs` example as a kernel file.
# tessel: reference=gemm_rs
import tilelang.language as T


def gemm_rs(M=512, N=512, K=512, block_M=128, block_N=128, block_K=32, num_stages=3, threads=128,
            dtype="float16"):

    @T.prim_func
    def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            A_local = T.alloc_fragment((block_M, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")

            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.copy(A_shared, A_local)
                T.gemm(A_local, B_shared, C_local)

            T.copy(C_local, C[by * block_M, bx * block_N])

    return main
