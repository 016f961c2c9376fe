#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds of the preload library side by side: the recorder's own time per event in the CPU-bound
# MLP step (tests/gpu/mlp_step_time.py, GMT_BENCH_MODEL=small), all stacks, measured inside each
# process (GPUMEMTRACE_SELF_TIME) and less the measurement's own clock reads, as gpu-bench.sh's
# cost table. Rounds interleave the libraries; each run is pinned to the same cores. Between
# processes the host moves a step's time by tens of per cent, so wall time is not compared; the
# recorder's share of its own step is; and the trace's bytes over the steps run, to compare formats.
# Usage: scripts/gpu-bench-libraries.sh OUTPUT_DIR NAME=LIBGPUMEMTRACE.so...
# GMT_BENCH_ROUNDS (default 3), GMT_BENCH_CPUS (default 2-5).
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 OUTPUT_DIR NAME=LIBRARY..." >&2; exit 2; }
out=$1
shift
mkdir -p "$out"
. scripts/lib/gpu_build.sh
for spec in "$@"; do
  [ -f "${spec#*=}" ] || { echo "no library at ${spec#*=} (for ${spec%%=*})" >&2; exit 2; }
done
for round in $(seq 1 "${GMT_BENCH_ROUNDS:-3}"); do
  for spec in "$@"; do
    name=${spec%%=*} library=$(realpath "${spec#*=}")
    run="$out/$name.$round"
    mkdir -p "$run"
    LD_PRELOAD="$library" GPUMEMTRACE_SELF_TIME=1 GPUMEMTRACE_STACKS=all GPUMEMTRACE_OUTPUT="$run/" \
      GMT_BENCH_MODEL=small taskset -c "${GMT_BENCH_CPUS:-2-5}" \
      python3 tests/gpu/mlp_step_time.py "$run.json" >"$run.log" 2>&1 || echo "FAIL $name round $round (see $run.log)"
  done
done
python3 - "$out" "$gmt" "${@%%=*}" <<'PY'
import glob, json, os, statistics, sys
sys.path.insert(0, "scripts/lib")
from recorder_cost import corrected, note_of
out, gmt, names = sys.argv[1], sys.argv[2], sys.argv[3:]
print(f"{'library':12} {'round':>5} {'ns/event':>9} {'ns/stack':>9} {'python':>7}"
      f" {'not stacks':>10} {'recorder share':>15} {'trace B/step':>12}")
for name in names:
    shares = []
    for result_path in sorted(glob.glob(f"{out}/{name}.*.json")):
        result = json.load(open(result_path))
        # The traced python process's note (a compiler it ran has a trace of its own).
        notes = [(n, t) for t in glob.glob(f"{result_path[:-5]}/*.gmt") if (n := note_of(gmt, t))]
        if not notes:
            print(f"{name:12} {result_path}: no cost note")
            continue
        note, trace = max(notes, key=lambda nt: nt[0]["events"])
        trace_per_step = os.path.getsize(trace) / result["steps_run"]
        cost = corrected(note, result["steps_run"], result["ms_per_step"])
        shares.append(cost["share"])
        events, taken = note["events"], max(note["stacks"], 1)
        print(f"{name:12} {result_path.rsplit('.', 2)[-2]:>5} {cost['total_ns'] / events:9.0f}"
              f" {cost['stack_ns'] / taken:9.0f} {cost['python_ns'] / taken:7.0f}"
              f" {(cost['total_ns'] - cost['stack_ns']) / events:10.0f} {cost['share']:14.2%}"
              f" {trace_per_step:12.0f}")
    if shares:
        print(f"{name:12} {'median':>5} {'':9} {'':9} {'':7} {'':10} {statistics.median(shares):14.2%}")
PY
rm -f "$out"/*/*.gmt
