# Y = X / sqrt(mean(X * X, row) + eps) * W: RMSNorm over the rows of X, one block per block_M rows,
# fp16 in and out with fp32 statistics. No built-in reference checks it: test_rms_norm.py (pytest)
# and `tessel run ... --expect` check it against NumPy.
import tilelang
import tilelang.language as T


@tilelang.jit
def rms_norm(M=256, N=256, block_M=16, threads=128, eps=1e-6, dtype="float16"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            X_shared = T.alloc_shared((block_M, N), dtype)
            X_local = T.alloc_fragment((block_M, N), "float32")
            sum_sq = T.alloc_fragment((block_M,), "float32")

            T.copy(X[bx * block_M, 0], X_shared)
            T.copy(X_shared, X_local)
            for i, j in T.Parallel(block_M, N):
                X_local[i, j] = X_local[i, j] * X_local[i, j]
            T.reduce_sum(X_local, sum_sq, dim=1)
            for i in T.Parallel(block_M):
                sum_sq[i] = T.rsqrt(sum_sq[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                Y[bx * block_M + i, j] = X_shared[i, j] * sum_sq[i] * W[j]

    return main
