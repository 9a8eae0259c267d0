"""Compiles the same kernel files with TileLang and with Tessel for sm_80 (no GPU needed) and
compares the cubins: main-loop SASS instructions by class, registers, spills, shared memory and
nvcc time. Run through bench/bench_codegen_vs_tilelang.sh, which sets up the virtual environment.

The main loop is the backward branch's range (a loop in the SASS) holding the most HMMA
instructions; nested loops inside it are counted once, as written. Ranges with an EXIT inside are
not loops (out-of-line fix-up blocks of shuffles placed after the kernel's end branch back into
it). NOPs are not counted.
"""
import argparse
import csv
import datetime
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (label, kernel file, function, parameters). The parameters are the kernel file's own ones, so
# both compilers get the same text with the same values.
GEMM_TILES = dict(block_M=128, block_N=128, block_K=32, num_stages=3, threads=128)
PRESETS_M = {
    "M0": (4096, 1024, 8192), "M1": (4096, 8192, 8192), "M2": (4096, 28672, 8192),
    "M3": (4096, 8192, 28672), "M4": (8192, 1024, 8192), "M5": (8192, 8192, 8192),
    "M6": (8192, 28672, 8192), "M7": (8192, 8192, 28672),
}


def configs(quick):
    out = [("fig16 (1024^3, 128x128x32, 2 stages)", "gemm.py", "gemm",
            dict(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32, num_stages=2,
                 threads=128))]
    for name, (m, n, k) in PRESETS_M.items():
        if quick and name not in ("M0",):
            continue
        out.append((name + " (128x128x32, 3 stages)", "gemm.py", "gemm",
                    dict(M=m, N=n, K=k, **GEMM_TILES)))
    out.append(("FA example (2x256x64, 64x64, 2 stages)", "flash_attention.py", "flash_attention",
                dict(heads=2, seq_len=256, dim=64, block_M=64, block_N=64, num_stages=2,
                     threads=128, is_causal=0)))
    for name, seq, causal in (("FA0", 512, 1), ("FA1", 512, 0), ("FA2", 1024, 1),
                              ("FA3", 1024, 0)):
        if quick and name != "FA1":
            continue
        out.append((name + " (32x%dx128, 64x64, 2 stages%s)" % (seq, ", causal" if causal else ""),
                    "flash_attention.py", "flash_attention",
                    dict(heads=32, seq_len=seq, dim=128, block_M=64, block_N=64, num_stages=2,
                         threads=128, is_causal=causal)))
    return out


SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"\bBRA\b[^0-9`]*(?:0x([0-9a-f]+)|`\(\.L_x_(\d+)\))")


def parse_sass(text):
    """[(address, instruction text)] of the first kernel function in cuobjdump -sass output."""
    out = []
    for line in text.splitlines():
        m = SASS_LINE.search(line)
        if m:
            out.append((int(m.group(1), 16), m.group(2).strip()))
    return out


def classify(ins):
    op = re.sub(r"^@!?U?P[T0-9]+\s+", "", ins).split()[0]
    base = op.split(".")[0]
    if base in ("HMMA", "IMMA"):
        return "HMMA"
    if base == "LDSM":
        return "LDSM"
    if base == "LDGSTS":
        return "LDGSTS"
    if base == "BAR":
        return "BAR"
    if base == "NOP":
        return None
    return "other"


