#!/usr/bin/env bash
# Installs Tessel's Debian build dependencies when missing, then configures and builds into build/.
set -euo pipefail
cd "$(dirname "$0")"

packages=(cmake ninja-build g++ libz3-dev libboost-graph-dev libeigen3-dev doctest-dev
          libcli11-dev nlohmann-json3-dev libzip-dev libxml2-dev ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# The AMD device compiler (clang with the AMDGPU backend that knows gfx942) for the codegen
# tests; optional: without it those tests print a skip. TESSEL_NO_AMD_CLANG=1 leaves it out.
if [ -z "${TESSEL_NO_AMD_CLANG:-}" ] && ! command -v clang++-19 >/dev/null 2>&1; then
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  if $sudo_cmd apt-get install -y -q --no-install-recommends clang-19 >/dev/null 2>&1 ||
     { $sudo_cmd apt-get update -q >/dev/null 2>&1 &&
       DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends clang-19 >/dev/null 2>&1; }; then
    echo "setup: installed clang-19 (HIP device code for gfx90a/gfx942)"
  else
    echo "setup: clang-19 is not available here; the HIP compile tests will print a skip"
  fi
fi

# The Python package (python/, docs/python.md) in the virtual environment build/venv, with
# nanobind, scikit-build-core, NumPy and pytest from PyPI. Optional: without python3, its venv
# module or PyPI, setup says why, the command line builds as before and the Python tests print a
# skip. TESSEL_NO_PYTHON=1 leaves it out.
venv=build/venv
python_reason=""
mkdir -p build
if [ -n "${TESSEL_NO_PYTHON:-}" ]; then
  python_reason="TESSEL_NO_PYTHON is set"
elif ! command -v python3 >/dev/null 2>&1; then
  python_reason="python3 is not installed"
elif [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv" >/dev/null 2>&1; then
  rm -rf "$venv"
  python_reason="python3 -m venv fails (on Debian: apt-get install python3-venv)"
elif ! "$venv/bin/python" -c "import nanobind, scikit_build_core, numpy, pytest" 2>/dev/null &&
     ! "$venv/bin/python" -m pip install -q nanobind scikit-build-core numpy pytest >/dev/null 2>&1; then
  python_reason="pip cannot install nanobind, scikit-build-core, numpy and pytest (no PyPI?)"
fi
python_args=(-DTESSEL_PYTHON=OFF)
if [ -z "$python_reason" ]; then
  rm -f build/python-skipped.txt
  python_args=(-DTESSEL_PYTHON=ON -DPython_EXECUTABLE="$PWD/$venv/bin/python")
else
  echo "setup: the Python package is skipped: $python_reason"
  echo "$python_reason" > build/python-skipped.txt
fi

build_type=${TESSEL_BUILD_TYPE:-Release}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "${python_args[@]}" \
  ${TESSEL_CMAKE_ARGS:-} >/dev/null
cmake --build build --parallel "$(nproc)"

# `pip install .` into the venv, again only when a source changed since the last install (the
# objects come from ccache: build-wheel/ sits beside build/).
if [ -z "$python_reason" ]; then
  stamp=$venv/.tessel-installed
  if [ ! -f "$stamp" ] || [ -n "$(find CMakeLists.txt pyproject.toml core interp sim verify codegen \
       examples tools python -newer "$stamp" -print -quit)" ]; then
    touch "$stamp.new"
    # The compiler of build/ (scikit-build-core would otherwise take Python's, g++ where build/
    # has c++: ccache keys on the name, and every object would be compiled a second time).
    cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/CMakeCache.txt)
    if CXX="$cxx" "$venv/bin/python" -m pip install -q --no-build-isolation . \
         >build/pip-install.log 2>&1; then
      mv "$stamp.new" "$stamp"
      echo "setup: installed the tessel Python package into $venv"
    else
      rm -f "$stamp.new"
      echo "setup: warning: pip install . failed (build/pip-install.log); the Python tests use" \
           "the module of build/"
    fi
  fi
fi
