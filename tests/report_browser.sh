#!/usr/bin/env bash
# Loads a `tessel report` page in a headless Chromium from Debian's packages, takes a screenshot
# and fails on any message in the page's console (a blocked external load, a script error — the
# page has neither). Exit 77 (CTest: skipped) with the reason when no Chromium is installed.
#   tests/report_browser.sh BUILD_DIR SOURCE_DIR [PNG]
set -u
build=$1 src=$2 png=${3:-}
browser=""
for b in chromium-headless-shell chromium chromium-browser; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
  echo "SKIP: no headless Chromium here (apt-get install chromium-headless-shell)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/tessel" report "$src/examples/kernels/gemm_row_major.py" -D M=128 -D N=128 -D K=64 \
  --workers 1 -o "$work/report.html" >"$work/tessel.txt" 2>&1
status=$?
if [ "$status" -ne 1 ]; then  # 1: the page shows the failed conflict-freedom proofs
  echo "FAIL: tessel report exited $status, expected 1"; cat "$work/tessel.txt"; exit 1
fi
shot=${png:-$work/report.png}
timeout 20 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --enable-logging=stderr --v=0 --window-size=1700,1900 --screenshot="$shot" \
  "file://$work/report.html" >"$work/browser.txt" 2>&1
status=$?
if [ "$status" -ne 0 ]; then
  echo "FAIL: $browser exited $status"; cat "$work/browser.txt"; exit 1
fi
if grep -q ":CONSOLE" "$work/browser.txt"; then
  echo "FAIL: the page wrote to the browser console:"; grep ":CONSOLE" "$work/browser.txt"; exit 1
fi
if [ ! -s "$shot" ] || [ "$(head -c 4 "$shot" | tail -c 3)" != "PNG" ]; then
  echo "FAIL: no PNG screenshot at $shot"; cat "$work/browser.txt"; exit 1
fi
echo "OK: $browser loaded the report without console messages; screenshot $(stat -c %s "$shot") bytes"