def main_loop(sass):
    """Counts by class in the loop (backward branch) holding the most HMMAs, smallest on ties."""
    best = None
    for i, (addr, ins) in enumerate(sass):
        m = BRANCH.search(ins)
        if not m or not m.group(1):
            continue
        target = int(m.group(1), 16)
        if target > addr:
            continue
        body = [x for a, x in sass if target <= a <= addr]
        if any(x.split()[0] == "EXIT" or x.startswith("@") and " EXIT" in x for x in body):
            continue  # an out-of-line block (a shuffle's divergence fix-up) jumping back
        counts = {"HMMA": 0, "LDSM": 0, "LDGSTS": 0, "BAR": 0, "other": 0}
        for x in body:
            c = classify(x)
            if c:
                counts[c] += 1
        total = sum(counts.values())
        key = (counts["HMMA"], -total)
        if best is None or key > best[0]:
            best = (key, counts, total)
    if best is None:
        return {"HMMA": 0, "LDSM": 0, "LDGSTS": 0, "BAR": 0, "other": 0}, 0
    return best[1], best[2]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def nvcc_cubin(nvcc, src, cubin, extra):
    cmd = [nvcc, "-cubin", "-O3", "-arch=sm_80", "-std=c++17", "-Xptxas", "-v", "-o", cubin, src]
    cmd += extra
    t0 = time.monotonic()
    r = run(cmd)
    secs = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError("nvcc failed: %s\n%s" % (" ".join(cmd), r.stderr[-3000:]))
    log = r.stdout + r.stderr
    regs = re.search(r"Used (\d+) registers", log)
    spill_st = re.search(r"(\d+) bytes spill stores", log)
    spill_ld = re.search(r"(\d+) bytes spill loads", log)
    smem = re.search(r"(\d+) bytes smem", log)
    return dict(nvcc_s=secs, registers=int(regs.group(1)) if regs else -1,
                spill_bytes=(int(spill_st.group(1)) if spill_st else 0) +
                (int(spill_ld.group(1)) if spill_ld else 0),
                static_smem=int(smem.group(1)) if smem else 0)


def sass_counts(cuobjdump, cubin):
    r = run([cuobjdump, "-sass", cubin])
    if r.returncode != 0:
        raise RuntimeError("cuobjdump failed: " + r.stderr)
    counts, total = main_loop(parse_sass(r.stdout))
    return counts, total


def tessel_row(tessel, nvcc, cuobjdump, kfile, params, work):
    src = os.path.join(work, "tessel.cu")
    cmd = [tessel, "emit", os.path.join(ROOT, "examples", "kernels", kfile), "--target", "cuda",
           "-o", src]
    for k, v in params.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    r = run(cmd)
    if r.returncode != 0:
        raise RuntimeError("tessel emit failed: %s\n%s" % (" ".join(cmd), r.stderr))
    with open(src) as f:
        code = f.read()
    dyn = re.search(r"(\d+) bytes of dynamic shared memory", code)
    out = nvcc_cubin(nvcc, src, os.path.join(work, "tessel.cubin"), [])
    out["shared_bytes"] = out.pop("static_smem") + (int(dyn.group(1)) if dyn else 0)
    out["counts"], out["total"] = sass_counts(cuobjdump, os.path.join(work, "tessel.cubin"))
    return out


