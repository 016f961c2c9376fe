#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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

source scripts/lib/cuda_args.sh

cmake -S . -B "$dir" -DGMT_SANITIZE="$sanitize" -DGMT_WERROR=ON "${cuda_args[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"
