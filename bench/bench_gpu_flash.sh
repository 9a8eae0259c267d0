#!/usr/bin/env bash
# One command for the FlashAttention GPU benchmark: Tessel's FA0-FA4 (mma.sync, and on an sm90
# device the wgmma/TMA/warp-specialised path) against FlashAttention-3. Without a GPU it says so
# and exits 0. With one, it sets up a virtual environment under build/fa3-venv with PyTorch and
# FlashAttention (FlashAttention-3's `flash_attn_interface` when it is already importable there,
# else PyPI's flash-attn-4, whose CuTe DSL kernels run on Hopper; where the machine's own python3
# has PyTorch on the GPU and neither, PyTorch's FlashAttention-2 and cuDNN kernels), times it with
# bench/flash_baseline.py, and runs build/bench/bench_gpu_flash with those times; where the
# baseline cannot be installed or run it prints why and measures Tessel alone.
# Appends to bench/results/gpu_flash.csv (bench/README.md).
#
#   bench/bench_gpu_flash.sh
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/bench/bench_gpu_flash
if [ ! -x "$bin" ]; then
  echo "bench_gpu_flash.sh: $bin is not built (./setup.sh, or cmake --build build --target bench_gpu_flash)"
  exit 2
fi
probe=$("$bin" --probe)
if [ "${probe#gpu: }" = "$probe" ]; then
  echo "bench_gpu_flash: $probe; nothing was run"
  exit 0
fi
echo "bench_gpu_flash.sh: $probe"

venv=build/fa3-venv
log=build/fa3-venv.log
: >"$log"
note=""
python=$venv/bin/python
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null &&
   ! "$python" -c "import flash_attn_interface" 2>/dev/null &&
   ! "$python" -c "import flash_attn.cute" 2>/dev/null; then
  python=python3  # the machine's own PyTorch (flash_baseline.py falls back to its kernels)
elif [ ! -x "$python" ] && ! python3 -m venv "$venv" >>"$log" 2>&1; then
  note="python3 -m venv fails (on Debian: apt-get install python3-venv; $log)"
fi
if [ -z "$note" ] && [ "$python" != python3 ] &&
   ! "$python" -c "import torch; import flash_attn_interface" 2>/dev/null &&
   ! "$python" -c "import torch; import flash_attn.cute" 2>/dev/null &&
   ! "$python" -m pip install --timeout 20 --retries 1 -q torch flash-attn-4 >>"$log" 2>&1; then
  note="pip cannot install torch and flash-attn-4 (no PyPI from this machine? see $log)"
fi
args=()
if [ -z "$note" ]; then
  times=build/flash_baseline.csv
  if "$bin" --presets | "$python" bench/flash_baseline.py "$times" 2>>"$log"; then
    cat "$log"
    args=(--baseline "$times")
  else
    note="bench/flash_baseline.py failed: $(tail -n 1 "$log")"
  fi
fi
[ -n "$note" ] && echo "bench_gpu_flash.sh: no FlashAttention-3 baseline: $note" && args=(--baseline-note "$note")
exec "$bin" "${args[@]}"
