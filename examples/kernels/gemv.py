# GEMV: C[n] = sum_k A[k] * B[n, k] for one fp16 row vector A (K,) and a weight matrix B (N, K),
# accumulated in fp32, written the three ways TileLang's GEMV examples write it:
#   naive_gemv     one thread per output element, each summing its whole row (prim_func style);
#   splitk_gemv    threads=(reduce_threads, BLOCK_N): each thread sums a K slice, the partial sums
#                  meet in shared memory and T.reduce_sum adds them across the threads;
#   gemv_parallel  the eager @tilelang.jit style: a T.Parallel loop accumulates a (BLOCK_N, BLOCK_K)
#                  fragment and T.reduce_sum folds it.
# tests/test_kernel_families.cpp runs each against a plain C++ reference.
import argparse
import itertools

import torch
import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune


def ref_program(A, B):
    return (A.float() @ B.float().T).half()


def get_configs():
    iter_params = dict(BLOCK_N=[2, 4, 8], reduce_threads=[8, 16, 32])
    return [dict(zip(iter_params, values)) for values in itertools.product(*iter_params.values())]


@tilelang.jit(out_idx=[-1])
def naive_gemv(N: int = 256, K: int = 128, BLOCK_N: int = 64, dtype: str = "float16",
               accum_dtype: str = "float"):
    assert N % BLOCK_N == 0, "N must be a multiple of BLOCK_N"

    @T.prim_func
    def main(A: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=BLOCK_N) as bn:
            tn = T.get_thread_binding(0)
            acc = T.alloc_local((1,), accum_dtype)
            T.clear(acc)
            for k in T.serial(K):
                acc[0] += A[k].astype(accum_dtype) * B[bn * BLOCK_N + tn, k].astype(accum_dtype)
            C[bn * BLOCK_N + tn] = acc[0]

    return main


@autotune(configs=get_configs(), warmup=3, rep=20)
@tilelang.jit(out_idx=[-1])
def splitk_gemv(N: int = 256, K: int = 128, BLOCK_N: int = 4, reduce_threads: int = 32,
                dtype: str = "float16", accum_dtype: str = "float"):
    assert K % reduce_threads == 0, "K must split evenly across reduce_threads"
    TILE_K = K // reduce_threads

    @T.prim_func
    def main(A: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(reduce_threads, BLOCK_N)) as bn:
            tk = T.get_thread_binding(0)
            tn = T.get_thread_binding(1)
            partial = T.alloc_shared((BLOCK_N, reduce_threads), accum_dtype)
            acc = T.alloc_var(accum_dtype, init=0.0)
            for k in T.serial(TILE_K):
                acc += (A[tk * TILE_K + k].astype(accum_dtype) *
                        B[bn * BLOCK_N + tn, tk * TILE_K + k].astype(accum_dtype))
            partial[tn, tk] = acc
            partial_frag = T.alloc_fragment((BLOCK_N, reduce_threads), accum_dtype)
            C_frag = T.alloc_fragment((BLOCK_N,), accum_dtype)
            T.copy(partial, partial_frag)
            T.reduce_sum(partial_frag, C_frag, dim=1)
            T.copy(C_frag, C[bn * BLOCK_N])

    return main


@tilelang.jit(out_idx=[-1])
def gemv_parallel(A, B, BLOCK_N: int = 8, BLOCK_K: int = 64, threads: int = 128,
                  dtype=T.float16, accum_dtype=T.float32):
    N, K = T.const("N, K")
    A: T.Tensor((K,), dtype)
    B: T.Tensor((N, K), dtype)
    C = T.empty((N,), dtype)
    assert BLOCK_N * BLOCK_K % threads == 0, "each thread must own whole fragment elements"
    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=threads) as bn:
        A_shared = T.alloc_shared((BLOCK_K,), dtype)
        B_shared = T.alloc_shared((BLOCK_N, BLOCK_K), dtype)
        acc = T.alloc_fragment((BLOCK_N, BLOCK_K), accum_dtype)
        C_frag = T.alloc_fragment((BLOCK_N,), accum_dtype)
        T.clear(acc)
        for ko in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=2):
            T.copy(A[ko * BLOCK_K], A_shared)
            T.copy(B[bn * BLOCK_N, ko * BLOCK_K], B_shared)
            for i, j in T.Parallel(BLOCK_N, BLOCK_K):
                acc[i, j] += A_shared[j].astype(accum_dtype) * B_shared[i, j].astype(accum_dtype)
        T.reduce_sum(acc, C_frag, dim=1)
        T.copy(C_frag, C[bn * BLOCK_N])
    return C


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1024, help="N")
    parser.add_argument("--k", type=int, default=1024, help="K")
    args = parser.parse_args()
    a = torch.randn(args.k, dtype=torch.float16, device="cuda")
    b = torch.randn(args.n, args.k, dtype=torch.float16, device="cuda")
    for kernel in (naive_gemv(args.n, args.k), splitk_gemv(args.n, args.k)):
        torch.testing.assert_close(kernel(a, b), ref_program(a, b), atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(gemv_parallel(a, b), ref_program(a, b), atol=1e-2, rtol=1e-2)
    print("All checks pass.")


if __name__ == "__main__":
    main()
