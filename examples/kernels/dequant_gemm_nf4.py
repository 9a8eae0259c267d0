# Ct = dequant(B) @ A^T with NF4 weights (4-bit indices into QLoRA's NormalFloat table), two per
# uint8 byte, times a float16 scale per group of group_size weights along K.
# The shape of the paper's Fig. 17 (its W_*A_* dequantised GEMMs): every k-step copies a packed
# tile,
# unpacks it with shifts and masks in registers and multiplies. The built-in
# `dequant_gemm_nf4` (examples/dequant_family.cpp) is the same kernel with an Eigen reference.
#
#   tessel run examples/kernels/dequant_gemm_nf4.py --level thread -D M=128 -D N=128 -D K=256
#
# tessel: reference=dequant_gemm_nf4
import tilelang
import tilelang.language as T


def dequant_gemm_nf4(M=256, N=256, K=512, block_M=128, block_N=128, block_K=64, num_stages=3,
                     threads=128, group_size=128):
    num_elems_per_byte = 2
    in_dtype = "float16"
    accum_dtype = "float32"
    # NF4 code book: QLoRA (Dettmers et al. 2023), Appendix E, "NormalFloat 4-bit data type".
    nf4_table = [
        -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
        -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
        0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
        0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
    ]

    @T.prim_func
    def main(
            A: T.Tensor((M, K), in_dtype),
            B: T.Tensor((N, K // num_elems_per_byte), "uint8"),
            Scale: T.Tensor((N, K // group_size), "float16"),
            Ct: T.Tensor((N, M), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K // num_elems_per_byte), "uint8")
            B_local = T.alloc_fragment((block_N, block_K // num_elems_per_byte), "uint8")
            B_dequantize = T.alloc_fragment((block_N, block_K), in_dtype)
            Ct_local = T.alloc_fragment((block_N, block_M), accum_dtype)
            # Rows of 32 packed bytes: the register copy's lanes 16 apart read rows 4 apart,
            # one bank unless swizzled.
            T.annotate_layout({B_shared: tilelang.layout.make_swizzled_layout(B_shared)})
            lut = T.alloc_local((16,), "float32")
            lut[0] = nf4_table[0]
            lut[1] = nf4_table[1]
            lut[2] = nf4_table[2]
            lut[3] = nf4_table[3]
            lut[4] = nf4_table[4]
            lut[5] = nf4_table[5]
            lut[6] = nf4_table[6]
            lut[7] = nf4_table[7]
            lut[8] = nf4_table[8]
            lut[9] = nf4_table[9]
            lut[10] = nf4_table[10]
            lut[11] = nf4_table[11]
            lut[12] = nf4_table[12]
            lut[13] = nf4_table[13]
            lut[14] = nf4_table[14]
            lut[15] = nf4_table[15]

            T.clear(Ct_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K // num_elems_per_byte], B_shared)
                T.copy(B_shared, B_local)
                for i, j in T.Parallel(block_N, block_K):
                    q = (B_local[i, j // 2] >> (4 * (j % 2))) & 0xF
                    w = lut[q]
                    scale = Scale[bx * block_N + i, (k * block_K + j) // group_size]
                    B_dequantize[i, j] = T.Cast(in_dtype, w * scale)
                T.gemm(B_dequantize, A_shared, Ct_local, transpose_B=True)
            T.copy(Ct_local, Ct[bx * block_N, by * block_M])

    return main
