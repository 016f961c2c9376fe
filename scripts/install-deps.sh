#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what building and testing gpumemtrace needs, from Debian's packages. Idempotent:
# installs only what is missing, and touches apt only then.
# Usage: scripts/install-deps.sh [--build]   (--build: only what building needs, as the demo)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config python3
  libunwind-dev libdw-dev libzstd-dev zlib1g-dev
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
test_packages=(
  clang-format
  clang libclang-rt-dev # libFuzzer, for scripts/fuzz.sh
  protobuf-compiler gzip  # the tests decode the pprof export with protoc
  chromium  # the HTML report's test loads the page in headless Chromium
  tmux  # the test of `top`'s interactive view runs it in a terminal
  valgrind  # scripts/code-lines.sh counts the lines of code an event runs
  # scripts/build-wheel.sh, and its test: the wheel installed into a venv, the pytest plugin under
  # xdist's workers, the API's tables as DataFrames, a notebook kernel started from its spec
  python3-build python3-setuptools python3-wheel python3-venv patchelf
  python3-pytest python3-pytest-xdist python3-pandas python3-jupyter-client python3-ipykernel
)

if [ "${1:-}" != "--build" ]; then packages+=("${test_packages[@]}"); fi

missing=()
for p in "${packages[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The CUDA headers come from the CUDA toolkit, which Debian's main archive does not carry.
cuda_root="${CUDAToolkit_ROOT:-${CUDA_HOME:-/usr/local/cuda}}"
if [ ! -f "$cuda_root/include/cuda.h" ]; then
  echo "install-deps: the CUDA toolkit headers are missing ($cuda_root/include/cuda.h)." >&2
  echo "install-deps: install the CUDA toolkit, or set CUDAToolkit_ROOT to where it is." >&2
  exit 1
fi
echo "install-deps: all dependencies present"
