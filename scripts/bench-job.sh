#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Times `report DIR` and `html DIR` on a simulated distributed job: N traces (default 1000) of
# about 40,000 events each, one per rank of tests/workloads/job_rank.cpp run under the preload
# on the simulated CUDA stack. Prints a Markdown table: wall time and peak RSS with 1 and 2
# workers (--jobs), and for one trace alone (report, html, summarize), with the CPU time (user +
# system) and the load average.
# Not a test: nothing here fails on a slow machine.
#
# Usage: scripts/bench-job.sh [N]
#   GMT_BUILD_DIR   an existing build to use, with gpumemtrace, the preload and job_rank built
#                   (default: build-bench-job, RelWithDebInfo, built here)
#   STEPS           allocation/free pairs per rank (default 20000: 40,000 events)
set -euo pipefail
cd "$(dirname "$0")/.."

count="${1:-1000}"
steps="${STEPS:-20000}"
dir="${GMT_BUILD_DIR:-build-bench-job}"

if [ -z "${GMT_BUILD_DIR:-}" ]; then
  source scripts/lib/cuda_args.sh
  echo "bench-job: building in $dir" >&2
  cmake -S . -B "$dir" "${cuda_args[@]}" >/dev/null
  cmake --build "$dir" -j "$(nproc)" --target gpumemtrace gpumemtrace_preload job_rank >/dev/null
fi

cli="$dir/bin/gpumemtrace"
preload="$(ls "$dir"/lib/libgpumemtrace.so)"
workload="$dir/workloads/job_rank"
fakecuda="$dir/fakecuda/lib"
if [ ! -x /usr/bin/time ]; then
  echo "bench-job: /usr/bin/time is needed (apt-get install time)" >&2
  exit 1
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/job" "$scratch/one"

# The ranks, two at a time per CPU: each a process of its own under the preload, as a job's are.
# A simulated GPU of 64 GiB: rank R's working set is (R + 1) * 16 MiB.
echo "bench-job: generating $count traces of $((steps * 2)) events" >&2
start=$(date +%s.%N)
seq 0 $((count - 1)) | xargs -P "$(( $(nproc) * 2 ))" -I{} env RANK={} \
  LD_LIBRARY_PATH="$fakecuda" LD_PRELOAD="$preload" \
  GPUMEMTRACE_OUTPUT="$scratch/job/rank%r.gmt" FAKECUDA_DEVICE_MEMORY=$((64 << 30)) \
  "$workload" leak=1 oom=2 "steps=$steps"
generated=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
  "$start" "$(date +%s.%N)")
cp "$scratch/job/rank0.gmt" "$scratch/one/"
echo "bench-job: generated in ${generated} s ($(du -sh "$scratch/job" | cut -f1))" >&2

# Wall seconds, CPU seconds (user + system: what other work on the machine does not inflate)
# and peak RSS (MiB) of one command, from /usr/bin/time -v.
measure() {
  local log="$scratch/time.log"
  /usr/bin/time -v "$@" >/dev/null 2>"$log" || {
    cat "$log" >&2
    exit 1
  }
  python3 - "$log" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
seconds = 0.0
for part in wall.split(":"):
    seconds = seconds * 60 + float(part)
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
cpu = sum(float(re.search(rf"{what} time \(seconds\): (\S+)", text).group(1))
          for what in ("User", "System"))
print(f"{seconds:.2f} s | {cpu:.2f} s | {rss / 1024:.0f} MiB")
PY
}

load_at_start="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "| command | traces | workers | wall | CPU | peak RSS |"
echo "|---|---|---|---|---|---|"
for what in "report" "html"; do
  for jobs in 1 2; do
    if [ "$what" = report ]; then
      args=(report "$scratch/job" --jobs "$jobs")
    else
      args=(html "$scratch/job" -o "$scratch/job.html" --jobs "$jobs")
    fi
    echo "| $what DIR | $count | $jobs | $(measure "$cli" "${args[@]}") |"
  done
done
echo "| report TRACE | 1 | 1 | $(measure "$cli" report "$scratch/one/rank0.gmt" --jobs 1) |"
echo "| html TRACE | 1 | 1 | $(measure "$cli" html "$scratch/one/rank0.gmt" -o "$scratch/one.html" --jobs 1) |"
echo "| summarize TRACE | 1 | 1 | $(measure "$cli" summarize "$scratch/one/rank0.gmt" -o "$scratch/one.summary") |"
echo
echo "Generated $count traces of $((steps * 2)) events in ${generated} s on $(nproc) CPUs;" \
  "summary of one trace: $(stat -c %s "$scratch/one.summary") bytes."
# Other work on the machine shows in the figures: the load average when the timing began and
# ended (1, 5 and 15 minutes).
echo "Load average: $load_at_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end."
