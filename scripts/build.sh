#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds gpumemtrace. Usage: scripts/build.sh [--sanitize] [BUILD_DIR [CMAKE_ARG...]]
# Default build folder: build/ (build-sanitize/ with --sanitize); CMAKE_ARGs are passed to cmake.
# A new folder is configured for Ninja where it is installed (scripts/lib/generator_args.sh).
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
shift $(($# > 0 ? 1 : 0))

source scripts/lib/cuda_args.sh
source scripts/lib/generator_args.sh
gmt_generator_args "$dir"

cmake -S . -B "$dir" "${generator_args[@]}" -DGMT_SANITIZE="$sanitize" -DGMT_WERROR=ON \
  "${cuda_args[@]}" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
