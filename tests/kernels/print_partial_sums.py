# Debug prints as kernel authors add them: each of 4 threads sums a quarter of a row and prints
# its partial sum (T.print with msg=), then the block prints the row's total from a T.Parallel
# loop over a 1-element fragment. The interpreters write each print with its block and thread
# (tests/test_parser_constructs.cpp reads them); the generated code calls printf.
import tilelang
import tilelang.language as T


@tilelang.jit
def print_partial_sums(rows=2, cols=16, dtype="int32"):

    @T.prim_func
    def main(A: T.Tensor((rows, cols), dtype), S: T.Tensor((rows,), dtype)):
        with T.Kernel(rows, threads=4) as bx:
            tx = T.get_thread_binding()
            part = T.alloc_shared((4,), dtype)
            acc = T.alloc_var(dtype, init=0)
            for k in T.serial(cols // 4):
                acc += A[bx, tx * (cols // 4) + k]
            T.print(acc, msg="partial")
            part[tx] = acc
            part_frag = T.alloc_fragment((4,), dtype)
            total = T.alloc_fragment((1,), dtype)
            T.copy(part, part_frag)
            T.reduce_sum(part_frag, total, dim=0)
            for i in T.Parallel(1):
                T.print(total[i], msg="total")
                S[bx] = total[i]

    return main
