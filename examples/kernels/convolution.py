# 2-D convolution, NHWC input, (KH, KW, C, F) weights, as an implicit GEMM: the (N*OH*OW) x
# (KH*KW*C) patch matrix is never stored; each block gathers its (block_M, block_K) tile of it into
# shared memory, padding, stride and dilation handled by the bounds test, and T.gemm multiplies it
# with the weight tile. Two kernels, as TileLang's convolution examples write them:
#   convolution      the gather written out in a T.Parallel loop with T.if_then_else, the weights
#                    and the output copied through flat views (T.Tensor(shape, dtype, A.data));
#   convolution_tma  the gather by T.c2d_im2col (TileLang's Hopper path), everything else indexed
#                    in four dimensions.
# tests/test_kernel_families.cpp checks both against a direct 7-loop convolution in C++.
import argparse

import torch
import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune
from tilelang.layout import make_swizzled_layout


def ref_program(stride, padding, dilation):

    def main(A, B):
        A = A.permute(0, 3, 1, 2)  # N, H, W, C -> N, C, H, W
        B = B.permute(3, 2, 0, 1)  # H, W, C, F -> F, C, H, W
        C = torch.conv2d(A, B, stride=stride, padding=padding, dilation=dilation)
        return C.permute(0, 2, 3, 1)  # N, C, H, W -> N, H, W, C

    return main


def get_configs():
    return [
        dict(block_M=bm, block_N=bn, block_K=bk, num_stages=s, threads=t)
        for bm in [64, 128] for bn in [64, 128] for bk in [32, 64] for s in [2, 3] for t in [128, 256]
    ]


@autotune(configs=get_configs(), warmup=10, rep=10)
@tilelang.jit(out_idx=[2])
def convolution(N, C, H, W, F, K, S, D, P, block_M=64, block_N=64, block_K=32, num_stages=2,
                threads=128, dtype="float16", accum_dtype="float"):
    KH, KW = K, K
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    assert OH > 0 and OW > 0, "the kernel does not fit the padded image"

    @T.prim_func
    def main(
            data: T.Tensor((N, H, W, C), dtype),
            kernel: T.Tensor((KH, KW, C, F), dtype),
            out: T.Tensor((N, OH, OW, F), dtype),
    ):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M),
                      threads=threads) as (bx, by):
            data_shared = T.alloc_shared((block_M, block_K), dtype)
            kernel_shared = T.alloc_shared((block_K, block_N), dtype)
            out_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)

            T.annotate_layout({data_shared: make_swizzled_layout(data_shared)})
            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=num_stages):
                for i, j in T.Parallel(block_M, block_K):
                    k = k_iter * block_K + j
                    m = by * block_M + i
                    access_h = m % (OH * OW) // OW * S + k // (KW * C) * D - P
                    access_w = m % OW * S + k // C % KW * D - P
                    in_bound = ((access_h >= 0) and (access_w >= 0) and (access_h < H) and
                                (access_w < W) and (m < N * OH * OW) and (k < KH * KW * C))
                    data_shared[i, j] = T.if_then_else(
                        in_bound, data[m // (OH * OW), access_h, access_w, k % C], 0)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)

            T.copy(out_local, out_flat[by * block_M, bx * block_N])

    return main


@tilelang.jit(out_idx=[2])
def convolution_tma(N, C, H, W, F, K, S, D, P, block_M=64, block_N=64, block_K=32, num_stages=2,
                    threads=128, dtype="float16", accum_dtype="float"):
    KH, KW = K, K
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    assert C % block_K == 0, "T.c2d_im2col takes whole channel slices"

    @T.prim_func
    def main(
            data: T.Tensor((N, H, W, C), dtype),
            kernel: T.Tensor((KH, KW, C, F), dtype),
            out: T.Tensor((N, OH, OW, F), dtype),
    ):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M),
                      threads=threads) as (bx, by):
            data_shared = T.alloc_shared((block_M, block_K), dtype)
            kernel_shared = T.alloc_shared((block_K, block_N), dtype)
            out_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=num_stages):
                T.c2d_im2col(data, data_shared, by, k_iter, KH, S, D, P)
                for j, n in T.Parallel(block_K, block_N):
                    k = k_iter * block_K + j
                    kernel_shared[j, n] = kernel[k // (KW * C), k // C % KW, k % C, bx * block_N + n]
                T.gemm(data_shared, kernel_shared, out_local)

            for i, n in T.Parallel(block_M, block_N):
                m = by * block_M + i
                if m < N * OH * OW:
                    out[m // (OH * OW), m % (OH * OW) // OW, m % OW, bx * block_N + n] = out_local[i, n]

    return main


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=128, help="n")
    parser.add_argument("--c", type=int, default=128, help="c")
    parser.add_argument("--h", type=int, default=64, help="h")
    parser.add_argument("--w", type=int, default=64, help="w")
    parser.add_argument("--f", type=int, default=128, help="f")
    parser.add_argument("--k", type=int, default=3, help="k")
    parser.add_argument("--s", type=int, default=1, help="s")
    parser.add_argument("--d", type=int, default=1, help="d")
    parser.add_argument("--p", type=int, default=1, help="p")
    args = parser.parse_args(argv)
    N, C, H, W, F, K, S, D, P = args.n, args.c, args.h, args.w, args.f, args.k, args.s, args.d, args.p
    a = torch.randn(N, H, W, C).cuda().half()
    b = torch.randn(K, K, C, F).cuda().half()
    kernel = convolution(N, C, H, W, F, K, S, D, P)
    out_c = kernel(a, b)
    ref_c = ref_program(S, P, D)(a, b)
    torch.testing.assert_close(out_c, ref_c, rtol=1e-2, atol=1e-2)
    print("All checks passed.")


if __name__ == "__main__":
    main()
