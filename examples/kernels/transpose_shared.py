# B = A^T through 32 x 32 tiles in shared memory, 256 threads each moving 4 elements; the tile is
# padded to 33 columns so that reading it by columns is free of bank conflicts.
# tessel: reference=transpose_shared
import tilelang.language as T


def transpose_shared(M=64, N=96):

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((N, M), "float32")):
        with T.Kernel(N // 32, M // 32, threads=256) as (bx, by):
            tx = T.get_thread_binding()
            tile = T.alloc_shared((32, 33), "float32")
            for j in T.serial(4):
                tile[tx // 32 + j * 8, tx % 32] = A[by * 32 + tx // 32 + j * 8, bx * 32 + tx % 32]
            T.sync_threads()
            for j in T.serial(4):
                B[bx * 32 + tx // 32 + j * 8, by * 32 + tx % 32] = tile[tx % 32, tx // 32 + j * 8]

    return main
