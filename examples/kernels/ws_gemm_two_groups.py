# A GEMM whose two warpgroups each compute one half of the block's C tile, written by hand with
# T.ws, TileLang style: the whole block copies the A tile and both halves of the B tile into
# shared memory, then warpgroup 0 (threads 0-127) multiplies A by the left half into its own
# accumulator and warpgroup 1 (threads 128-255) A by the right half into another. Each T.clear,
# T.gemm and T.copy inside a branch is lowered for the 128 threads of that branch; the block
# barriers between the copies and the gemms are the whole block's (insert_barriers puts them
# outside the branches). No mbarriers: it runs on sm80 (mma.sync) and sm90 (wgmma). The k loop
# is software-pipelined (num_stages=2: the block's copies become cp.async into two buffers a
# round ahead of the branches' gemms).
#
#   tessel run examples/kernels/ws_gemm_two_groups.py --level thread --target sm80
#
# tessel: reference=gemm
import tilelang.language as T


def ws_gemm_two_groups(M=128, N=128, K=128, block_M=64, block_N=64, block_K=32, num_stages=2,
                       dtype="float16"):
    accum_dtype = "float32"
    half_N = block_N // 2

    @T.prim_func
    def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_left = T.alloc_shared((block_K, half_N), dtype)
            B_right = T.alloc_shared((block_K, half_N), dtype)
            C_left = T.alloc_fragment((block_M, half_N), accum_dtype)
            C_right = T.alloc_fragment((block_M, half_N), accum_dtype)

            with T.ws(0):
                T.clear(C_left)
            with T.ws(1):
                T.clear(C_right)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_left)
                T.copy(B[ko * block_K, bx * block_N + half_N], B_right)
                with T.ws(0):
                    T.gemm(A_shared, B_left, C_left)
                with T.ws(1):
                    T.gemm(A_shared, B_right, C_right)
            with T.ws(0):
                T.copy(C_left, C[by * block_M, bx * block_N])
            with T.ws(1):
                T.copy(C_right, C[by * block_M, bx * block_N + half_N])

    return main
