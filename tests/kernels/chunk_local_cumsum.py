# Chunk-local cumulative sums of gates, as linear-attention kernels compute them: each block
# takes one chunk of `chunk` tokens of one sequence and scans it along the tokens, forward into
# O (through a fragment, which TileLang and Tessel scan in a shared tile) and in reverse into R
# (in shared memory), plus the running maximum into X with Tessel's T.cummax.
# tests/test_parser_constructs.cpp checks the values at both levels.
import torch
import tilelang
import tilelang.language as T


def ref_program(g, chunk):
    b, s, h = g.shape
    return g.view(b, s // chunk, chunk, h).cumsum(2).view(b, s, h)


@tilelang.jit(out_idx=[1, 2, 3], pass_configs={tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True})
def chunk_local_cumsum(B=2, S=64, H=4, chunk=16, dtype="float32"):
    assert S % chunk == 0, "sequences are whole chunks"

    @T.prim_func
    def kernel(G: T.Tensor((B, S, H), dtype), O: T.Tensor((B, S, H), dtype),
               R: T.Tensor((B, S, H), dtype), X: T.Tensor((B, S, H), dtype)):
        with T.Kernel(S // chunk, B, threads=32) as (bs, bb):
            G_fragment = T.alloc_fragment((chunk, H), dtype)
            G_shared = T.alloc_shared((chunk, H), dtype)
            R_shared = T.alloc_shared((chunk, H), dtype)
            T.copy(G[bb, bs * chunk:(bs + 1) * chunk, 0:H], G_fragment)
            T.copy(G_fragment, G_shared)
            T.cumsum(src=G_fragment, dim=0)
            T.copy(G_fragment, O[bb, bs * chunk:(bs + 1) * chunk, 0:H])
            T.cumsum(G_shared, R_shared, dim=-2, reverse=True)
            T.copy(R_shared, R[bb, bs * chunk:(bs + 1) * chunk, 0:H])
            T.cummax(G_shared, dim=0)
            T.copy(G_shared, X[bb, bs * chunk:(bs + 1) * chunk, 0:H])

    return kernel


if __name__ == "__main__":
    g = torch.randn(2, 64, 4, device="cuda")
    o, r, x = chunk_local_cumsum()(g)
    torch.testing.assert_close(o, ref_program(g, 16))
