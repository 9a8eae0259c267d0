# BUG on purpose, in one block only: every block reverses 128 elements through shared memory,
# but the last block of the grid (an edge block) skips the barrier between its stores and the
# loads of other threads' elements: a race that only a thread-level run of that block shows.
# `tessel run --level thread --blocks edges` finds it; `--blocks first` does not.
import tilelang.language as T


def edge_block_race(gx=4, gy=3):

    @T.prim_func
    def main(A: T.Tensor((gy, gx * 128), "float32"), B: T.Tensor((gy, gx * 128), "float32")):
        with T.Kernel(gx, gy, threads=128) as (bx, by):
            tx = T.get_thread_binding()
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[by, bx * 128 + tx]
            if bx + by * gx != gx * gy - 1:  # every block but the last
                T.sync_threads()
            B[by, bx * 128 + tx] = s[127 - tx]

    return main
