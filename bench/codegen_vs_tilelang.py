"""Compiles the same kernel files with TileLang and with Tessel for sm_80 or sm_90a (no GPU
needed) and compares the cubins: main-loop SASS instructions by class, registers, spills, shared
memory and nvcc time. Run through bench/bench_codegen_vs_tilelang.sh, which sets up the virtual
environment.

The main loop is the backward branch's range (a loop in the SASS) holding the most HMMA (sm_80) or
HGMMA + HMMA (sm_90a) instructions; nested loops inside it are counted once, as written. Where
the compiler split that loop (a causal mask: below, on and above the diagonal) each part is a row,
the first under the compiler's name. Ranges with an EXIT inside are not loops (out-of-line fix-up
blocks of shuffles placed after the kernel's end branch back into it). NOPs are not counted. On
sm_90a the producer column is the loop with the most TMA/cp.async copies and no tensor-core
instruction (a warp-specialised producer), 0 when there is none.
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


def classify(ins, arch="sm_80"):
    op = re.sub(r"^@!?U?P[T0-9]+\s+", "", ins).split()[0]
    base = op.split(".")[0]
    if base == "NOP":
        return None
    if base in ("HMMA", "IMMA"):
        return "HMMA"
    if base == "LDSM":
        return "LDSM"
    if base == "LDGSTS":
        return "LDGSTS"
    if arch == "sm_80":
        return "BAR" if base == "BAR" else "other"
    if base in ("HGMMA", "WARPGROUP"):  # wgmma and its fences (WARPGROUP.ARRIVE/DEPBAR)
        return "WGMMA"
    if base in ("UTMALDG", "UBLKCP", "UTMASTG"):
        return "UTMA"
    if base in ("BAR", "SYNCS"):  # block barriers and mbarrier arrive/wait
        return "BAR_SYNCS"
    return "other"


CLASSES = {"sm_80": ("HMMA", "LDSM", "LDGSTS", "BAR", "other"),
           "sm_90a": ("WGMMA", "HMMA", "LDSM", "UTMA", "LDGSTS", "BAR_SYNCS", "other")}


def loops(sass, arch="sm_80"):
    """[(start, end, counts by class, total)] of every backward branch's range."""
    out = []
    for addr, ins in sass:
        m = BRANCH.search(ins)
        if not m or not m.group(1):
            continue
        target = int(m.group(1), 16)
        if target > addr:
            continue
        body = [x for a, x in sass if target <= a <= addr]
        if any(x.split()[0] == "EXIT" or x.startswith("@") and " EXIT" in x for x in body):
            continue  # an out-of-line block (a shuffle's divergence fix-up) jumping back
        counts = {c: 0 for c in CLASSES[arch]}
        for x in body:
            c = classify(x, arch)
            if c:
                counts[c] += 1
        total = sum(counts.values())
        # Tensor-core instructions proper (HGMMA/HMMA, not the wgmma fences): the unit the
        # sm_90a comparison normalises by, since ptxas unrolls some loops (TileLang's by 4).
        counts["mma"] = sum(1 for x in body if re.sub(r"^@!?U?P[T0-9]+\s+", "", x).split()[0]
                            .split(".")[0] in ("HGMMA", "HMMA", "IMMA"))
        out.append((target, addr, counts, total))
    return out


def main_loops(sass, arch="sm_80", key=("HMMA",)):
    """The loops holding the most instructions of the `key` classes, innermost where one holds
    another, in address order: one for a single main loop, several where the compiler split it
    (a causal mask: below, on and above the diagonal)."""
    all_loops = loops(sass, arch)
    most = max((sum(l[2].get(k, 0) for k in key) for l in all_loops), default=0)
    if most == 0:
        return []
    top = [l for l in all_loops if sum(l[2].get(k, 0) for k in key) == most]
    inner = [l for l in top
             if not any(o is not l and l[0] <= o[0] and o[1] <= l[1] for o in top)]
    return sorted(inner, key=lambda l: l[0])


