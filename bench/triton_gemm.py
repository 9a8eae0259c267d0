"""The fp16 GEMM of bench_sim_vs_triton.sh written for Triton (C = A @ B, fp16 in, fp32
accumulate, one program per 128 x 128 tile of C, k-steps of 32: the tiling of Tessel's `gemm`
example), and the driver that runs it under Triton's CPU interpreter (TRITON_INTERPRET=1)
interleaved with Tessel's tile and thread levels (build/bench/bench_sim_vs_triton), then prints
medians and ratios and appends them to bench/results/sim_vs_triton.csv.

    TRITON_INTERPRET=1 python bench/triton_gemm.py TESSEL_BENCH_BINARY CSV REPS N [N ...]

BENCH_LABEL (environment) names the Tessel build in the CSV (default: the binary's path).
"""
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * N + cols[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc)


def run_triton(a, b, c, n):
    grid = (n // 128, n // 128)
    start = time.perf_counter()
    gemm_kernel[grid](a, b, c, n, n, n, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32)
    return time.perf_counter() - start


def run_tessel(binary, n, level, workers):
    out = subprocess.run([binary, str(n), level, str(workers)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_sim_vs_triton: {binary} {n} {level} failed:\n{out.stdout}{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_cli(tessel, n):
    """Wall seconds of the whole `tessel run gemm --level thread` command a user waits for: random
    inputs, the reference, the tile level, the lowering and the thread level, compared."""
    d = str(n)
    start = time.perf_counter()
    out = subprocess.run([tessel, "run", "gemm", "-D", "M=" + d, "-D", "N=" + d, "-D", "K=" + d,
                          "--level", "thread"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"bench_sim_vs_triton: tessel run gemm {n} --level thread failed:\n{out.stdout}")
    return seconds


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main():
    if os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("bench_sim_vs_triton: run with TRITON_INTERPRET=1 (Triton's CPU interpreter)")
    binary, csv, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sizes = [int(s) for s in sys.argv[4:]]
    cores = os.cpu_count() or 1
    label = os.environ.get("BENCH_LABEL", binary)
    here = os.path.dirname(os.path.abspath(binary))  # build/bench/ beside build/tessel
    tessel = next(p for p in (os.path.join(here, "tessel"), os.path.join(here, "..", "tessel"))
                  if os.path.exists(p) or p.endswith(os.path.join("..", "tessel")))
    runs = {}  # (n, what) -> seconds per rep
    load_before = os.getloadavg()
    for n in sizes:
        rng = np.random.default_rng(3)
        a = torch.from_numpy(rng.uniform(-1, 1, (n, n)).astype(np.float16))
        b = torch.from_numpy(rng.uniform(-1, 1, (n, n)).astype(np.float16))
        c = torch.empty((n, n), dtype=torch.float32)
        run_triton(a, b, c, n)  # warm-up: the interpreter's first call binds the kernel
        want = a.float().numpy() @ b.float().numpy()
        err = float(np.abs(c.numpy() - want).max())
        if err > 1e-2:
            sys.exit(f"bench_sim_vs_triton: Triton's GEMM {n}^3 is wrong (max error {err})")
        for r in range(reps):  # interleaved: noise of the machine hits every column alike
            runs.setdefault((n, "triton"), []).append(run_triton(a, b, c, n))
            runs.setdefault((n, "tile"), []).append(run_tessel(binary, n, "tile", 0)["seconds"])
            runs.setdefault((n, "thread1"), []).append(
                run_tessel(binary, n, "thread", 1)["seconds"])
            runs.setdefault((n, "thread"), []).append(run_tessel(binary, n, "thread", 0)["seconds"])
            runs.setdefault((n, "cli"), []).append(run_cli(tessel, n))
    load_after = os.getloadavg()
    med = {key: float(np.median(v)) for key, v in runs.items()}
    print(f"fp16 GEMM, 128x128x32 tiles, median of {reps} interleaved runs on {cpu_name()} "
          f"({cores} cores); load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"tessel {label}, triton {triton.__version__}, torch {torch.__version__}, numpy {np.__version__}")
    print(f"  {'N':>5} {'Triton interp s':>16} {'tile s':>9} {'thread 1w s':>12} "
          f"{'thread all s':>13} {'CLI s':>8} {'tile x':>8} {'thread 1w x':>12} "
          f"{'thread all x':>13} {'CLI x':>7}")
    new_file = not os.path.exists(csv) or os.path.getsize(csv) == 0
    with open(csv, "a") as f:
        if new_file:
            f.write("date,machine,cores,load_before,load_after,tessel,triton,torch,n,reps,triton_s,tile_s,"
                    "thread_1worker_s,thread_allcores_s,cli_thread_s,speed_tile,speed_thread_1worker,"
                    "speed_thread_allcores,speed_cli_thread\n")
        for n in sizes:
            t = med[(n, "triton")]
            row = [med[(n, k)] for k in ("tile", "thread1", "thread", "cli")]
            speed = [t / x for x in row]  # > 1: Tessel is faster than Triton's interpreter
            print(f"  {n:>5} {t:>16.3f} {row[0]:>9.3f} {row[1]:>12.3f} {row[2]:>13.3f} "
                  f"{row[3]:>8.3f} {speed[0]:>8.2f} {speed[1]:>12.2f} {speed[2]:>13.2f} "
                  f"{speed[3]:>7.2f}")
            f.write(f"{time.strftime('%Y-%m-%d', time.gmtime())},\"{cpu_name()}\",{cores},"
                    f"{load_before[0]:.2f},{load_after[0]:.2f},\"{label}\",{triton.__version__},"
                    f"{torch.__version__},{n},{reps},{t:.4f},{row[0]:.4f},{row[1]:.4f},"
                    f"{row[2]:.4f},{row[3]:.4f},{speed[0]:.3f},{speed[1]:.3f},{speed[2]:.3f},"
                    f"{speed[3]:.3f}\n")
    print("  (x = Triton interpreter seconds / Tessel seconds: above 1, Tessel is faster; CLI: the "
          "whole `tessel run gemm --level thread` command, reference and tile-level check included)")


if __name__ == "__main__":
    main()
