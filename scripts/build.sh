#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds gpumemtrace. Usage: scripts/build.sh [--sanitize | --tsan] [BUILD_DIR [CMAKE_ARG...]]
# Default build folder: build/ (build-sanitize/ with --sanitize, build-tsan/ with --tsan); CMAKE_ARGs
# are passed to cmake. --tsan builds ThreadSanitizer's two test programs only (recorder_tests and
# pipeline_tests): the preload cannot carry TSan's runtime into uninstrumented programs.
# A new folder is configured for Ninja where it is installed (scripts/lib/generator_args.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=OFF
tsan=OFF
targets=()
dir=build
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=ON
  dir=build-sanitize
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
gmt_generator_args "$dir"

cmake -S . -B "$dir" "${generator_args[@]}" -DGMT_SANITIZE="$sanitize" -DGMT_TSAN="$tsan" -DGMT_WERROR=ON \
  "${cuda_args[@]}" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
