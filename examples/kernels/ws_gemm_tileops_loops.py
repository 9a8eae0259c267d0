# The hand-written warp-specialised GEMM of ws_gemm_tileops.py with each warpgroup's loop inside
# its own T.ws branch, as TileLang users also write it: the producer (threads 128-255) loops over
# k copying tiles, the consumer (threads 0-127) loops over k multiplying them; the mbarriers make
# the two loops take turns. The two branches only mean something when they run at the same time,
# so the tile level (program order) refuses the consumer's first wait and the check is the thread
# level against the reference:
#
#   tessel run examples/kernels/ws_gemm_tileops_loops.py --level thread --target sm90
#
# tessel: reference=gemm
import tilelang.language as T


def ws_gemm_tileops_loops(M=128, N=128, K=128, block_M=64, block_N=64, block_K=32,
                          dtype="float16"):
    accum_dtype = "float32"

    @T.prim_func
    def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            ready = T.alloc_barrier(arrive_count=128)
            done = T.alloc_barrier(arrive_count=128)

            with T.ws(1):
                for ko in range(T.ceildiv(K, block_K)):
                    T.barrier_wait(done, (ko + 1) % 2)
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                    T.copy(B[ko * block_K, bx * block_N], B_shared)
                    T.barrier_arrive(ready)
            with T.ws(0):
                T.clear(C_local)
                for ko in range(T.ceildiv(K, block_K)):
                    T.barrier_wait(ready, ko % 2)
                    T.gemm(A_shared, B_shared, C_local)
                    T.barrier_arrive(done)
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main
