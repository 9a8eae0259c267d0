# Causal linear attention, chunked and fused into one kernel, in TileLang syntax:
#   O[b, t, h, :] = scale * sum_{s <= t} (Q[b, t, h, :] . K[b, s, h, :]) V[b, s, h, :]
# A block walks the sequence of one (batch, head, block_V columns of V) chunk by chunk, keeping
# the running state S = sum over earlier chunks of K_s^T V_s (dim_k x block_V, fp32) in
# registers: each chunk's output is Q S (the past) plus the causal Q K^T V within the chunk, and
# then S += K^T V. The masked scores reach the second gemm through shared memory (P_shared).
# The built-in `linear_attention` example is the same kernel.
# tessel: reference=linear_attention
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[3])
def linear_attention(batch=1, heads=2, seq_len=256, dim_k=64, dim_v=64, chunk_size=64,
                     block_V=64, num_stages=2, threads=128):
    dtype = "float16"
    accum_dtype = "float32"
    scale = dim_k**-0.5
    nchunks = T.ceildiv(seq_len, chunk_size)

    @T.prim_func
    def main(
            Q: T.Tensor((batch, seq_len, heads, dim_k), dtype),
            K: T.Tensor((batch, seq_len, heads, dim_k), dtype),
            V: T.Tensor((batch, seq_len, heads, dim_v), dtype),
            O: T.Tensor((batch, seq_len, heads, dim_v), dtype),
    ):
        with T.Kernel(T.ceildiv(dim_v, block_V), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared((chunk_size, dim_k), dtype)
            K_shared = T.alloc_shared((chunk_size, dim_k), dtype)
            V_shared = T.alloc_shared((chunk_size, block_V), dtype)
            S_shared = T.alloc_shared((dim_k, block_V), dtype)
            P_shared = T.alloc_shared((chunk_size, chunk_size), dtype)
            scores = T.alloc_fragment((chunk_size, chunk_size), accum_dtype)
            S = T.alloc_fragment((dim_k, block_V), accum_dtype)
            acc_o = T.alloc_fragment((chunk_size, block_V), accum_dtype)

            T.clear(S)
            for c in T.Pipelined(nchunks, num_stages=num_stages):
                T.copy(Q[bz, c * chunk_size:(c + 1) * chunk_size, by, 0:dim_k], Q_shared)
                T.copy(K[bz, c * chunk_size:(c + 1) * chunk_size, by, 0:dim_k], K_shared)
                T.copy(V[bz, c * chunk_size:(c + 1) * chunk_size, by,
                         bx * block_V:(bx + 1) * block_V], V_shared)
                # Within the chunk: causal scores.
                T.clear(scores)
                T.gemm(Q_shared, K_shared, scores, transpose_B=True)
                for i, j in T.Parallel(chunk_size, chunk_size):
                    scores[i, j] = T.if_then_else(i >= j, scores[i, j], 0)
                T.copy(scores, P_shared)
                # The past through the state, then this chunk's own positions.
                T.copy(S, S_shared)
                T.clear(acc_o)
                T.gemm(Q_shared, S_shared, acc_o)
                T.gemm(P_shared, V_shared, acc_o)
                for i, j in T.Parallel(chunk_size, block_V):
                    acc_o[i, j] *= scale
                T.copy(acc_o, O[bz, c * chunk_size:(c + 1) * chunk_size, by,
                                bx * block_V:(bx + 1) * block_V])
                # The state after this chunk.
                T.gemm(K_shared, V_shared, S, transpose_A=True)

    return main