def load_kernel_module(kfile):
    path = os.path.join(ROOT, "examples", "kernels", kfile)
    spec = importlib.util.spec_from_file_location("k_" + kfile[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tilelang_row(tilelang, nvcc, cuobjdump, kfile, func, params, work):
    mod = load_kernel_module(kfile)
    prim = getattr(mod, func)(**params)
    target = {"kind": "cuda", "arch": "sm_80"}
    with tilelang.tvm.target.Target(target):
        artifact = tilelang.lower(prim, target=target, enable_device_compile=False)
    src = os.path.join(work, "tilelang.cu")
    with open(src, "w") as f:
        f.write(artifact.kernel_source)
    # Dynamic shared memory: the attribute TileLang's host code launches with.
    dyn = 0
    for _, fn in artifact.device_mod.functions.items():
        if fn.attrs is not None and "dyn_shared_memory_buf" in fn.attrs:
            dyn = max(dyn, int(fn.attrs["dyn_shared_memory_buf"]))
    base = os.path.dirname(tilelang.__file__)
    inc = ["-I" + os.path.join(base, "src"),
           "-I" + os.path.join(base, "3rdparty", "cutlass", "include"),
           "--use_fast_math", "-w"]
    out = nvcc_cubin(nvcc, src, os.path.join(work, "tilelang.cubin"), inc)
    out["shared_bytes"] = out.pop("static_smem") + dyn
    out["counts"], out["total"] = sass_counts(cuobjdump, os.path.join(work, "tilelang.cubin"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessel", default=os.path.join(ROOT, "build", "tessel"))
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--cuobjdump", required=True)
    ap.add_argument("--csv", default=os.path.join(ROOT, "bench", "results",
                                                  "codegen_vs_tilelang.csv"))
    ap.add_argument("--quick", action="store_true", help="M0, FA example and FA1 only")
    ap.add_argument("--only", default="", help="labels starting with this")
    ap.add_argument("--no-tilelang", action="store_true", help="Tessel only (no venv needed)")
    args = ap.parse_args()

    tilelang = None
    tl_version = "-"
    if not args.no_tilelang:
        import tilelang as tilelang_module  # noqa: E402
        tilelang = tilelang_module
        tl_version = getattr(tilelang, "__version__", "?")
    nvcc_version = run([args.nvcc, "--version"]).stdout.strip().splitlines()[-1]
    tessel_version = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).stdout.strip()
    work = os.path.join(ROOT, "build", "bench_codegen_vs_tilelang")
    os.makedirs(work, exist_ok=True)
    os.makedirs(os.path.dirname(args.csv), exist_ok=True)
    new_file = not os.path.exists(args.csv)
    machine = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            machine = re.search(r"model name\s*:\s*(.*)", f.read()).group(1).strip()
    except (OSError, AttributeError):
        pass
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    fields = ["date", "machine", "tessel_commit", "tilelang", "nvcc", "kernel", "compiler",
              "loop_total", "HMMA", "LDSM", "LDGSTS", "BAR", "other", "registers",
              "spill_bytes", "shared_bytes", "nvcc_s"]
    hdr = "%-44s %-8s %6s %5s %5s %6s %4s %6s %5s %6s %7s %7s"
    print(hdr % ("kernel", "compiler", "loop", "HMMA", "LDSM", "LDGSTS", "BAR", "other", "regs",
                 "spills", "smem", "nvcc s"))
    with open(args.csv, "a", newline="") as f:
        w = csv.writer(f)
        if new_file:
            w.writerow(fields)
        for label, kfile, func, params in configs(args.quick):
            if args.only and not label.startswith(args.only):
                continue
            rows = [("tessel", lambda: tessel_row(args.tessel, args.nvcc, args.cuobjdump, kfile,
                                                  params, work))]
            if tilelang is not None:
                rows.append(("tilelang", lambda: tilelang_row(tilelang, args.nvcc,
                                                              args.cuobjdump, kfile, func, params,
                                                              work)))
            totals = {}
            for compiler, fn in rows:
                try:
                    r = fn()
                except Exception as e:  # a failure of one row is reported, the rest still run
                    print("%-44s %-8s failed: %s" % (label, compiler, str(e).splitlines()[0]))
                    continue
                c = r["counts"]
                totals[compiler] = r["total"]
                print(hdr % (label, compiler, r["total"], c["HMMA"], c["LDSM"], c["LDGSTS"],
                             c["BAR"], c["other"], r["registers"], r["spill_bytes"],
                             r["shared_bytes"], "%.2f" % r["nvcc_s"]))
                w.writerow([date, machine, tessel_version, tl_version, nvcc_version, label,
                            compiler, r["total"], c["HMMA"], c["LDSM"], c["LDGSTS"], c["BAR"],
                            c["other"], r["registers"], r["spill_bytes"], r["shared_bytes"],
                            "%.3f" % r["nvcc_s"]])
                f.flush()
            if len(totals) == 2 and totals["tilelang"]:
                print("%-44s ratio main-loop instructions tessel/tilelang = %.2f" %
                      (label, totals["tessel"] / totals["tilelang"]))
    print("appended to " + args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
