#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds gpumemtrace. Usage: scripts/build.sh [--sanitize | --tsan] [BUILD_DIR [CMAKE_ARG...]]
# --sanitize builds with clang: it compiles that build in two thirds of GCC's time (ninja's log:
# 663 CPU-s against 1,000), and the normal build and --tsan's keep the system's compiler (GCC), so
# CI builds the code with both. (Clang's ThreadSanitizer hangs in recorder_tests' fork test.)
# Default build folder: build/ (build-sanitize/ with --sanitize, build-tsan/ with --tsan); CMAKE_ARGs
# are passed to cmake. --tsan builds ThreadSanitizer's two test programs only (recorder_tests and
# pipeline_tests): the preload cannot carry TSan's runtime into uninstrumented programs.
# A new folder is configured for Ninja where it is installed (scripts/lib/generator_args.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=OFF
tsan=OFF
targets=()
compiler_args=()
dir=build
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=ON
  dir=build-sanitize
  compiler_args=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
  shift
elif [ "${1:-}" = "--tsan" ]; then
  tsan=ON
  dir=build-tsan
  targets=(--target recorder_tests pipeline_tests)
  shift
fi
dir="${1:-$dir}"
shift $(($# > 0 ? 1 : 0))

source scripts/lib/cuda_args.sh
source scripts/lib/generator_args.sh
if ((${#compiler_args[@]})); then
  if ! command -v clang++ >/dev/null; then
    echo "build: clang++ is missing (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
  # CMake keeps a folder's first compiler: one configured with another is configured anew.
  if [ -f "$dir/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "$dir/CMakeCache.txt"; then
    echo "build: $dir was configured with another compiler; configuring it anew with clang" >&2
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
fi
gmt_generator_args "$dir"

cmake -S . -B "$dir" "${generator_args[@]}" "${compiler_args[@]}" -DGMT_SANITIZE="$sanitize" -DGMT_TSAN="$tsan" -DGMT_WERROR=ON \
  "${cuda_args[@]}" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
