# C = dequant(B) @ A, a GEMV (m = 1, the paper's V0-V7), with FP4 E2M1 weights (sign, 2 exponent
# bits with bias 1, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and negatives), two per uint8 byte,
# times a float16 scale per group of group_size weights along K.
# Each block owns block_N rows: per k-step it copies a packed slice to registers, unpacks it with
# shifts and masks, multiplies by the activations and reduces along K into its accumulators.
# The built-in `dequant_gemv_fp4` (examples/dequant_family.cpp) is the same kernel with an Eigen
# reference.
#
#   tessel run examples/kernels/dequant_gemv_fp4.py --level thread -D N=256 -D K=512
#
# tessel: reference=dequant_gemv_fp4
import tilelang
import tilelang.language as T


def dequant_gemv_fp4(N=1024, K=1024, block_N=8, block_K=128, num_stages=2,
                     threads=128, group_size=128):
    num_elems_per_byte = 2
    in_dtype = "float16"
    accum_dtype = "float32"

    @T.prim_func
    def main(
            A: T.Tensor((K,), in_dtype),
            B: T.Tensor((N, K // num_elems_per_byte), "uint8"),
            Scale: T.Tensor((N, K // group_size), "float16"),
            C: T.Tensor((N,), "float16"),
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
                    f4 = (B_local[i, j // 2] >> (4 * (j % 2))) & 0xF
                    s = f4 >> 3
                    e = (f4 >> 1) & 3
                    m = f4 & 1
                    # twice the magnitude: m (subnormal, e == 0) or (2 + m) << (e - 1)
                    twice = T.if_then_else(e == 0, m, (2 + m) << (e - 1))
                    mag = T.Cast("float32", twice) * 0.5
                    w = T.if_then_else(s == 1, -mag, mag)
                    scale = Scale[bx * block_N + i, (k * block_K + j) // group_size]
                    prod[i, j] = T.Cast(accum_dtype, w * scale) * A_shared[j]
                T.reduce_sum(prod, C_local, dim=1, clear=False)
            T.copy(C_local, C[bx * block_N])

    return main
