#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak test of `gpumemtrace top` on a bounded trace (issue #43): a 32-thread program
# (tests/workloads/bounded_history.cpp: memory held from the start, churn, a slow leak growing
# all along) traced with `run --max-size` on the simulated CUDA stack for ten minutes, watched by
# `top --json` all along. Checks that the file never holds more than its bound, and that top's
# last frame says what `report` says of the finished trace: the bytes and allocations live at
# the end, the failed allocations, and a peak no lower than report's (report sees the history
# the trace kept; top, watching from the start, may have seen an older, higher one). Counts the
# frames in which top said it fell behind. Not in CI: it takes the time it is given.
#
# Usage: scripts/soak-top.sh
#   GMT_SOAK_SECONDS   how long the program runs (default 600; approximate, from a calibration)
#   GMT_SOAK_MAX_SIZE  the trace's bound (default 1MiB)
#   GMT_SOAK_THREADS   the program's threads (default 32)
#   GMT_SOAK_LEAKS     the buffers the program leaks over the whole run, spread evenly over its
#                      threads and time (default 1024: the live set stays within what a 1 MiB
#                      bound's checkpoints hold; docs/soak.md)
#   GMT_BUILD_DIR      an existing build with gpumemtrace, the preload, the simulated CUDA stack
#                      and workload_bounded_history (default: build-soak, built here)
# Exit status 0 when every check holds; the figures are printed either way.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${GMT_SOAK_SECONDS:-600}"
max_size="${GMT_SOAK_MAX_SIZE:-1MiB}"
threads="${GMT_SOAK_THREADS:-32}"
leaks="${GMT_SOAK_LEAKS:-1024}"
dir="${GMT_BUILD_DIR:-build-soak}"

if [ -z "${GMT_BUILD_DIR:-}" ]; then
  source scripts/lib/cuda_args.sh
  echo "soak-top: building in $dir" >&2
  cmake -S . -B "$dir" "${cuda_args[@]}" >/dev/null
  cmake --build "$dir" -j "$(nproc)" --target gpumemtrace gpumemtrace_preload \
    workload_bounded_history fakecuda_nvml >/dev/null
fi

cli="$(realpath "$dir/bin/gpumemtrace")"
preload="$(realpath "$(ls "$dir"/lib/libgpumemtrace.so)")"
workload="$(realpath "$(find "$dir" -name workload_bounded_history -type f -perm -u+x | sed -n 1p)")"
fakecuda="$(realpath "$dir/fakecuda/lib")"
bound=$(python3 - "$max_size" <<'PY'
import re, sys
m = re.fullmatch(r"(\d+(?:\.\d*)?)\s*(B|K|KiB|kB|KB|M|MiB|MB|G|GiB|GB)?", sys.argv[1])
if not m:
    sys.exit("soak-top: GMT_SOAK_MAX_SIZE must be a size such as 1MiB")
units = {None: 1, "B": 1, "K": 1 << 10, "KiB": 1 << 10, "kB": 1000, "KB": 1000, "M": 1 << 20,
         "MiB": 1 << 20, "MB": 10**6, "G": 1 << 30, "GiB": 1 << 30, "GB": 10**9}
print(int(float(m.group(1)) * units[m.group(2)]))
PY
)

scratch="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT

# The program under `run`, as a user runs it; the simulated GPU large enough for its leaks.
traced() {
  env LD_LIBRARY_PATH="$fakecuda" FAKECUDA_DEVICE_MEMORY=$((64 << 30)) \
    "$cli" run --max-size "$max_size" -o "$1" -- "$workload" "$2" threads "$threads" \
    "$(leak_every "$2")"
}
# Iterations per thread between two leaks, for ITERATIONS in all to leak about $leaks buffers.
leak_every() {
  python3 -c "import sys; i, t, l = map(int, sys.argv[1:]); print(max(1, (i // t) // max(1, l // t)))" \
    "$1" "$threads" "$leaks"
}

