# Scales the first `rows` rows of X by `scale` into Y and zeroes the others: a kernel with scalar
# parameters, as TileLang files pass them (`scale: T.float32`, `rows: T.int32`). Tessel takes
# their values from -D: a float scalar must be given, an integer one stays symbolic when not
# (print, verify and emit work on it; a run asks for it).
# tests/test_parser_constructs.cpp checks the values at both levels.
import tilelang
import tilelang.language as T


def scale_rows(M=64, N=32, block_M=16, dtype="float32"):

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), scale: T.float32,
             rows: T.int32):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            for i, j in T.Parallel(block_M, N):
                if bx * block_M + i < rows:
                    Y[bx * block_M + i, j] = X[bx * block_M + i, j] * scale
                else:
                    Y[bx * block_M + i, j] = 0

    return main


if __name__ == "__main__":
    kernel = tilelang.compile(scale_rows(), out_idx=[1])
