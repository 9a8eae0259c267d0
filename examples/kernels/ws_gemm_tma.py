# The warp-specialised GEMM of ws_gemm.py with TMA: warpgroup 1's first thread loads each A and B
# tile with T.tma_copy (expect_tx + cp.async.bulk.tensor onto the stage's full barrier), then all
# 128 producer threads arrive; the full barrier's phase completes when they have and the tiles'
# 4096 bytes have landed. Otherwise as ws_gemm.py: warpgroup 1 (the
# producer, threads 128-255) fills a two-stage ring of shared buffers,
# warpgroup 0 (the consumer, threads 0-127) multiplies them into per-thread accumulators. Two
# mbarriers per stage order them: `full` (the producer's 128 threads arrive once a stage is
# written) and `empty` (the consumer's 128 threads arrive once they have read it). Round ko uses
# stage ko % 2 for the (ko // 2)-th time, so the consumer waits for phase ko // 2 of full (parity
# (ko // 2) % 2) and the producer for phase ko // 2 - 1 of empty (parity (ko // 2 + 1) % 2: the
# first two rounds pass at once, both stages being empty).
#
#   tessel run examples/kernels/ws_gemm_tma.py --level thread --target sm90
#
# Try a bug: drop the consumer's T.barrier_wait — the reads of A_s are TMA races.
#
# tessel: reference=gemm
import tilelang.language as T


def ws_gemm_tma(M=128, N=128, K=256, dtype="float16"):
    block_M, block_N, block_K = 32, 32, 32  # 1024 outputs: 8 per consumer thread
    accum_dtype = "float32"

    @T.prim_func
    def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_s = T.alloc_shared((2, block_M, block_K), dtype)
            B_s = T.alloc_shared((2, block_K, block_N), dtype)
            acc = T.alloc_local((8,), accum_dtype)
            full = T.alloc_barrier([128, 128])
            empty = T.alloc_barrier([128, 128])
            tx = T.get_thread_binding()

            for r in T.serial(8):
                acc[r] = 0.0
            for ko in T.serial(T.ceildiv(K, block_K)):
                with T.ws(1):
                    T.set_max_nreg(24, 0)
                    T.barrier_wait(empty[ko % 2], (ko // 2 + 1) % 2)
                    T.tma_copy(A[by * block_M:(by + 1) * block_M, ko * block_K:(ko + 1) * block_K],
                               A_s[ko % 2, :, :], barrier=full[ko % 2])
                    T.tma_copy(B[ko * block_K:(ko + 1) * block_K, bx * block_N:(bx + 1) * block_N],
                               B_s[ko % 2, :, :], barrier=full[ko % 2])
                    T.barrier_arrive(full[ko % 2])
                with T.ws(0):
                    T.set_max_nreg(240, 1)
                    T.barrier_wait(full[ko % 2], (ko // 2) % 2)
                    for r in T.serial(8):
                        e = tx + r * 128
                        for kk in T.serial(block_K):
                            acc[r] += T.cast(A_s[ko % 2, e // block_N, kk], accum_dtype) * T.cast(
                                B_s[ko % 2, kk, e % block_N], accum_dtype)
                    T.barrier_arrive(empty[ko % 2])
            with T.ws(0):
                for r in T.serial(8):
                    e = tx + r * 128
                    C[by * block_M + e // block_N, bx * block_N + e % block_N] = acc[r]

    return main
