# A shifted copy that reads one row past the end of A: row i of B takes row i + 1 of A, and the
# last row (i = 63) reads A[64, j], outside the 64 x 64 tensor. verify must fail it.
import tilelang.language as T


@T.prim_func
def read_past_last_row(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=64) as bx:
        for i, j in T.Parallel(64, 64):
            B[i, j] = A[i + 1, j]
