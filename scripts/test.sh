#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite twice: a normal build, then
# one with AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/check-format.sh

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
