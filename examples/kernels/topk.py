# Top-k along the rows of a (M, N) logits matrix, the way TileLang's top-k example does it: k
# rounds of "row maximum, the first column holding it, mask that column" on a fragment tile.
#   tl_topk       prim_func style: the k largest values of each row, largest first, and their
#                 column indices (ties: the smaller column first);
#   topk_gating   eager @tilelang.jit style, an MoE router: the same selection, then a softmax over
#                 the k selected logits gives the gates.
# tests/test_kernel_families.cpp checks both against a plain C++ sort.
import argparse

import torch
import tilelang
import tilelang.language as T


def ref_program(logits, topk):
    values, indices = torch.topk(logits, topk, dim=1)
    return values, indices.int()


@tilelang.jit(out_idx=[1, 2])
def tl_topk(M, N, topk, blk_m, threads=128):
    dtype = "float32"
    assert topk <= N, "cannot select more columns than a row has"

    @T.prim_func
    def topk_kernel(
            logits: T.Tensor([M, N], dtype),
            topk_gates: T.Tensor([M, topk], dtype),
            topk_indices: T.Tensor([M, topk], "int32"),
    ):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            logits_frag = T.alloc_fragment([blk_m, N], dtype=dtype)
            max_val = T.alloc_fragment([blk_m], dtype=dtype)
            expand_max_idx = T.alloc_fragment([blk_m, N], "int32")
            max_idx = T.alloc_fragment([blk_m], "int32")

            T.copy(logits[bx * blk_m, 0], logits_frag)
            for k in T.serial(topk):
                T.reduce_max(logits_frag, max_val, dim=1, clear=True)
                for i, j in T.Parallel(blk_m, N):
                    expand_max_idx[i, j] = T.if_then_else(max_val[i] == logits_frag[i, j], j, N)
                T.reduce_min(expand_max_idx, max_idx, dim=1, clear=True)
                for i, j in T.Parallel(blk_m, N):
                    logits_frag[i, j] = T.if_then_else(j == max_idx[i], -T.infinity(dtype),
                                                       logits_frag[i, j])
                for i in T.Parallel(blk_m):
                    topk_gates[bx * blk_m + i, k] = max_val[i]
                    topk_indices[bx * blk_m + i, k] = max_idx[i]

    return topk_kernel


@tilelang.jit(out_idx=[-2, -1])
def topk_gating(logits, topk: int = 4, blk_m: int = 16, threads: int = 128, dtype=T.float32):
    M, N = T.const("M, N")
    logits: T.Tensor((M, N), dtype)
    gates = T.empty((M, topk), dtype)
    indices = T.empty((M, topk), T.int32)
    log2e = 1.44269504
    with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
        row = T.alloc_fragment((blk_m, N), dtype)
        best = T.alloc_fragment((blk_m,), dtype)
        where = T.alloc_fragment((blk_m, N), T.int32)
        first = T.alloc_fragment((blk_m,), T.int32)
        picked_shared = T.alloc_shared((blk_m, topk), dtype)
        picked_idx = T.alloc_shared((blk_m, topk), T.int32)
        picked = T.alloc_fragment((blk_m, topk), dtype)
        top = T.alloc_fragment((blk_m,), dtype)
        total = T.alloc_fragment((blk_m,), dtype)
        T.copy(logits[bx * blk_m, 0], row)
        for k in T.Serial(topk):
            T.reduce_max(row, best, dim=1)
            for i, j in T.Parallel(blk_m, N):
                where[i, j] = T.if_then_else(row[i, j] == best[i], j, N)
            T.reduce_min(where, first, dim=1)
            for i, j in T.Parallel(blk_m, N):
                if j == first[i]:
                    row[i, j] = -T.infinity(dtype)
            for i in T.Parallel(blk_m):
                picked_shared[i, k] = best[i]
                picked_idx[i, k] = first[i]
        # softmax over the k picked logits
        T.copy(picked_shared, picked)
        T.reduce_max(picked, top, dim=1)
        for i, k in T.Parallel(blk_m, topk):
            picked[i, k] = T.exp2((picked[i, k] - top[i]) * log2e)
        T.reduce_sum(picked, total, dim=1)
        for i, k in T.Parallel(blk_m, topk):
            picked[i, k] = picked[i, k] / total[i]
        T.copy(picked, gates[bx * blk_m, 0])
        T.copy(picked_idx, indices[bx * blk_m, 0])
    return gates, indices


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--M", type=int, default=320, help="num_tokens")
    parser.add_argument("--N", type=int, default=128, help="num_experts")
    parser.add_argument("--topk", type=int, default=6, help="topk")
    parser.add_argument("--blk_m", type=int, default=64, help="rows per block")
    args = parser.parse_args()
    logits = torch.rand((args.M, args.N), device="cuda", dtype=torch.float32)
    kernel = tl_topk(M=args.M, N=args.N, topk=args.topk, blk_m=args.blk_m)
    gates, indices = kernel(logits)
    ref_gates, ref_indices = ref_program(logits, args.topk)
    torch.testing.assert_close(gates, ref_gates)
    torch.testing.assert_close(indices, ref_indices)
    print("All checks pass.")


if __name__ == "__main__":
    main()
