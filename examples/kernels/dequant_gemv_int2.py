# C = dequant(B) @ A, a GEMV (m = 1, the paper's V0-V7), with signed int2 weights (-2..1), four per
# uint8 byte, lowest bits first, with int8 activations and int32 accumulation (W_INT2A_INT8).
# Each block owns block_N rows: per k-step it copies a packed slice to registers, unpacks it with
# shifts and masks, multiplies by the activations and reduces along K into its accumulators.
# The built-in `dequant_gemv_int2` (examples/dequant_family.cpp) is the same kernel with an Eigen
# reference.
#
#   tessel run examples/kernels/dequant_gemv_int2.py --level thread -D N=256 -D K=512
#
# tessel: reference=dequant_gemv_int2
import tilelang
import tilelang.language as T


def dequant_gemv_int2(N=1024, K=1024, block_N=8, block_K=128, num_stages=2,
                      threads=128):
    num_elems_per_byte = 4
    in_dtype = "int8"
    accum_dtype = "int32"

    @T.prim_func
    def main(
            A: T.Tensor((K,), in_dtype),
            B: T.Tensor((N, K // num_elems_per_byte), "uint8"),
            C: T.Tensor((N,), "int32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            A_shared = T.alloc_shared((block_K,), in_dtype)
            B_local = T.alloc_fragment((block_N, block_K // num_elems_per_byte), "uint8")
            prod = T.alloc_fragment((block_N, block_K), accum_dtype)
            C_local = T.alloc_fragment((block_N,), accum_dtype)

            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K // num_elems_per_byte], B_local)
                for i, j in T.Parallel(block_N, block_K):
                    q = (B_local[i, j // 4] >> (2 * (j % 4))) & 0x3
                    # sign-extend the 2-bit field: 0, 1 stay, 2, 3 -> -2, -1
                    prod[i, j] = T.Cast(accum_dtype, (q ^ 2) - 2) * A_shared[j]
                T.reduce_sum(prod, C_local, dim=1, clear=False)
            T.copy(C_local, C[bx * block_N])

    return main
