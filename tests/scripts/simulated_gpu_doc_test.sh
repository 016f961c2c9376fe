#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# docs/simulated-gpu.md's worked example, run as written (the block after its
# `<!-- example: simulated-gpu -->` mark), in a copy of the build's layout: its figures are the
# ones the page states.
# Usage: simulated_gpu_doc_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source=$1 build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# The example names build/...: the build under test stands in for it.
ln -s "$build" "$work/build"
awk '/<!-- example: simulated-gpu -->/ { mark = 1; next }
     mark == 1 && /^```$/ { mark = 2; next }
     mark == 2 && /^```$/ { mark = 3 }
     mark == 2 { print }' "$source/docs/simulated-gpu.md" >"$work/example.sh"
[ -s "$work/example.sh" ] || fail "no example found in docs/simulated-gpu.md"
(cd "$work" && env -u LD_PRELOAD bash -euo pipefail example.sh) >"$work/out.txt" 2>&1 ||
  { cat "$work/out.txt"; fail "the example did not run"; }
grep -qx "ran on the simulated GPU" "$work/out.txt" || { cat "$work/out.txt"; fail "the program's line"; }
grep -q "peak of device 0: 96.0 MiB" "$work/out.txt" || { cat "$work/out.txt"; fail "the peak"; }
grep -qE "^ +sim_example\.py:5\b|<module> +sim_example\.py:5$" "$work/out.txt" ||
  { cat "$work/out.txt"; fail "the peak's line"; }
grep -qE "64\.0 MiB in 1 +unfreed" "$work/out.txt" || { cat "$work/out.txt"; fail "the leak"; }
grep -qE "<module> +sim_example\.py:4$" "$work/out.txt" || { cat "$work/out.txt"; fail "the leak's line"; }
echo "PASS: docs/simulated-gpu.md's example"
