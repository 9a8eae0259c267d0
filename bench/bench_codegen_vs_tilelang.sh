#!/usr/bin/env bash
# Tessel's generated code beside TileLang's for the same kernel files (examples/kernels/
# gemm.py, flash_attention.py), on sm_80 (mma.sync) or sm_90a (Tessel's sm90 target: wgmma,
# warp specialisation; TileLang's target arch sm_90a): main-loop SASS instructions by class,
# registers, spills, shared memory, nvcc time (bench/codegen_vs_tilelang.py). TileLang, cuobjdump
# and nvdisasm come from PyPI into build/tilelang-venv, as benchmark tooling only (the build never
# uses them); without them the script prints why and exits 0.
#   bench/bench_codegen_vs_tilelang.sh [--arch sm_80|sm_90a] [--quick] [--only LABEL] [--no-tilelang]
set -uo pipefail
cd "$(dirname "$0")/.."

skip() { echo "bench_codegen_vs_tilelang: skipped: $*"; exit 0; }

nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || skip "nvcc is not installed (looked on PATH and in /usr/local/cuda/bin)"
[ -x build/tessel ] || skip "build/tessel is missing (build Tessel first: ./setup.sh)"
command -v python3 >/dev/null || skip "python3 is not installed"

venv=build/tilelang-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >/dev/null 2>&1 || { rm -rf "$venv"; skip "python3 -m venv fails"; }
fi
if ! "$venv/bin/python" -c "import tilelang" >/dev/null 2>&1; then
  echo "bench_codegen_vs_tilelang: installing tilelang 0.1.15 from PyPI into $venv (torch included, ~4 GB)"
  "$venv/bin/pip" install -q "tilelang==0.1.15" >/dev/null 2>&1 ||
    skip "pip cannot install tilelang==0.1.15 into $venv (no PyPI?)"
fi

# cuobjdump (and the nvdisasm it calls): the toolkit's, else the PyPI packages'.
tools=/usr/local/cuda/bin
if [ ! -x "$tools/cuobjdump" ] || [ ! -x "$tools/nvdisasm" ]; then
  tools=$("$venv/bin/python" -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'bin'))" 2>/dev/null)
  if [ ! -x "$tools/cuobjdump" ] || [ ! -x "$tools/nvdisasm" ]; then
    "$venv/bin/pip" install -q nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >/dev/null 2>&1 ||
      skip "no cuobjdump/nvdisasm in /usr/local/cuda/bin and pip cannot install them"
    tools=$("$venv/bin/python" -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'bin'))")
  fi
fi
[ -x "$tools/cuobjdump" ] || skip "cuobjdump not found after installing nvidia-cuda-cuobjdump"

PATH="$tools:$PATH" exec "$venv/bin/python" bench/codegen_vs_tilelang.py --nvcc "$nvcc" \
  --cuobjdump "$tools/cuobjdump" "$@"
