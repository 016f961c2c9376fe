#!/usr/bin/env bash
# Configures and builds gpumemtrace. Usage: scripts/build.sh [--sanitize] [BUILD_DIR]
# Default build folder: build/ (build-sanitize/ with --sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=OFF
dir=build
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=ON
  dir=build-sanitize
  shift
fi
dir="${1:-$dir}"

cuda_args=()
if [ -n "${CUDAToolkit_ROOT:-}" ]; then cuda_args+=("-DCUDAToolkit_ROOT=$CUDAToolkit_ROOT"); fi
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ] && [ -z "${CUDAToolkit_ROOT:-}" ]; then
  cuda_args+=("-DCUDAToolkit_ROOT=/usr/local/cuda")
fi

cmake -S . -B "$dir" -DGMT_SANITIZE="$sanitize" "${cuda_args[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"