# How many iterations make the run last about $seconds: a traced run of 20,000 per thread, timed.
calibration=$((threads * 20000))
start=$(date +%s.%N)
traced "$scratch/calibrate.gmt" "$calibration" >/dev/null 2>&1
took=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$(date +%s.%N)")
iterations=$(python3 -c "import sys; print(max(int(sys.argv[1]), int(float(sys.argv[1]) * float(sys.argv[3]) / float(sys.argv[2]))))" \
  "$calibration" "$took" "$seconds")
echo "soak-top: $threads threads, $iterations iterations (about ${seconds} s), a leak every $(leak_every "$iterations") iterations of each thread, bound $max_size ($bound bytes)" >&2

trace="$scratch/soak.gmt"
traced "$trace" "$iterations" >"$scratch/program.out" 2>"$scratch/program.err" &
program=$!
pids+=("$program")
# top starts once the trace exists, as a user's would, and prints frames until the process ends.
for _ in $(seq 1 200); do [ -s "$trace" ] && break; sleep 0.05; done
"$cli" top --json --interval 1 "$trace" >"$scratch/top.jsonl" 2>"$scratch/top.err" &
top=$!
pids+=("$top")

# The file's size, five times a second, while the program runs.
largest=0
samples=0
first_over=""
started=$(date +%s.%N)
while kill -0 "$program" 2>/dev/null; do
  size=$(stat -c %s "$trace" 2>/dev/null || echo 0)
  samples=$((samples + 1))
  [ "$size" -gt "$largest" ] && largest=$size
  if [ -z "$first_over" ] && [ "$size" -gt "$bound" ]; then
    first_over=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
      "$started" "$(date +%s.%N)")
    echo "soak-top: the trace holds $size bytes after ${first_over} s, past its bound" >&2
  fi
  sleep 0.2
done
program_status=0
wait "$program" || program_status=$?
top_status=0
wait "$top" || top_status=$?
size=$(stat -c %s "$trace")
[ "$size" -gt "$largest" ] && largest=$size

"$cli" report --json "$trace" >"$scratch/report.json"
"$cli" info --json "$trace" >"$scratch/info.json"
python3 - "$scratch/top.jsonl" "$scratch/report.json" "$scratch/info.json" "$bound" "$largest" \
  "$samples" "$program_status" "$top_status" <<'PY'
import json, sys
top_path, report_path, info_path, bound, largest, samples, program_status, top_status = sys.argv[1:]
frames = [json.loads(line) for line in open(top_path) if line.strip()]
report = json.load(open(report_path))
info = json.load(open(info_path))
failures = []
def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)

check(program_status == "0", f"the program exited 0 (got {program_status})")
check(top_status == "0", f"top exited 0 (got {top_status})")
check(int(largest) <= int(bound),
      f"the trace stayed within its bound: largest {int(largest):,} bytes of {int(bound):,} "
      f"({samples} samples)")
check(len(frames) > 0, f"top printed {len(frames)} frames")
if frames:
    last = frames[-1]["processes"][0]
    check(last["state"] == "exited", f"top's last frame: the process exited (got {last['state']})")
    devices = {d["device"]: d for d in last["devices"]}
    for want in report["devices"]:
        got = devices.get(want["device"])
        if got is None:
            check(False, f"device {want['device']} in top's last frame")
            continue
        for key, report_key in (("live_bytes", "live_at_exit_bytes"),
                                ("live_count", "live_at_exit_count"),
                                ("failed_alloc_count", "failed_alloc_count")):
            check(got[key] == want[report_key],
                  f"device {want['device']} {key}: top {got[key]:,}, report {want[report_key]:,}")
        check(got["peak_bytes"] >= want["peak_bytes"],
              f"device {want['device']} peak_bytes: top {got['peak_bytes']:,} >= report "
              f"{want['peak_bytes']:,}")
    behind = [f for f in frames if "fell_behind" in f["processes"][0]]
    times = behind[-1]["processes"][0]["fell_behind"]["times"] if behind else 0
    missed = behind[-1]["processes"][0]["fell_behind"]["records_missed"] if behind else 0
    history = info.get("history") or {}
    print(f"top fell behind {times} times ({missed:,} records written over before it read "
          f"them), said in {len(behind)} of {len(frames)} frames; the trace dropped "
          f"{history.get('dropped_events', 0):,} events in all")
sys.exit(1 if failures else 0)
PY