def main_loop(sass, arch="sm_80"):
    """Counts by class in the first main loop (see main_loops)."""
    key = ("HMMA",) if arch == "sm_80" else ("WGMMA", "HMMA")
    found = main_loops(sass, arch, key)
    if not found:
        return dict({c: 0 for c in CLASSES[arch]}, mma=0), 0
    return found[0][2], found[0][3]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def nvcc_cubin(nvcc, src, cubin, extra, arch="sm_80"):
    cmd = [nvcc, "-cubin", "-O3", "-arch=" + arch, "-std=c++17", "-Xptxas", "-v", "-o", cubin,
           src]
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


def sass_counts(cuobjdump, cubin, arch="sm_80"):
    """Main loops (first one's counts and total, then every one as (counts, total)) and, on
    sm_90a, the producer loop: the one with the most TMA/cp.async copies and no wgmma/mma."""
    r = run([cuobjdump, "-sass", cubin])
    if r.returncode != 0:
        raise RuntimeError("cuobjdump failed: " + r.stderr)
    sass = parse_sass(r.stdout)
    counts, total = main_loop(sass, arch)
    key = ("HMMA",) if arch == "sm_80" else ("WGMMA", "HMMA")
    every = [(l[2], l[3]) for l in main_loops(sass, arch, key)]
    producer = 0
    if arch != "sm_80":
        copies = [l for l in loops(sass, arch)
                  if l[2]["WGMMA"] + l[2]["HMMA"] == 0 and l[2]["UTMA"] + l[2]["LDGSTS"] > 0]
        if copies:
            producer = max(copies, key=lambda l: (l[2]["UTMA"] + l[2]["LDGSTS"], -l[3]))[3]
    return counts, total, every, producer


def tessel_row(tessel, nvcc, cuobjdump, kfile, params, work, arch="sm_80"):
    src = os.path.join(work, "tessel.cu")
    target = "cuda" if arch == "sm_80" else "sm90"
    cmd = [tessel, "emit", os.path.join(ROOT, "examples", "kernels", kfile), "--target", target,
           "-o", src]
    for k, v in params.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    r = run(cmd)
    if r.returncode != 0:
        raise RuntimeError("tessel emit failed: %s\n%s" % (" ".join(cmd), r.stderr))
    with open(src) as f:
        code = f.read()
    dyn = re.search(r"(\d+) bytes of dynamic shared memory", code)
    out = nvcc_cubin(nvcc, src, os.path.join(work, "tessel.cubin"), [], arch)
    out["shared_bytes"] = out.pop("static_smem") + (int(dyn.group(1)) if dyn else 0)
    (out["counts"], out["total"], out["loops"],
     out["producer"]) = sass_counts(cuobjdump, os.path.join(work, "tessel.cubin"), arch)
    return out


