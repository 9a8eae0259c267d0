# Mamba-2 chunk_state in TileLang syntax: the state each chunk of the sequence leaves behind,
#   states[b, c, h, p, n] = sum_l x[b, cQ+l, h, p] * exp(dA_cumsum[b, h, c, Q-1] - dA_cumsum[b, h, c, l])
#                                  * dt[b, h, c, l] * B[b, cQ+l, g, n]        (Q = chunk_size,
# g = h // (nheads // ngroups)), as one gemm per block: x^T (headdim x positions) times B scaled row
# by row with its decay. The built-in `chunk_state` example is the same kernel; `tessel run
# examples/kernels/chunk_state.py --level thread` runs it thread by thread.
# tessel: reference=chunk_state
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[4])
def chunk_state(batch=1, nheads=4, ngroups=1, seq_len=256, chunk_size=64, headdim=64, dstate=64,
                block_M=64, block_N=64, block_K=64, num_stages=2, threads=128):
    dtype = "float16"
    accum_dtype = "float32"
    nchunks = T.ceildiv(seq_len, chunk_size)
    heads_per_group = nheads // ngroups
    log2e = 1.44269504
    assert chunk_size % block_K == 0, "a k-step must not cross into the next chunk"

    @T.prim_func
    def main(
            B: T.Tensor((batch, seq_len, ngroups, dstate), dtype),
            x: T.Tensor((batch, seq_len, nheads, headdim), dtype),
            dt: T.Tensor((batch, nheads, nchunks, chunk_size), dtype),
            dA_cumsum: T.Tensor((batch, nheads, nchunks, chunk_size), dtype),
            states: T.Tensor((batch, nchunks, nheads, headdim, dstate), dtype),
    ):
        with T.Kernel(T.ceildiv(headdim, block_M), T.ceildiv(dstate, block_N),
                      batch * nchunks * nheads, threads=threads) as (bx, by, bz):
            x_shared = T.alloc_shared((block_K, block_M), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            dA_shared = T.alloc_shared((block_K,), dtype)
            dt_shared = T.alloc_shared((block_K,), dtype)
            B_local = T.alloc_fragment((block_K, block_N), dtype)
            acc = T.alloc_fragment((block_M, block_N), accum_dtype)
            dA_last = T.alloc_var(accum_dtype)

            b = bz // (nchunks * nheads)
            c = bz // nheads % nchunks
            h = bz % nheads
            start = c * chunk_size

            # The decay loop reads B_shared in the gemm's operand order (4 rows per warp
            # access): swizzled, those rows fall into different banks.
            T.annotate_layout({B_shared: tilelang.layout.make_swizzled_layout(B_shared)})

            dA_last = dA_cumsum[b, h, c, chunk_size - 1]
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(chunk_size, block_K), num_stages=num_stages):
                T.copy(x[b, start + k * block_K:start + (k + 1) * block_K, h,
                         bx * block_M:(bx + 1) * block_M], x_shared)
                T.copy(B[b, start + k * block_K:start + (k + 1) * block_K, h // heads_per_group,
                         by * block_N:(by + 1) * block_N], B_shared)
                T.copy(dA_cumsum[b, h, c, k * block_K:(k + 1) * block_K], dA_shared)
                T.copy(dt[b, h, c, k * block_K:(k + 1) * block_K], dt_shared)
                # Row i of B decays from its position to the end of the chunk.
                for i, j in T.Parallel(block_K, block_N):
                    B_local[i, j] = B_shared[i, j] * T.exp2(
                        (dA_last - dA_shared[i]) * log2e) * dt_shared[i]
                T.gemm(x_shared, B_local, acc, transpose_A=True)
            T.copy(acc, states[b, c, h, bx * block_M:(bx + 1) * block_M,
                               by * block_N:(by + 1) * block_N])

    return main
