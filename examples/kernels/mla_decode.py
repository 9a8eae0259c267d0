# DeepSeek MLA decode in TileLang syntax: the built-in `mla_decode` (one launch). Each block takes
# block_H query heads of one sequence and streams the shared latent KV (and its RoPE part K_pe)
# through shared memory with an online softmax; the latent KV is also the value. Host code around
# the kernel (the torch reference, main) is skipped by Tessel.
# tessel: reference=mla_decode
import torch
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def flashattn(batch=2, heads=32, seqlen_kv=256, dim=64, pe_dim=32, block_H=16, block_N=32,
              threads=128):
    scale = (1.0 / (dim + pe_dim)) ** 0.5 * 1.44269504  # log2(e)
    dtype = "float16"
    accum_dtype = "float32"
    kv_head_num = 1
    kv_group_num = heads // kv_head_num
    assert kv_head_num == 1, "MLA has one latent KV head"
    assert heads % block_H == 0, "heads must be a multiple of block_H"
    assert seqlen_kv % block_N == 0, "seqlen_kv must be a multiple of block_N"

    @T.prim_func
    def main(
            Q: T.Tensor([batch, heads, dim], dtype),
            Q_pe: T.Tensor([batch, heads, pe_dim], dtype),
            KV: T.Tensor([batch, seqlen_kv, kv_head_num, dim], dtype),
            K_pe: T.Tensor([batch, seqlen_kv, kv_head_num, pe_dim], dtype),
            Output: T.Tensor([batch, heads, dim], dtype),
    ):
        with T.Kernel(batch, heads // block_H, threads=threads) as (bx, by):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            Q_pe_shared = T.alloc_shared([block_H, pe_dim], dtype)
            KV_shared = T.alloc_shared([block_N, dim], dtype)
            K_pe_shared = T.alloc_shared([block_N, pe_dim], dtype)
            S_shared = T.alloc_shared([block_H, block_N], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_H], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
            scores_scale = T.alloc_fragment([block_H], accum_dtype)
            scores_sum = T.alloc_fragment([block_H], accum_dtype)
            logsum = T.alloc_fragment([block_H], accum_dtype)
            cur_kv_head = by // (kv_group_num // block_H)

            T.copy(Q[bx, by * block_H:(by + 1) * block_H, :], Q_shared)
            T.copy(Q_pe[bx, by * block_H:(by + 1) * block_H, :], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = T.ceildiv(seqlen_kv, block_N)
            for k in T.Pipelined(loop_range, num_stages=2):
                T.copy(KV[bx, k * block_N:(k + 1) * block_N, cur_kv_head, :], KV_shared)
                T.copy(K_pe[bx, k * block_N:(k + 1) * block_N, cur_kv_head, :], K_pe_shared)
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullCol, clear_accum=True)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullCol)
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
                T.gemm(S_shared, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bx, by * block_H:(by + 1) * block_H, :])

    return main


def ref_program(q, q_pe, kv, k_pe):
    dim = q.shape[-1]
    pe_dim = q_pe.shape[-1]
    kv, k_pe = kv[:, :, 0, :], k_pe[:, :, 0, :]
    scores = (torch.einsum("bhd,bsd->bhs", q, kv) +
              torch.einsum("bhd,bsd->bhs", q_pe, k_pe)) / (dim + pe_dim) ** 0.5
    return torch.einsum("bhs,bsd->bhd", scores.softmax(dim=-1), kv)


def main():
    kernel = flashattn()
    profiler = kernel.get_profiler()
    profiler.assert_allclose(ref_program, rtol=0.01, atol=0.01)
    print("latency:", profiler.do_bench())


if __name__ == "__main__":
    main()
