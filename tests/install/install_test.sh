#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `cmake --install` into a fresh prefix, then the installed gpumemtrace traces a program on the
# simulated GPU and reads its trace: `run` finds the installed preload, with nothing of the build
# tree on any path but the simulated CUDA libraries'.
# Usage: install_test.sh BUILD_DIR FAKECUDA_LIB_DIR WORKLOAD
set -euo pipefail
build=$1 fakecuda=$2 workload=$3
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/gpumemtrace lib/gpumemtrace/libgpumemtrace.so include/gpumemtrace.h \
  share/gpumemtrace/python/gpumemtrace_torch.py share/doc/gpumemtrace/README.md \
  share/doc/gpumemtrace/format/README.md share/doc/gpumemtrace/docs/roles.md; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
# Nothing of the build tree in the installed files' search paths.
readelf -d "$prefix/bin/gpumemtrace" "$prefix/lib/gpumemtrace/libgpumemtrace.so" >"$prefix/dynamic.txt"
if grep -qE "R(UN)?PATH.*$build" "$prefix/dynamic.txt"; then
  echo "FAIL: an installed file's RPATH names the build tree"; exit 1
fi
cd "$prefix"
LD_LIBRARY_PATH="$fakecuda" "$prefix/bin/gpumemtrace" run -o "$prefix/t.%p.gmt" -- "$workload" \
  alloc:a:1048576 free:a >"$prefix/run.log" 2>&1 || { cat "$prefix/run.log"; exit 1; }
trace=$(ls "$prefix"/t.*.gmt)
"$prefix/bin/gpumemtrace" info "$trace" >"$prefix/info.txt"
grep -q "complete (the process exited normally)" "$prefix/info.txt" ||
  { echo "FAIL: the trace is not complete"; "$prefix/bin/gpumemtrace" info "$trace"; exit 1; }
"$prefix/bin/gpumemtrace" dump "$trace" >"$prefix/dump.jsonl"
grep -q "\"$prefix/lib/gpumemtrace/libgpumemtrace.so\"" "$prefix/dump.jsonl" ||
  { echo "FAIL: the traced program did not load the installed preload"; exit 1; }
events=$("$prefix/bin/gpumemtrace" report --json "$trace" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["traces"][0]["events"])')
[ "$events" = 2 ] || { echo "FAIL: expected 2 events, got $events"; exit 1; }
echo "PASS: installed under $prefix, traced $workload: $events events"
