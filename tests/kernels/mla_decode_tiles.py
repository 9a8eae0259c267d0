# Multi-head latent attention decoding, one block per (batch, group of block_H heads): the query
# and its rotary part stay in shared memory while the latent KV cache streams through in tiles of
# block_N tokens. With dim = 512 and block_H = block_N = 64 in float16 its shared tiles do not fit
# one block on any GPU Tessel targets once the KV tiles are double-buffered: `tessel lower` and
# `tessel verify` say so, naming each tile and its size.
import tilelang.language as T


def mla_decode_tiles(batch=1, heads=64, seqlen_kv=256, dim=512, pe_dim=64, block_H=64,
                     block_N=64, num_stages=2, threads=256):
    scale = (1.0 / (dim + pe_dim)) ** 0.5 * 1.44269504

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, dim), "float16"),
             Q_pe: T.Tensor((batch, heads, pe_dim), "float16"),
             KV: T.Tensor((batch, seqlen_kv, dim), "float16"),
             K_pe: T.Tensor((batch, seqlen_kv, pe_dim), "float16"),
             Output: T.Tensor((batch, heads, dim), "float16")):
        with T.Kernel(batch, heads // block_H, threads=threads) as (bx, by):
            Q_shared = T.alloc_shared((block_H, dim), "float16")
            Q_pe_shared = T.alloc_shared((block_H, pe_dim), "float16")
            KV_shared = T.alloc_shared((block_N, dim), "float16")
            K_pe_shared = T.alloc_shared((block_N, pe_dim), "float16")
            S_shared = T.alloc_shared((block_H, block_N), "float16")
            O_shared = T.alloc_shared((block_H, dim), "float16")
            acc_s = T.alloc_fragment((block_H, block_N), "float32")
            acc_o = T.alloc_fragment((block_H, dim), "float32")
            scores_max = T.alloc_fragment((block_H,), "float32")
            scores_max_prev = T.alloc_fragment((block_H,), "float32")
            scores_scale = T.alloc_fragment((block_H,), "float32")
            scores_sum = T.alloc_fragment((block_H,), "float32")
            logsum = T.alloc_fragment((block_H,), "float32")

            T.copy(Q[bx, by * block_H, 0], Q_shared)
            T.copy(Q_pe[bx, by * block_H, 0], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity("float32"))
            for k in T.Pipelined(T.ceildiv(seqlen_kv, block_N), num_stages=num_stages):
                T.copy(KV[bx, k * block_N, 0], KV_shared)
                T.copy(K_pe[bx, k * block_N, 0], K_pe_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True)
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                T.copy(acc_s, S_shared)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.gemm(S_shared, KV_shared, acc_o)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bx, by * block_H, 0])

    return main
