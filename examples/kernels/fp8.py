# FP8: quantising to OCP FP8 with a per-token, per-group scale, and a GEMM on FP8 operands with
# an fp32 accumulator, written as TileLang's cast and fp8 GEMM examples write them.
#   per_token_cast_to_fp8  each (row, 128-column group) gets scale = max|x| / fp8_max and
#                          X_fp8 = saturate(x / scale) rounded to float8_e4m3 (or e5m2);
#   gemm_fp8               C = A @ B^T in fp32 for float8_e4m3 (or e5m2) A and B.
# tests/test_kernel_families.cpp checks the bit patterns and the sums against values derived by hand.
import argparse

import torch
import tilelang
import tilelang.language as T
from tilelang.utils.tensor import torch_assert_close


def ref_per_token_cast(x, group_size=128):
    m, n = x.shape
    x_view = x.view(m, -1, group_size)
    x_amax = x_view.abs().float().amax(dim=2).view(m, -1).clamp(1e-4)
    return (x_view * (448.0 / x_amax.unsqueeze(2))).to(torch.float8_e4m3fn).view(m, n), x_amax / 448.0


@tilelang.jit(out_idx=[1, 2])
def per_token_cast_to_fp8(M, N, blk_m, group_size=128, fp8_dtype="float8_e4m3"):
    dtype = "float"
    fp8_max = 448.0 if fp8_dtype == "float8_e4m3" else 57344.0
    fp8_min = -fp8_max
    assert N % group_size == 0, "N must be a multiple of the group size"

    @T.prim_func
    def per_token_cast(X: T.Tensor((M, N), dtype), X_fp8: T.Tensor((M, N), fp8_dtype),
                       X_amax: T.Tensor((M, T.ceildiv(N, group_size)), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), T.ceildiv(N, group_size), threads=128) as (bx, by):
            row = bx
            row_g_id = by
            y_local = T.alloc_fragment((blk_m, group_size), dtype)
            y_amax_local = T.alloc_fragment((blk_m,), dtype)
            y_s_local = T.alloc_fragment((blk_m,), dtype)
            y_q_local = T.alloc_fragment((blk_m, group_size), dtype)
            y_q_local_fp8 = T.alloc_fragment((blk_m, group_size), fp8_dtype)


            T.copy(X[row * blk_m:(row + 1) * blk_m, row_g_id * group_size:(row_g_id + 1) * group_size],
                   y_local)
            T.reduce_absmax(y_local, y_amax_local, dim=1)
            for i in T.Parallel(blk_m):
                y_amax_local[i] = T.max(y_amax_local[i], 1e-4)
                y_s_local[i] = y_amax_local[i] / fp8_max
            for i, j in T.Parallel(blk_m, group_size):
                y_q_local[i, j] = T.clamp(y_local[i, j] / y_s_local[i], fp8_min, fp8_max)
            T.copy(y_q_local, y_q_local_fp8)
            for i in T.Parallel(blk_m):
                X_amax[row * blk_m + i, row_g_id] = y_s_local[i]
            T.copy(y_q_local_fp8, X_fp8[row * blk_m:(row + 1) * blk_m,
                                        row_g_id * group_size:(row_g_id + 1) * group_size])

    return per_token_cast


@tilelang.jit(out_idx=[-1])
def gemm_fp8(A, B, block_M: int = 64, block_N: int = 64, block_K: int = 64,
             dtype=T.float8_e4m3, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((N, K), dtype)
    C = T.empty((M, N), accum_dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_N, block_K), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[bx * block_N, k * block_K], B_shared)
            T.gemm(A_shared, B_shared, C_local, transpose_B=True)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--M", type=int, default=8192)
    parser.add_argument("--N", type=int, default=8192)
    args = parser.parse_args()
    x = torch.randn(args.M, args.N, device="cuda", dtype=torch.float32)
    x_fp8, x_amax = per_token_cast_to_fp8(args.M, args.N, 8)(x)
    ref_fp8, ref_amax = ref_per_token_cast(x)
    torch_assert_close(x_fp8.float(), ref_fp8.float(), rtol=0.01, atol=0.01)
    torch_assert_close(x_amax, ref_amax, rtol=0.01, atol=0.01)
    a = torch.randn(1024, 1024, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(1024, 1024, device="cuda").to(torch.float8_e4m3fn)
    torch_assert_close(gemm_fp8(a, b), a.float() @ b.float().T, rtol=1e-2, atol=1e-2)
    print("All checks pass.")


if __name__ == "__main__":
    main()
