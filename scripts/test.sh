#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds, and runs the whole test suite twice: a normal build, then
# one with AddressSanitizer and UndefinedBehaviorSanitizer; then fuzzes the trace reader and the
# replay for GMT_FUZZ_SECONDS (default 60; 0 skips it) with scripts/fuzz.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/check-format.sh

source scripts/lib/cuda_args.sh

for mode in normal sanitize; do
  echo "=== $mode build ==="
  if [ "$mode" = sanitize ]; then
    scripts/build.sh --sanitize
    dir=build-sanitize
  else
    scripts/build.sh
    dir=build
  fi
  echo "=== $mode tests ==="
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" --timeout 300
done

# The recorder's concurrency tests (threads, the sampler, phases) under ThreadSanitizer. Only the
# unit tests: the preload cannot carry TSan's runtime into uninstrumented programs.
echo "=== thread sanitizer: recorder ==="
cmake -S . -B build-tsan -DGMT_TSAN=ON -DGMT_WERROR=ON "${cuda_args[@]}" >/dev/null
cmake --build build-tsan -j "$(nproc)" --target unit_tests
TSAN_OPTIONS="halt_on_error=1" build-tsan/bin/unit_tests

fuzz_seconds="${GMT_FUZZ_SECONDS:-60}"
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "=== fuzzing (${fuzz_seconds}s) ==="
  scripts/fuzz.sh "$fuzz_seconds"
fi
