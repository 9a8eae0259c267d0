# An index that divides by a difference that is always zero: i // (j - j). Every thread divides by
# zero; verify must fail it rather than prove the load in bounds.
import tilelang.language as T


@T.prim_func
def index_divides_by_zero(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=64) as bx:
        for i, j in T.Parallel(64, 64):
            B[i, j] = A[i // (j - j), j]
