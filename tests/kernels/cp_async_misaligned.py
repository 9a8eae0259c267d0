# A tile staged through shared memory with 16-byte cp.async copies whose source starts 4 float16
# elements (8 bytes) into each block's run: every source address is 8 modulo 16, which a GPU
# faults on. Thread-level code; `-D fixed=true` starts the runs at a multiple of 8 elements.
import tilelang.language as T


def cp_async_misaligned(blocks=2, fixed=False):
    shift = 0 if fixed else 4

    @T.prim_func
    def main(A: T.Tensor((blocks * 256 + 8,), "float16"), B: T.Tensor((blocks * 256,), "float16")):
        with T.Kernel(blocks, threads=32) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((256,), "float16")
            T.cp_async_16(S[tx * 8], A[bx * 256 + tx * 8 + shift], 16)
            T.cp_async_commit_group()
            T.cp_async_wait_group(0)
            T.sync_threads()
            for i in T.serial(8):
                B[bx * 256 + i * 32 + tx] = S[i * 32 + tx]

    return main
