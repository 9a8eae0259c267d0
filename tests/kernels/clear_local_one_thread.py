# What the lowering once made of `T.clear(acc)` on a per-thread `acc = T.alloc_local((1,), ...)`:
# the clear kept to `if tx < 1`, so only thread 0 starts its sum at zero and every other thread
# adds to a register nothing wrote. Thread-level code, written out as the miscompile left it, so
# that `tessel verify` is tested on it whatever today's lowering does.
import tilelang.language as T


def clear_local_one_thread(blocks=2, steps=4):

    @T.prim_func
    def main(A: T.Tensor((blocks * steps * 128,), "float32"), B: T.Tensor((blocks * 128,), "float32")):
        with T.Kernel(blocks, threads=128) as bx:
            tx = T.get_thread_binding()
            acc = T.alloc_local((1,), "float32")
            if tx < 1:
                acc[0] = 0.0
            for k in T.serial(steps):
                acc[0] = acc[0] + A[(bx * steps + k) * 128 + tx]
            B[bx * 128 + tx] = acc[0]

    return main
