# FlashAttention forward in TileLang syntax: the built-in `flash_attention` example as a kernel
# file (TileLang's example_mha_fwd, batch folded into heads). `tessel run
# examples/kernels/flash_attention.py --level thread` runs it thread by thread.
# tessel: reference=flash_attention
import tilelang
import tilelang.language as T


def flash_attention(heads=2, seq_len=256, dim=64, block_M=64, block_N=64, num_stages=2,
                    threads=128, is_causal=0):
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
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, threads=threads) as (bx, by):
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

            T.copy(Q[by, bx * block_M, 0], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            for k in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=num_stages):
                T.copy(K[by, k * block_N, 0], K_shared)
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
                T.copy(V[by, k * block_N, 0], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O[by, bx * block_M, 0])

    return main
