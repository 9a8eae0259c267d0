# Split-K GEMM in TileLang syntax: the built-in `gemm_splitk`. K is cut into split_k slices, one
# per block along the grid's z; each block adds its partial C tile to the output with one tile
# atomic. C must start at zero (the host zeroes it; the reference directive says so for a run).
# tessel: reference=gemm_splitk
import torch
import tilelang
import tilelang.language as T


@tilelang.jit
def matmul_splitk(M=256, N=256, K=512, block_M=64, block_N=64, block_K=32, split_k=4,
                  num_stages=2, threads=128, dtype="float16", out_dtype="float32"):
    accum_dtype = "float32"
    splitK = K // split_k
    assert K % (split_k * block_K) == 0, "K must be a multiple of split_k * block_K"

    @T.prim_func
    def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(
                T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k,
                threads=threads) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.Pipelined(splitK // block_K, num_stages=num_stages):
                T.copy(A[by * block_M, bz * splitK + ko * block_K], A_shared)
                T.copy(B[bz * splitK + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            T.atomic_add(C[by * block_M:(by + 1) * block_M, bx * block_N:(bx + 1) * block_N],
                         C_local)

    return main


def main(M=256, N=256, K=512):
    kernel = matmul_splitk(M, N, K)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    kernel(a, b, c)
    torch.testing.assert_close(c, (a @ b).float(), rtol=1e-2, atol=1e-2)


if __name__ == "__main__":
    main()
