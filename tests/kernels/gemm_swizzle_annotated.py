# A tiled gemm whose shared tiles take TileLang's layout makers, as examples annotate them:
# make_swizzled_layout picks a 64B swizzle for the 32-column A tile and a 128B one for the
# 64-column B tile (16-bit elements: 8 per 16-byte chunk). tests/test_parser_constructs.cpp
# checks the layouts and the whole pipeline.
import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout


@tilelang.jit(out_idx=[-1])
def matmul(M=128, N=128, K=64, block_M=64, block_N=64, block_K=32, dtype="float16",
           accum_dtype="float32"):

    @T.prim_func
    def gemm_kernel(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                    C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.annotate_layout({
                A_shared: make_swizzled_layout(A_shared),
                B_shared: tilelang.layout.make_swizzled_layout(B_shared),
            })
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm_kernel


def main():
    kernel = matmul()
    print(kernel.get_kernel_source())


if __name__ == "__main__":
    main()
