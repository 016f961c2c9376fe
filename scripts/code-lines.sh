#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The lines of code an event's path runs in the preload library, per event, for each library
# given (default: build/lib/libgpumemtrace.so), under callgrind on the simulated driver:
#   blocks, no stacks  a caching allocator's block events (workload_cached_training)
#   blocks, stacks     the same, with native stacks (one event in three takes one)
#   python, CDLL       cudaMalloc/cudaFree pairs from ten Python calls (tests/bench/python_overhead.py)
# A traced program's own work between two events pushes our code out of the core's first caches,
# so these lines, fetched again at each event (and the pages they lie on, whose translations go
# too), are much of what an event costs on a real host
# (docs/benchmarks.md); instructions are counted beside them. Needs valgrind and the build in
# build/ (scripts/build.sh). Usage: scripts/code-lines.sh [LIBRARY...]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "code-lines: valgrind is not installed" >&2; exit 1; }
[ $# -gt 0 ] || set -- build/lib/libgpumemtrace.so
fake=build/fakecuda/lib
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python=$(python3 -c 'import sys; print(sys.executable)')  # not a shim, which valgrind would trace

measure() {  # measure LIBRARY NAME THRESHOLD ENV... -- COMMAND...
  local library=$1 name=$2 threshold=$3
  shift 3
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  if ! env "${env[@]}" GPUMEMTRACE_SAMPLE_MS=0 GPUMEMTRACE_OUTPUT="$scratch/trace.gmt" \
    LD_PRELOAD="$library" LD_LIBRARY_PATH="$fake" \
    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$scratch/profile" "$@" \
    >"$scratch/run.log" 2>&1; then
    echo "code-lines: $name failed under valgrind:" >&2
    tail -n 20 "$scratch/run.log" >&2
    exit 1
  fi
  # Events: the records the hooks wrote (allocations, frees, block events...), not definitions.
  local events
  events=$(build/bin/gpumemtrace info --json "$scratch/trace.gmt" | python3 -c '
import json, sys
records = json.load(sys.stdin)["records"]
print(sum(records.get(k, 0) for k in ("alloc", "free", "alloc_failed", "block", "map", "unmap", "pool")))')
  rm -f "$scratch/trace.gmt"
  if [ "$events" -eq 0 ]; then
    echo "code-lines: $name recorded no events (see GPUMEMTRACE_* above)" >&2
    exit 1
  fi
  printf '%-20s %8d events ' "$name" "$events"
  python3 scripts/lib/code_lines.py "$scratch/profile" "$library" "$events" "$threshold" | sed -n 1p
}

for library in "$@"; do
  library=$(realpath "$library")
  echo "== $library"
  measure "$library" "blocks, no stacks" 0.5 GPUMEMTRACE_STACKS=none -- \
    build/workloads/workload_cached_training 2000
  measure "$library" "blocks, stacks" 0.3 GPUMEMTRACE_STACKS=native -- \
    build/workloads/workload_cached_training 2000
  measure "$library" "python, CDLL" 0.4 GPUMEMTRACE_STACKS=all -- \
    "$python" tests/bench/python_overhead.py "$fake/libcudart.so.13" 2000 CDLL
done
