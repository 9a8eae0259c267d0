#!/usr/bin/env bash
# Everything a machine with an NVIDIA GPU is used for, in one command: every built-in example and
# every kernel of examples/kernels/*.py run with `tessel run --device cuda` once per NVIDIA lowering
# the GPU runs (sm80, and sm90 on a 9.x GPU), each compared with the tile level and the reference
# on the same inputs; then the GPU benchmarks: FlashAttention against its baseline (bench_gpu_flash.sh), GEMM
# against cuBLAS (bench_gpu_gemm), every workload at the paper's sizes (bench_gpu_workloads).
# Without a GPU it says why and exits 0.
#
#   bench/gpu_session.sh [OUTDIR] [quick]
#
# OUTDIR (default build/gpu_session) receives correctness.csv (one row per kernel and lowering:
# status, passed, max_abs_err, median_ms, compile_s; also appended to
# bench/results/gpu_correctness.csv), failures.txt (what each run that did not pass printed) and
# log.txt; the benchmarks append to bench/results/gpu_*.csv as they always do. `quick` runs the
# benchmarks' quick sets. The correctness runs go 8 at a time (their kernel times are not
# benchmarks); the benchmarks run one at a time. Each step has a time limit
# (GPU_SESSION_LIMIT_S, default 150 s a benchmark) so one hung kernel cannot eat the session.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu_session}
quick=${2:-}
limit=${GPU_SESSION_LIMIT_S:-150}
tessel=${TESSEL:-build/tessel}
mkdir -p "$out"
log=$out/log.txt
: >"$log"
say() { echo "$@" | tee -a "$log"; }

probe=$("$tessel" run softmax --device cuda --repeats 1 2>&1 >/dev/null)
if [ -n "$probe" ] && [ "${probe#*cannot run on a GPU here}" != "$probe" ]; then
  say "gpu_session: no GPU to run on (${probe#*here: }); nothing was run"
  exit 0
fi
{ nvidia-smi -L; nvcc --version | tail -n 2; } 2>&1 | tee -a "$log"

# The kernels: built-in examples (the bug_* ones are wrong on purpose; a deadlock one would hang),
# then every kernel of every TileLang file.
cases=()
for name in $("$tessel" list | sed -n 's/^\([a-z_0-9]*\) — .*/\1/p'); do
  case $name in bug_*) ;; *) cases+=("$name|") ;; esac
done
for f in examples/kernels/*.py; do
  case $f in */bug_*) continue ;; esac
  listing=$("$tessel" list "$f")
  if [ "$(head -n 1 <<<"$listing")" = "$f: 1 kernel" ]; then
    cases+=("$f|")
  else
    for k in $(sed -n 's/^\([A-Za-z_0-9]*\) (line [0-9]*)$/\1/p' <<<"$listing"); do
      cases+=("$f|$k")
    done
  fi
done
targets=(sm80)
"$tessel" run softmax --device cuda --target sm90 --repeats 1 >/dev/null 2>&1 && targets+=(sm90)
say "gpu_session: ${#cases[@]} kernels x lowerings ${targets[*]}"

# Sizes for the kernels whose sizes come from host code Tessel does not run (argparse), small
# ones, so that every kernel runs.
defines_for() {
  case $1 in
    */convolution.py) echo "-D N=2 -D C=64 -D H=16 -D W=16 -D F=64 -D K=3 -D S=1 -D D=1 -D P=1" ;;
    */fp8.py) [ "$2" = gemm_fp8 ] && echo "-D M=256 -D N=256 -D K=256" ;;
    */gemv.py) [ "$2" = gemv_parallel ] && echo "-D N=1024 -D K=1024" ;;
    */topk.py) [ "$2" = topk_gating ] && echo "-D M=320 -D N=128" ;;
  esac
  return 0
}
export -f defines_for

runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
i=0
for c in "${cases[@]}"; do
  for t in "${targets[@]}"; do
    printf '%s|%s|%s\n' "$i" "$t" "$c"
    i=$((i + 1))
  done
done | xargs -P 8 -I{} bash -c '
  IFS="|" read -r n t kernel choice <<<"{}"
  extra=($(defines_for "$kernel" "$choice")); [ -n "$choice" ] && extra+=(--kernel "$choice")
  timeout 120 '"$tessel"' run "$kernel" "${extra[@]}" --device cuda --target "$t" --repeats 3 \
    --json >'"$runs"'/$n.json 2>'"$runs"'/$n.err
  echo "$? $t $kernel $choice" >'"$runs"'/$n.status'

python3 - "$runs" "$out" bench/results/gpu_correctness.csv <<'EOF' | tee -a "$log"
import datetime, json, os, sys
runs, out, results = sys.argv[1], sys.argv[2], sys.argv[3]
today, device = datetime.date.today().isoformat(), ""
rows, failures, counts = [], [], {}
for n in sorted((int(f[:-7]) for f in os.listdir(runs) if f.endswith(".status"))):
    rc, target, kernel, *choice = open(f"{runs}/{n}.status").read().split()
    name = kernel + (":" + choice[0] if choice else "")
    err = open(f"{runs}/{n}.err").read().strip()
    try:
        j = json.load(open(f"{runs}/{n}.json"))
    except ValueError:
        j = {}
    worst = max((o["max_abs_err"] for o in j.get("outputs", [])), default="")
    device = j.get("device", device)
    # FAILED: the GPU's outputs differ; refused: an error before any comparison (a usage
    # error, exit 2, or the kernel's, exit 1: a Hopper-only kernel lowered for sm80, say).
    compared = bool(j.get("outputs"))
    state = {"0": "passed", "124": "TIMEOUT"}.get(rc, "FAILED" if compared else "refused")
    counts[state] = counts.get(state, 0) + 1
    rows.append(f'{name},{target},{state},{j.get("passed", "")},{worst},'
                f'{j.get("median_ms", "")},{j.get("compile_seconds", "")}')
    if state != "passed":
        failures.append(f"== {name} --target {target}: {state}\n{err}\n{json.dumps(j.get('outputs', ''))}\n")
header = "date,device,kernel,target,status,passed,max_abs_err,median_ms,compile_s\n"
rows = [f'{today},"{device}",{r}' for r in rows]
open(f"{out}/correctness.csv", "w").write(header + "\n".join(rows) + "\n")
new_file = not os.path.exists(results)
with open(results, "a") as f:
    f.write((header if new_file else "") + "\n".join(rows) + "\n")
open(f"{out}/failures.txt", "w").write("\n".join(failures))
print("gpu_session: correctness", ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
for f in failures:
    print(f.splitlines()[0])
EOF

step() {
  say "== $* (limit ${limit} s)"
  timeout "$limit" "$@" 2>&1 | tee -a "$log"
  say "== exit ${PIPESTATUS[0]}"
}
step bench/bench_gpu_flash.sh
step build/bench/bench_gpu_gemm quick
step build/bench/bench_gpu_workloads $quick
exit 0
