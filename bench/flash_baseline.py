"""Times FlashAttention-3 on the GPU for bench/bench_gpu_flash.sh: one row per preset.

Reads the presets from stdin ("FA0 1 32 512 128 1": name, batch, heads, seq_len, dim, causal, as
`bench_gpu_flash --presets` prints them) and writes `preset,impl,ms_median,ms_p20,ms_p80` to the
file named by argv[1]. The implementation is FlashAttention-3 (`flash_attn_interface`, built from
the flash-attention repository's hopper/ directory, not on PyPI) where it imports, else
FlashAttention-4 (`flash_attn.cute`, PyPI `flash-attn-4`, the same authors' CuTe DSL kernels for
Hopper and Blackwell), else the faster of PyTorch's own FlashAttention-2 and cuDNN attention
backends; the impl column says which. Each output is checked against PyTorch's
scaled_dot_product_attention in fp32 first. Method as the C++ benchmarks: >= 25 ms of warm-up, 10 runs
timed with CUDA events, 256 MB written before each run (a cold L2), median with p20/p80.
Exit 0 when every preset was timed, 1 otherwise (the reason on stderr).
"""
import statistics
import sys


def load():
    """The implementations to time: FlashAttention-3, else FlashAttention-4, else PyTorch's own
    attention kernels (its FlashAttention-2 backend and its cuDNN backend, the faster per preset
    kept), each as (name, f(q, k, v, causal)) on (batch, seq, heads, dim) tensors."""
    try:
        from flash_attn_interface import flash_attn_func  # FlashAttention-3
        return [("flash-attn-3 (flash_attn_interface)", flash_attn_func)]
    except ImportError:
        pass
    try:
        from flash_attn.cute import flash_attn_func  # FlashAttention-4 (CuTe DSL)
        return [("flash-attn-4 (flash_attn.cute)", flash_attn_func)]
    except ImportError:
        pass
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def sdpa(backend):
        def attn(q, k, v, causal):
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(
                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                    is_causal=causal).transpose(1, 2)
        return attn
    version = torch.__version__.split("+")[0]
    return [(f"torch {version} sdpa flash (FlashAttention-2)", sdpa(SDPBackend.FLASH_ATTENTION)),
            (f"torch {version} sdpa cudnn", sdpa(SDPBackend.CUDNN_ATTENTION))]


def quantile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def time_one(attn, q, k, v, causal, flush):
    """Median, p20 and p80 of 10 runs (ms) after >= 25 ms of warm-up, L2 flushed before each."""
    import torch
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def timed():
        start.record()
        attn(q, k, v, causal)
        stop.record()
        torch.cuda.synchronize()
        return start.elapsed_time(stop)

    warm = 0.0
    for _ in range(1000):
        warm += timed()
        if warm >= 25:
            break
    ms = []
    for i in range(10):
        flush.fill_(i)
        ms.append(timed())
    return statistics.median(ms), quantile(ms, 0.2), quantile(ms, 0.8)


def main():
    import torch
    impls = load()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for line in sys.stdin:
        if not line.strip():
            continue
        name, batch, heads, seq, dim, causal = line.split()
        b, h, s, d, c = int(batch), int(heads), int(seq), int(dim), causal == "1"
        q, k, v = (torch.randn(b, s, h, d, dtype=torch.float16, device="cuda") for _ in range(3))
        want = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2).float(), k.transpose(1, 2).float(), v.transpose(1, 2).float(),
            is_causal=c).transpose(1, 2)
        best = None
        for impl, attn in impls:
            def run(q, k, v, causal, attn=attn):
                out = attn(q, k, v, causal=causal)
                return out[0] if isinstance(out, tuple) else out
            try:
                err = (run(q, k, v, c).float() - want).abs().max().item()
            except RuntimeError as e:  # a backend that does not take this shape or GPU
                print(f"flash_baseline: {impl} refused {name}: {e}", file=sys.stderr)
                continue
            if not err < 1e-2:
                print(f"flash_baseline: {impl} is wrong on {name}: max error {err}", file=sys.stderr)
                continue
            t = time_one(run, q, k, v, c, flush)
            if best is None or t[0] < best[1][0]:
                best = (impl, t)
        if best is None:
            print(f"flash_baseline: no implementation ran {name}", file=sys.stderr)
            return 1
        impl, (median, p20, p80) = best
        rows.append(f"{name},{impl},{median},{p20},{p80}")
    with open(sys.argv[1], "w") as f:
        f.write("preset,impl,ms_median,ms_p20,ms_p80\n" + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
