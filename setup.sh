#!/usr/bin/env bash
# Installs Tessel's Debian build dependencies when missing, then configures and builds into build/.
set -euo pipefail
cd "$(dirname "$0")"

packages=(cmake ninja-build g++ libz3-dev libboost-graph-dev libeigen3-dev doctest-dev
          libcli11-dev nlohmann-json3-dev libzip-dev)
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

build_type=${TESSEL_BUILD_TYPE:-Release}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" ${TESSEL_CMAKE_ARGS:-} >/dev/null
cmake --build build --parallel "$(nproc)"
