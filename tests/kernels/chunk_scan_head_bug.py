# A chunk_scan with a head-index bug, for the sampled reference's tests: the skip connection
# reads D[h % 2], not D[h], so every output of heads 2 and up is off by (D[h % 2] - D[h]) x.
# Block 0 (head 0) is right: a run that simulates only it matches the tile level, and only the
# reference (full or on a sample: its sampled positions cover every head) finds the bug.
# tessel: reference=chunk_scan
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[7])
def chunk_scan(batch=1, nheads=4, ngroups=1, seq_len=256, chunk_size=64, headdim=64, dstate=64,
               block_M=64, block_N=64, block_K=64, num_stages=2, threads=128):
    dtype = "float16"
    accum_dtype = "float32"
    nchunks = T.ceildiv(seq_len, chunk_size)
    heads_per_group = nheads // ngroups
    log2e = 1.44269504
    assert chunk_size % block_M == 0, "a block's rows must not cross into the next chunk"
    assert chunk_size % block_K == 0, "a k-step must not cross into the next chunk"

    @T.prim_func
    def main(
            cb: T.Tensor((batch, nchunks, ngroups, chunk_size, chunk_size), dtype),
            x: T.Tensor((batch, seq_len, nheads, headdim), dtype),
            dt: T.Tensor((batch, nheads, nchunks, chunk_size), dtype),
            dA_cumsum: T.Tensor((batch, nheads, nchunks, chunk_size), dtype),
            C: T.Tensor((batch, seq_len, ngroups, dstate), dtype),
            prev_states: T.Tensor((batch, nchunks, nheads, headdim, dstate), dtype),
            D: T.Tensor((nheads,), dtype),
            Output: T.Tensor((batch, seq_len, nheads, headdim), dtype),
    ):
        with T.Kernel(T.ceildiv(headdim, block_N), T.ceildiv(chunk_size, block_M),
                      batch * nchunks * nheads, threads=threads) as (bx, by, bz):
            C_shared = T.alloc_shared((block_M, dstate), dtype)
            state_shared = T.alloc_shared((block_N, dstate), dtype)
            cb_shared = T.alloc_shared((block_M, block_K), dtype)
            x_shared = T.alloc_shared((block_K, block_N), dtype)
            x_residual_shared = T.alloc_shared((block_M, block_N), dtype)
            dA_m_shared = T.alloc_shared((block_M,), dtype)
            dA_k_shared = T.alloc_shared((block_K,), dtype)
            dt_shared = T.alloc_shared((block_K,), dtype)
            cb_local = T.alloc_fragment((block_M, block_K), dtype)
            acc = T.alloc_fragment((block_M, block_N), accum_dtype)

            b = bz // (nchunks * nheads)
            c = bz // nheads % nchunks
            h = bz % nheads
            row = c * chunk_size + by * block_M

            # cb_local reads cb_shared in the gemm's operand order and the residual loop reads
            # x_residual_shared in the accumulator's: swizzled, each warp access is conflict-free.
            T.annotate_layout({
                cb_shared: tilelang.layout.make_swizzled_layout(cb_shared),
                x_residual_shared: tilelang.layout.make_swizzled_layout(x_residual_shared),
            })

            # The state the earlier chunks left, decayed to each row: exp(dA[l]) C[l] . state.
            T.copy(dA_cumsum[b, h, c, by * block_M:(by + 1) * block_M], dA_m_shared)
            T.copy(C[b, row:row + block_M, h // heads_per_group, 0:dstate], C_shared)
            T.copy(prev_states[b, c, h, bx * block_N:(bx + 1) * block_N, 0:dstate], state_shared)
            T.clear(acc)
            T.gemm(C_shared, state_shared, acc, transpose_B=True)
            for i, j in T.Parallel(block_M, block_N):
                acc[i, j] *= T.exp2(dA_m_shared[i] * log2e)

            # This chunk's positions s <= l, weighted by exp(dA[l] - dA[s]) dt[s].
            # k-steps past the block's last row contribute nothing (causal).
            for k in T.Pipelined(T.ceildiv((by + 1) * block_M, block_K), num_stages=num_stages):
                T.copy(cb[b, c, h // heads_per_group, by * block_M:(by + 1) * block_M,
                          k * block_K:(k + 1) * block_K], cb_shared)
                T.copy(dA_cumsum[b, h, c, k * block_K:(k + 1) * block_K], dA_k_shared)
                T.copy(dt[b, h, c, k * block_K:(k + 1) * block_K], dt_shared)
                T.copy(x[b, c * chunk_size + k * block_K:c * chunk_size + (k + 1) * block_K, h,
                         bx * block_N:(bx + 1) * block_N], x_shared)
                # cb into registers first (as TileLang's example): one vector load a lane in the
                # gemm operand's order, not masked element loads.
                T.copy(cb_shared, cb_local)
                for i, j in T.Parallel(block_M, block_K):
                    cb_local[i, j] = T.if_then_else(
                        by * block_M + i >= k * block_K + j,
                        cb_local[i, j] * T.exp2(dA_m_shared[i] * log2e - dA_k_shared[j] * log2e) *
                        dt_shared[j], 0)
                T.gemm(cb_local, x_shared, acc)

            # The skip connection, with the bug: D[h % 2] x.
            T.copy(x[b, row:row + block_M, h, bx * block_N:(bx + 1) * block_N], x_residual_shared)
            for i, j in T.Parallel(block_M, block_N):
                acc[i, j] += x_residual_shared[i, j] * D[h % 2]
            T.copy(acc, Output[b, row:row + block_M, h, bx * block_N:(bx + 1) * block_N])

    return main
