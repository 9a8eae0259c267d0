# Y = softmax(X) along rows, one block per block_M rows: the built-in `softmax` example as a
# kernel file. exp(x) is computed as exp2(x * log2(e)).
# tessel: reference=softmax
import tilelang.language as T


def softmax(M=256, N=128, block_M=32, threads=128, dtype="float32"):
    log2e = 1.4426950408889634

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            X_local = T.alloc_fragment((block_M, N), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")

            T.copy(X[bx * block_M, 0], X_local)
            T.reduce_max(X_local, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                X_local[i, j] = T.exp2((X_local[i, j] - row_max[i]) * log2e)
            T.reduce_sum(X_local, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                X_local[i, j] = X_local[i, j] / row_sum[i]
            T.copy(X_local, Y[bx * block_M, 0])

    return main
