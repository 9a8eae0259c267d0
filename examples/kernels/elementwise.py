# C = relu(A + B) over a symbolic length N, the tail guarded: the built-in `elementwise` example
# as a kernel file. N is a symbolic dimension (T.dynamic): `-D N=1000` sizes it for a run.
# tessel: reference=elementwise
import tilelang.language as T


def elementwise(block=256, threads=128, dtype="float32"):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = T.max(A[bx * block + i] + B[bx * block + i], 0.0)

    return main