def load_kernel_module(kfile):
    path = os.path.join(ROOT, "examples", "kernels", kfile)
    spec = importlib.util.spec_from_file_location("k_" + kfile[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tilelang_row(tilelang, nvcc, cuobjdump, kfile, func, params, work, arch="sm_80"):
    mod = load_kernel_module(kfile)
    prim = getattr(mod, func)(**params)
    target = {"kind": "cuda", "arch": arch}
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
    out = nvcc_cubin(nvcc, src, os.path.join(work, "tilelang.cubin"), inc, arch)
    out["shared_bytes"] = out.pop("static_smem") + dyn
    (out["counts"], out["total"], out["loops"],
     out["producer"]) = sass_counts(cuobjdump, os.path.join(work, "tilelang.cubin"), arch)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessel", default=os.path.join(ROOT, "build", "tessel"))
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--cuobjdump", required=True)
    ap.add_argument("--arch", default="sm_80", choices=sorted(CLASSES),
                    help="sm_80 (mma.sync paths) or sm_90a (Tessel's sm90 target: wgmma, warp "
                         "specialisation; TileLang's target arch sm_90a)")
    ap.add_argument("--csv", default="")
    ap.add_argument("--quick", action="store_true", help="M0, FA example and FA1 only")
    ap.add_argument("--only", default="", help="labels starting with this")
    ap.add_argument("--no-tilelang", action="store_true", help="Tessel only (no venv needed)")
    args = ap.parse_args()
    arch = args.arch
    classes = CLASSES[arch]
    if not args.csv:
        name = "codegen_vs_tilelang.csv" if arch == "sm_80" else "codegen_vs_tilelang_sm90a.csv"
        args.csv = os.path.join(ROOT, "bench", "results", name)

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
              "loop_total"] + list(classes) + ["registers", "spill_bytes", "shared_bytes",
                                                "nvcc_s"]
    if arch != "sm_80":
        fields = ["arch"] + fields + ["mma_in_loop", "producer_loop_total"]
    hdr = "%-44s %-17s %6s" + " %6s" * len(classes) + " %5s %6s %7s %7s"
    extra = ("mma", "per mma", "producer") if arch != "sm_80" else ()
    print((hdr + " %8s" * len(extra)) %
          (("kernel", "compiler", "loop") + tuple(c[:6] for c in classes) +
           ("regs", "spills", "smem", "nvcc s") + extra))
    with open(args.csv, "a", newline="") as f:
        w = csv.writer(f)
        if new_file:
            w.writerow(fields)
        for label, kfile, func, params in configs(args.quick):
            if args.only and not label.startswith(args.only):
                continue
            rows = [("tessel", lambda: tessel_row(args.tessel, args.nvcc, args.cuobjdump, kfile,
                                                  params, work, arch))]
            if tilelang is not None:
                rows.append(("tilelang", lambda: tilelang_row(tilelang, args.nvcc,
                                                              args.cuobjdump, kfile, func, params,
                                                              work, arch)))
            totals = {}
            for compiler, fn in rows:
                try:
                    r = fn()
                except Exception as e:  # a failure of one row is reported, the rest still run
                    print("%-44s %-17s failed: %s" % (label, compiler, str(e).splitlines()[0]))
                    continue
                # sm_90a: instructions per tensor-core instruction (the loops' unrolling differs)
                totals[compiler] = (r["total"] if arch == "sm_80"
                                    else r["total"] / max(r["counts"]["mma"], 1))
                # A loop split in several (a causal mask's prefix, diagonal and suffix): one row
                # each, the first (below the diagonal) under the compiler's own name.
                n = len(r["loops"]) or 1
                for i, (c, total) in enumerate(r["loops"] or [(r["counts"], r["total"])]):
                    name = compiler if i == 0 else "%s loop %d/%d" % (compiler, i + 1, n)
                    values = (total,) + tuple(c[x] for x in classes) + (
                        r["registers"], r["spill_bytes"], r["shared_bytes"],
                        "%.2f" % r["nvcc_s"])
                    line = hdr % ((label, name) + values)
                    if extra:
                        line += " %8s %8.2f %8s" % (c["mma"], total / max(c["mma"], 1),
                                                    r["producer"])
                    print(line)
                    row = [date, machine, tessel_version, tl_version, nvcc_version, label, name,
                           total] + [c[x] for x in classes] + [
                               r["registers"], r["spill_bytes"], r["shared_bytes"],
                               "%.3f" % r["nvcc_s"]]
                    if arch != "sm_80":
                        row = [arch] + row + [c["mma"], r["producer"]]
                    w.writerow(row)
                f.flush()
            if len(totals) == 2 and totals["tilelang"]:
                what = ("main-loop instructions" if arch == "sm_80"
                        else "main-loop instructions per HGMMA/HMMA")
                print("%-44s ratio %s tessel/tilelang = %.2f" %
                      (label, what, totals["tessel"] / totals["tilelang"]))
    print("appended to " + args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
