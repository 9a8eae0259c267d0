#!/usr/bin/env bash
# Times every paper preset (`tessel list`: GEMM, FlashAttention, Mamba-2, MLA, dequantised
# GEMV/GEMM) at thread level with sampled blocks (--blocks edges and random:8), the rest of the
# grid at tile level, and appends a row per run to
# results/presets.csv: date, machine, load average, kernel, preset, spec, blocks simulated of the
# grid, wall seconds, how it ended (passed, failed, timeout, refused with the reason) and CPU
# seconds (user + system).
#   [SPECS="edges random:8"] bench/bench_presets.sh [BUILD_DIR] [CAP_SECONDS] [KERNEL:PRESET ...]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cap=${2:-600}
shift $(( $# > 2 ? 2 : $# ))
runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
  for p in M0 M1 M2 M3 M4 M5 M6 M7; do runs+=("gemm:$p"); done
  for p in FA0 FA1 FA2 FA3 FA4; do runs+=("flash_attention:$p"); done
  for p in CC0 CC1 CC2 CC3 CC4 CC5; do runs+=("chunk_scan:$p"); done
  for p in CT0 CT1 CT2 CT3 CT4 CT5; do runs+=("chunk_state:$p"); done
  for p in MLA0 MLA1 MLA2 MLA3 MLA4 MLA5; do runs+=("mla_decode:$p"); done
  # The dequantised GEMV presets (m = 1) for every weight format of the paper's dequant figure,
  # and the dequantised GEMM (int4, Fig. 17) at the GEMM shapes.
  for f in int4 uint4 nf4 fp4 int2; do
    for p in V0 V1 V2 V3 V4 V5 V6 V7; do runs+=("dequant_gemv_$f:$p"); done
  done
  for p in M0 M1 M2 M3 M4 M5 M6 M7; do runs+=("dequant_gemm:$p"); done
  # The dequantising GEMM of every weight format at the GEMM shapes, and split-KV MLA decode (two
  # launches).
  for f in uint4 int4 nf4 fp4 int2; do
    for p in M0 M1 M2 M3 M4 M5 M6 M7; do runs+=("dequant_gemm_$f:$p"); done
  done
  for p in MLA0 MLA1 MLA2 MLA3 MLA4 MLA5; do runs+=("mla_decode_split:$p"); done
fi
csv=bench/results/presets.csv
[ -f "$csv" ] || echo "date,machine,cores,load_avg,kernel,preset,blocks_spec,simulated,grid_blocks,wall_s,result,cpu_s" >"$csv"
machine=$(grep -m1 "model name" /proc/cpuinfo | sed 's/.*: //; s/ [0-9]*-Core.*//')
printf "%-16s %-5s %-9s %9s %9s %9s %s\n" kernel preset blocks simulated wall_s cpu_s result
for run in "${runs[@]}"; do
  kernel=${run%%:*} preset=${run#*:}
  for spec in ${SPECS:-edges random:8}; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    start=$(date +%s.%N)
    out=$(/usr/bin/time -f "%U %S" -o /tmp/bench_presets_cpu.$$ timeout "$cap" "$build/tessel" \
          run "$kernel" -D "preset=$preset" --level thread --blocks "$spec" --json \
          2>/tmp/bench_presets_err.$$)
    rc=$?
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    # CPU seconds (user + system) of the run: on a loaded machine the wall time mostly measures
    # the other processes; on an idle 2-core one, wall is about cpu / 2 for the parallel parts.
    cpu=$(awk 'END { printf "%.1f", $1 + $2 }' /tmp/bench_presets_cpu.$$ 2>/dev/null)
    rm -f /tmp/bench_presets_cpu.$$
    read -r simulated total result < <(RC=$rc OUT="$out" ERR="$(cat /tmp/bench_presets_err.$$)" python3 -c '
import json, os
rc = int(os.environ["RC"])
if rc == 124:
    print("- - timeout"); raise SystemExit
try:
    j = json.loads(os.environ["OUT"])
except ValueError:
    j = {}
s = j.get("sampled") or {}
if "error" in j:
    why = "refused-memory" if "memory" in j["error"] else "error"
    print("- -", why); raise SystemExit
if "launches" in s:  # a kernel of several launches: its blocks summed over the launches
    s = {k: sum(l[k] for l in s["launches"]) for k in ("simulated_count", "total")}
print(s.get("simulated_count", "-"), s.get("total", "-"), "passed" if j.get("passed") else "FAILED")
')
    rm -f /tmp/bench_presets_err.$$
    printf "%-16s %-5s %-9s %9s %9.1f %9s %s\n" "$kernel" "$preset" "$spec" "$simulated/$total" "$wall" \
      "$cpu" "$result"
    echo "$(date -u +%F),\"$machine\",$(nproc),$load,$kernel,$preset,$spec,$simulated,$total,$wall,$result,$cpu" >>"$csv"
  done
done
