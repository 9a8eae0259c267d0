# BUG on purpose: each block reverses 128 elements through shared memory, but nothing separates
# the stores into `s` from the loads of other threads' elements: a race, which the thread-level
# simulator reports with this file's lines. `-D fixed=true` adds the missing barrier.
#
#   tessel run examples/kernels/bug_missing_barrier.py --level thread
#
# tessel: reference=bug_missing_barrier
import tilelang.language as T


def bug_missing_barrier(blocks=2, fixed=False):

    @T.prim_func
    def main(A: T.Tensor((blocks * 128,), "float32"), B: T.Tensor((blocks * 128,), "float32")):
        with T.Kernel(blocks, threads=128) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[bx * 128 + tx]
            if fixed:
                T.sync_threads()  # the missing barrier
            B[bx * 128 + tx] = s[127 - tx]

    return main
