# A warp-specialised GEMM written by hand with tile operators, TileLang style: warpgroup 1 (the
# producer, threads 128-255) copies the A and B tiles with T.copy, warpgroup 0 (the consumer,
# threads 0-127) clears the accumulator, multiplies with T.gemm and stores C with T.copy. Each
# operator is lowered for the 128 threads of its branch (on sm90 the gemm is one warpgroup's
# wgmma). One stage, two mbarriers: `ready` (the producer's 128 threads arrive once the tiles are
# written) and `done` (the consumer's 128 threads arrive once the gemm has read them). Round ko
# waits for phase ko of `ready` (parity ko % 2), the producer for phase ko - 1 of `done` (parity
# (ko + 1) % 2: the first round passes at once).
#
#   tessel run examples/kernels/ws_gemm_tileops.py --level thread --target sm90
#
# tessel: reference=gemm
import tilelang.language as T


def ws_gemm_tileops(M=128, N=128, K=128, block_M=64, block_N=64, block_K=32, dtype="float16"):
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

            with T.ws(0):
                T.clear(C_local)
            for ko in T.serial(T.ceildiv(K, block_K)):
                with T.ws(1):
                    T.barrier_wait(done, (ko + 1) % 2)
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                    T.copy(B[ko * block_K, bx * block_N], B_shared)
                    T.barrier_arrive(ready)
                with T.ws(0):
                    T.barrier_wait(ready, ko % 2)
                    T.gemm(A_shared, B_shared, C_local)
                    T.barrier_arrive(done)
            with T.ws(0):
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main
