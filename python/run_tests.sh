#!/usr/bin/env bash
# CTest's python_tests: pytest over python/tests and examples/python in build/venv, importing the
# package this build tree built (build/python/tessel). Exit 77 (CTest: skipped) with the reason
# when Python is not set up here.
set -uo pipefail
build=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
if [ -f "$build/python-skipped.txt" ]; then
  echo "python_tests skipped: $(cat "$build/python-skipped.txt") (see setup.sh)"
  exit 77
fi
py=$build/venv/bin/python
if [ ! -x "$py" ]; then
  echo "python_tests skipped: no virtual environment $build/venv (./setup.sh creates it)"
  exit 77
fi
if compgen -G "$build/python/tessel/_tessel*" >/dev/null; then
  export PYTHONPATH=$build/python
elif ! "$py" -c "import tessel" 2>/dev/null; then
  echo "python_tests skipped: build tree configured without -DTESSEL_PYTHON=ON and no tessel" \
       "package installed in $build/venv (./setup.sh does both)"
  exit 77
fi
export PYTHONDONTWRITEBYTECODE=1
exec "$py" -m pytest -q -p no:cacheprovider python/tests examples/python
