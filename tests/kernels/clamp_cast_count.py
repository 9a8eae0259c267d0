# Clamps each row of A to [lo, hi], stores it as float16 and counts the elements that were
# clipped, written the way current TileLang files are: the eager @tilelang.jit style with an
# autotune decorator and host code around it, T.clamp, `.astype`, the T.Serial alias,
# T.copy(..., coalesced_width=), T.Parallel(..., loop_layout=), an atomic with memory_order= and
# T.no_set_max_nreg(). tests/test_parser_constructs.cpp checks its values at both levels.
import argparse

import torch
import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune


def ref_program(A, lo, hi):
    return A.clamp(lo, hi).half()


def get_configs():
    return [{"block_M": m} for m in (4, 8, 16)]


@autotune(configs=get_configs(), warmup=10, rep=10)
@tilelang.jit(out_idx=[1])
def clamp_cast_count(A, B, Clipped, block_M: int = 4, lo: float = -2.0, hi: float = 3.0,
                     dtype=T.float32):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), dtype)
    B: T.Tensor((M, N), T.float16)
    Clipped: T.Tensor((1,), T.int32)
    assert N % 4 == 0, "rows are copied in vectors of 4"
    with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
        T.no_set_max_nreg()
        A_shared = T.alloc_shared((block_M, N), dtype)
        T.copy(A[bx * block_M, 0], A_shared, coalesced_width=4)
        for i, j in T.Parallel(block_M, N, loop_layout=T.Fragment(
                [block_M, N], forward_thread_fn=lambda i, j: (i * N + j) % 64)):
            x = A_shared[i, j]
            if bx * block_M + i < M:
                B[bx * block_M + i, j] = T.clamp(x, lo, hi).astype(T.float16)
                if x < lo or x > hi:
                    T.atomic_add(Clipped[0], 1, memory_order="relaxed")
        # Twice through T.Serial: the same clamp again changes nothing.
        for _ in T.Serial(2):
            for i, j in T.Parallel(block_M, N):
                A_shared[i, j] = T.clamp(A_shared[i, j], lo, hi)
        T.copy(A_shared, A[bx * block_M, 0])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=64)
    args = parser.parse_args()
    a = torch.randn(args.m, 64, device="cuda")
    kernel = clamp_cast_count(args.m, 64)
    torch.testing.assert_close(kernel(a), ref_program(a, -2.0, 3.0))
