# Rows of a float16 tile copied out under an edge guard, with a symbolic row count: the guard
# stops the read from being one vector, so each lane reads 2 bytes per step. A row is 64 bytes =
# 16 banks, so the even rows a warp reads (4 of its 8) start in bank 0: a real 4-way conflict,
# which verify must report with a counterexample a launch can have (block index and M in range).
import tilelang.language as T

M = T.dynamic("M")


@T.prim_func
def copy_rows(X: T.Tensor((M, 31), "float32"), Y: T.Tensor((M, 31), "float16")):
    with T.Kernel(T.ceildiv(M, 16), threads=128) as bx:
        tile = T.alloc_shared((16, 32), "float16")
        for i, j in T.Parallel(16, 32):
            tile[i, j] = T.cast(X[T.min(bx * 16 + i, M - 1), T.min(j, 30)], "float16")
        for i, j in T.Parallel(16, 32):
            if bx * 16 + i < M and j < 31:
                Y[bx * 16 + i, j] = tile[i, j]
