# The matrix multiplication of the TileLang paper's Fig. 16 (Appendix B.1). The inner function is
# the figure's text, line for line; the paper leaves out where its names come from, so they are
# the parameters of an enclosing def here, and the shapes and dtypes its bare `T.Tensor`
# annotations do not say are given by the directive lines below. As in the figure,
# T.alloc_shared / T.alloc_fragment without a dtype use `dtype` / `accum_dtype`.
#
#   tessel run examples/kernels/fig16_gemm.py -D M=1024 -D N=1024 -D K=1024
#
# tessel: reference=gemm
# tessel: A: T.Tensor((M, K), dtype)
# tessel: B: T.Tensor((K, N), dtype)
# tessel: C: T.Tensor((M, N), accum_dtype)
import tilelang
import tilelang.language as T


def gemm(M=512, N=512, K=512, block_M=128, block_N=128, block_K=32, threads=128,
         dtype="float16", accum_dtype="float32"):

    @tilelang.jit
    def Matmul(A: T.Tensor, B: T.Tensor, C: T.Tensor):
        with T.Kernel(N // block_N, M // block_M,
                      threads=threads) as (bx, by):
            A_shared = T.alloc_shared(block_M, block_K)
            B_shared = T.alloc_shared(block_K, block_N)

            C_local = T.alloc_fragment(block_M, block_N)

            T.clear(C_local)
            for k in T.Pipelined(K // block_K, num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            T.copy(C_local, C[by * block_M, bx * block_N])

    return Matmul
