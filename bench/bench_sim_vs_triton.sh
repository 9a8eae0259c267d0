#!/usr/bin/env bash
# Benchmark: Tessel's tile and thread levels (every detector on) against Triton's CPU interpreter
# (TRITON_INTERPRET=1) on the same fp16 GEMM at 128x128x32 tiles (bench/triton_gemm.py), runs
# interleaved, medians and ratios; appends to bench/results/sim_vs_triton.csv. Triton and torch
# (the interpreter takes torch tensors) come from PyPI into build/venv-triton: benchmark tooling
# only, never a dependency of the build. Prints a reason and exits 0 when they cannot be installed.
#
#   bench/bench_sim_vs_triton.sh [BUILD_DIR] [REPS] [N ...]     (defaults: build 5 256 512 1024)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(256 512 1024)

binary=$build/bench/bench_sim_vs_triton
if [ ! -x "$binary" ]; then
  echo "bench_sim_vs_triton: $binary is missing; build it first (cmake --build $build --target bench_sim_vs_triton)"
  exit 2
fi
venv=$build/venv-triton
skip() { echo "bench_sim_vs_triton: skipped: $1"; exit 0; }
command -v python3 >/dev/null 2>&1 || skip "python3 is not installed"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >/dev/null 2>&1 || { rm -rf "$venv"; skip "python3 -m venv fails (apt-get install python3-venv)"; }
fi
if ! "$venv/bin/python" -c "import triton, torch, numpy" 2>/dev/null; then
  echo "bench_sim_vs_triton: installing triton, torch and numpy from PyPI into $venv"
  "$venv/bin/python" -m pip install -q triton torch numpy >"$build/venv-triton.log" 2>&1 ||
    skip "pip cannot install triton, torch and numpy (no PyPI?); see $build/venv-triton.log"
fi
export BENCH_LABEL=${BENCH_LABEL:-$(git describe --always --dirty 2>/dev/null || echo unknown)}
TRITON_INTERPRET=1 "$venv/bin/python" bench/triton_gemm.py "$binary" bench/results/sim_vs_triton.csv \
  "$reps" "${sizes[@]}"
