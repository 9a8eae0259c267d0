# What the lowering once made of LayerNorm's row means, `for i in T.Parallel(32): mean_row[i] =
# row_sum[i] / N; Mean[bx * 32 + i] = mean_row[i]` with `mean_row` replicated over the 32 threads
# of a row: the whole loop kept to `if tx == 0` (meant only for the global store), so the other
# replicas of mean_row are never written and the normalisation reads garbage. Thread-level code,
# written out as the miscompile left it (-D fixed=true guards only the store).
import tilelang.language as T


def layernorm_rows_one_replica(M=64, N=128, fixed=False):

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Mean: T.Tensor((M,), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M // 32, threads=128) as bx:
            tx = T.get_thread_binding()
            X_local = T.alloc_local((32,), "float32")
            row_sum = T.alloc_local((8,), "float32")
            mean_row = T.alloc_local((8,), "float32")
            # thread tx holds rows lo * 4 + tx // 32 (lo < 8), columns tx % 32 * 4 .. + 3
            for lo in T.serial(8):
                for v in T.vectorized(4):
                    X_local[lo * 4 + v] = X[bx * 32 + lo * 4 + tx // 32, tx % 32 * 4 + v]
            for r in T.serial(8):
                row_sum[r] = 0.0
            for lo in T.serial(8):
                for v in T.serial(4):
                    row_sum[lo] = row_sum[lo] + X_local[lo * 4 + v]
            for s in T.serial(5):
                for r in T.serial(8):
                    row_sum[r] = row_sum[r] + T.shfl_xor(row_sum[r], 1 << s)
            if fixed:
                for r in T.serial(8):
                    mean_row[r] = row_sum[r] / N
                    if tx % 32 == 0:
                        Mean[bx * 32 + r * 4 + tx // 32] = mean_row[r]
            else:
                if tx == 0:
                    for r in T.serial(8):
                        mean_row[r] = row_sum[r] / N
                        Mean[bx * 32 + r * 4 + tx // 32] = mean_row[r]
            for lo in T.serial(8):
                for v in T.vectorized(4):
                    Y[bx * 32 + lo * 4 + tx // 32, tx % 32 * 4 + v] = X_local[lo * 4 + v] - mean_row[lo]

    return main
