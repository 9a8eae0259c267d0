# Per-warp sums with a shfl_xor butterfly: each of the 4 warps of a block sums its 32 elements in
# five exchange steps, and lane 0 writes the sum. Thread-level code (T.alloc_var, T.shfl_xor).
# tessel: reference=warp_shuffle_reduce
import tilelang.language as T


def warp_shuffle_reduce(blocks=2):

    @T.prim_func
    def main(A: T.Tensor((blocks * 128,), "float32"), S: T.Tensor((blocks * 4,), "float32")):
        with T.Kernel(blocks, threads=128) as bx:
            tx = T.get_thread_binding()
            v = T.alloc_var("float32")
            v = A[bx * 128 + tx]
            for k in T.serial(5):
                v = v + T.shfl_xor(v, 16 >> k)
            if tx % 32 == 0:
                S[bx * 4 + tx // 32] = v

    return main
