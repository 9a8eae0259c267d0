# BUG on purpose, in one block only: a GEMM whose block (3, 0) copies its A tile from one row too
# low (rows 1..32 instead of 0..31), an off-by-one in a block offset. Its tensors are those of the
# built-in `gemm`, whose reference checks it. Simulating block 0 only (`--blocks first`), block
# (3, 0) runs at tile level, where the thread level cannot disagree with it: the reference finds
# it, in full (`--reference full`) or on its sampled rows and columns (`--reference sampled`).
# tessel: reference=gemm
import tilelang.language as T


def gemm_block_offset_bug(M=96, N=128, K=64, block_M=32, block_N=32, block_K=32, threads=128,
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
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            # 1 in block (3, 0) only: bx // 3 is 1 for bx = 3, (2 - by) // 2 is 1 for by = 0
            wrong = (bx // 3) * ((2 - by) // 2)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M + wrong, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main
