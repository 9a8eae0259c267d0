# DeepSeek MLA decode, split-KV form, in TileLang syntax: the built-in `mla_decode_split`. One
# kernel function with two T.Kernel launches that run in order: the first gives each of num_split
# blocks per (sequence, head block) a slice of the keys and writes its normalised partial output
# and its log2-sum-exp into T.alloc_global scratch; the second combines the partials. Host code
# around the kernel is skipped by Tessel.
# tessel: reference=mla_decode_split
import torch
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def flashattn_split(batch=2, heads=32, seqlen_kv=256, dim=64, pe_dim=32, block_H=16, block_N=32,
                    num_split=4, threads=128):
    scale = (1.0 / (dim + pe_dim)) ** 0.5 * 1.44269504  # log2(e)
    dtype = "float16"
    accum_dtype = "float32"
    kv_head_num = 1
    kv_group_num = heads // kv_head_num
    kv_per_split = seqlen_kv // num_split
    assert kv_head_num == 1, "MLA has one latent KV head"
    assert heads % block_H == 0, "heads must be a multiple of block_H"
    assert kv_per_split % block_N == 0, "seqlen_kv must be a multiple of num_split * block_N"

    @T.prim_func
    def main_split(
            Q: T.Tensor([batch, heads, dim], dtype),
            Q_pe: T.Tensor([batch, heads, pe_dim], dtype),
            KV: T.Tensor([batch, seqlen_kv, kv_head_num, dim], dtype),
            K_pe: T.Tensor([batch, seqlen_kv, kv_head_num, pe_dim], dtype),
            Output: T.Tensor([batch, heads, dim], dtype),
    ):
        glse = T.alloc_global([batch, num_split, heads], accum_dtype)
        Output_partial = T.alloc_global([batch, num_split, heads, dim], accum_dtype)

        # Each split: attention over its kv_per_split keys, normalised, and its log-sum-exp.
        with T.Kernel(batch, heads // block_H, num_split, threads=threads) as (bx, by, bz):
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

            for k in T.Pipelined(kv_per_split // block_N, num_stages=2):
                kv_start = bz * kv_per_split + k * block_N
                T.copy(KV[bx, kv_start:kv_start + block_N, cur_kv_head, :], KV_shared)
                T.copy(K_pe[bx, kv_start:kv_start + block_N, cur_kv_head, :], K_pe_shared)
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
            for i in T.Parallel(block_H):
                glse[bx, bz, by * block_H + i] = T.log2(logsum[i]) + scores_max[i] * scale
            T.copy(acc_o, Output_partial[bx, bz, by * block_H:(by + 1) * block_H, :])

        # Combine: weight each split by 2^(lse_split - lse) and sum the partial outputs.
        with T.Kernel(heads // block_H, batch, threads=threads) as (hx, b):
            lse = T.alloc_fragment([block_H, num_split], accum_dtype)
            lse_max = T.alloc_fragment([block_H], accum_dtype)
            lse_sum = T.alloc_fragment([block_H], accum_dtype)
            weight = T.alloc_shared([block_H, num_split], accum_dtype)
            o_accum = T.alloc_fragment([block_H, dim], accum_dtype)

            for i, k in T.Parallel(block_H, num_split):
                lse[i, k] = glse[b, k, hx * block_H + i]
            T.reduce_max(lse, lse_max, dim=1)
            for i, k in T.Parallel(block_H, num_split):
                lse[i, k] = T.exp2(lse[i, k] - lse_max[i])
            T.reduce_sum(lse, lse_sum, dim=1)
            for i, k in T.Parallel(block_H, num_split):
                lse[i, k] = lse[i, k] / lse_sum[i]
            T.copy(lse, weight)
            T.clear(o_accum)
            for k in T.serial(num_split):
                for i, j in T.Parallel(block_H, dim):
                    o_accum[i, j] += Output_partial[b, k, hx * block_H + i, j] * weight[i, k]
            T.copy(o_accum, Output[b, hx * block_H:(hx + 1) * block_H, :])

    return main_split


def ref_program(q, q_pe, kv, k_pe):
    dim = q.shape[-1]
    pe_dim = q_pe.shape[-1]
    kv, k_pe = kv[:, :, 0, :], k_pe[:, :, 0, :]
    scores = (torch.einsum("bhd,bsd->bhs", q, kv) +
              torch.einsum("bhd,bsd->bhs", q_pe, k_pe)) / (dim + pe_dim) ** 0.5
    return torch.einsum("bhs,bsd->bhd", scores.softmax(dim=-1), kv)


if __name__ == "__main__":
    kernel = flashattn_split()
    kernel.get_profiler().assert_allclose(ref_program, rtol=0.01, atol=0.01)
