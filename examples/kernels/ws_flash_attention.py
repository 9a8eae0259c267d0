# FlashAttention forward with hand-written warp specialisation and tile operators, TileLang
# style: warpgroup 1 (the producer, threads 128-255) copies each K and V tile with T.copy,
# warpgroup 0 (the consumer, threads 0-127) runs the online softmax — T.gemm, T.Parallel,
# T.reduce_max/T.reduce_sum, fragment copies — each operator lowered for its 128 threads. The
# whole block copies the Q tile first. Two mbarriers take turns per K/V tile: `ready` (producer
# arrives, consumer waits for phase k: parity k % 2) and `done` (consumer arrives once both
# gemms have read the tiles; the producer waits for phase k - 1: parity (k + 1) % 2).
#
#   tessel run examples/kernels/ws_flash_attention.py --level thread --target sm90
#
# tessel: reference=flash_attention
import tilelang.language as T


def ws_flash_attention(heads=1, seq_len=128, dim=64, block_M=64, block_N=64, is_causal=0):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    dtype = "float16"
    accum_dtype = "float32"

    @T.prim_func
    def main(
            Q: T.Tensor((heads, seq_len, dim), dtype),
            K: T.Tensor((heads, seq_len, dim), dtype),
            V: T.Tensor((heads, seq_len, dim), dtype),
            O: T.Tensor((heads, seq_len, dim), dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, threads=256) as (bx, by):
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            acc_s = T.alloc_fragment((block_M, block_N), accum_dtype)
            acc_s_cast = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, dim), accum_dtype)
            scores_max = T.alloc_fragment((block_M,), accum_dtype)
            scores_max_prev = T.alloc_fragment((block_M,), accum_dtype)
            scores_scale = T.alloc_fragment((block_M,), accum_dtype)
            scores_sum = T.alloc_fragment((block_M,), accum_dtype)
            logsum = T.alloc_fragment((block_M,), accum_dtype)
            ready = T.alloc_barrier(arrive_count=128)
            done = T.alloc_barrier(arrive_count=128)

            T.copy(Q[by, bx * block_M, 0], Q_shared)
            with T.ws(0):
                T.fill(acc_o, 0)
                T.fill(logsum, 0)
                T.fill(scores_max, -T.infinity(accum_dtype))
            for k in T.serial(T.ceildiv(seq_len, block_N)):
                with T.ws(1):
                    T.barrier_wait(done, (k + 1) % 2)
                    T.copy(K[by, k * block_N, 0], K_shared)
                    T.copy(V[by, k * block_N, 0], V_shared)
                    T.barrier_arrive(ready)
                with T.ws(0):
                    T.barrier_wait(ready, k % 2)
                    T.clear(acc_s)
                    T.gemm(Q_shared, K_shared, acc_s, transpose_B=True,
                           policy=T.GemmWarpPolicy.FullRow)
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(
                            k * block_N + j >= seq_len or
                            (is_causal == 1 and bx * block_M + i < k * block_N + j),
                            -T.infinity(accum_dtype), acc_s[i, j])
                    T.copy(scores_max, scores_max_prev)
                    T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                    for i in T.Parallel(block_M):
                        scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                    T.reduce_sum(acc_s, scores_sum, dim=1)
                    for i in T.Parallel(block_M):
                        logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                    T.copy(acc_s, acc_s_cast)
                    for i, j in T.Parallel(block_M, dim):
                        acc_o[i, j] *= scores_scale[i]
                    T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                    T.barrier_arrive(done)
            with T.ws(0):
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] /= logsum[i]
                T.copy(acc_o, O[by, bx * block_M, 0])

    return main
