#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Times the analyzer on large synthetic traces: `gpumemtrace report --json` on 10 M and 100 M
# events with the same live set, on 10 M events with ten times the live set, and on 10 M events
# of a PyTorch training loop (10M-blocks-roles: `synthetic_trace --framework-blocks`, ResNet-50
# behind PyTorch's caching allocator: its block events, with the roles hooks' scopes and tags;
# its live set is the model's: about 900 blocks at the peak in 112 segments, shown as "-"). Prints a
# Markdown table (docs/benchmarks.md, "Analyzer speed", explains it).
# Usage: [BENCH_CASES="10M 10M-blocks-roles"] scripts/bench-analyzer.sh [OUTPUT_FILE]
# BENCH_CASES: the names of the cases to run, separated by spaces (default: all of them).
#
# Targets (the performance budget, docs/benchmarks.md): at least 20 M events/s on one core, a 100 M-event trace reported in at
# most 10 s, and peak RSS set by the live allocations and stacks, not by the number of events.
# The analyzer runs pinned to one CPU (taskset) when it can. Traces go to a temporary folder
# ($TMPDIR; about 1.5 GB for the 100 M-event one, deleted at the end); the 100 M case is skipped,
# with a message, when there is not room for it. Exits non-zero only when something failed to
# build or run; a missed target is shown as **missed**. Takes a few minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

out_file="${1:-}"
dir=build-analyzer-bench  # apart from the developer's build/ (.gitignore: /build*/)
reps="${BENCH_REPS:-3}"   # runs of report per trace; the median is shown

source scripts/lib/cuda_args.sh

# Only what is measured: the CLI, the generator and the split of the analyzer's passes.
# The project's default build type (RelWithDebInfo, -O2), the one scripts/build.sh makes: what
# users run. (A Release build, -O3, trips GCC 12's false -Wrestrict warnings in analyzer/.)
echo "bench-analyzer: building in $dir (RelWithDebInfo)" >&2
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda_args[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)" --target gpumemtrace synthetic_trace analyzer_passes >/dev/null

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

pin=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then pin=(taskset -c 0); fi
# The same on two CPUs: report then reads the records on a second thread while it replays them
# (analyzer/model/input/record_pipeline.h). Skipped on a machine with one CPU.
pin2=()
if command -v taskset >/dev/null && taskset -c 0,1 true 2>/dev/null && [ "$(nproc)" -ge 2 ]; then
  pin2=(taskset -c 0,1)
fi

stacks=2000
threads=4
devices=2
# name events live [generator options]; live "-": the generator's own
all_cases=(
  "10M 10000000 50000"
  "100M 100000000 50000"
  "10M-10x-live 10000000 500000"
  "10M-blocks-roles 10000000 - --framework-blocks"
)
cases=()
for c in "${all_cases[@]}"; do
  read -r name _ <<<"$c"
  if [ -z "${BENCH_CASES:-}" ] || [[ " $BENCH_CASES " == *" $name "* ]]; then cases+=("$c"); fi
done
if [ "${#cases[@]}" -eq 0 ]; then
  echo "bench-analyzer: BENCH_CASES names no case (cases: 10M 100M 10M-10x-live 10M-blocks-roles)" >&2
  exit 2
fi

free_kib() { df -Pk "$scratch" | awk 'NR == 2 { print $4 }'; }

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# time_report TRACE [PREFIX...]: runs `report --json` on TRACE $reps times under PREFIX (a
# taskset command); prints the median wall time in seconds and the largest peak RSS in KiB.
time_report() {
  local trace=$1 walls=() rss=0 m r i
  shift
  for ((i = 0; i < reps; ++i)); do
    m=$(python3 tests/bench/measure_run.py "$@" "$dir/bin/gpumemtrace" report --json "$trace")
    walls+=("$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["wall_s"])' "$m")")
    r=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["max_rss_kib"])' "$m")
    if ((r > rss)); then rss=$r; fi
  done
  echo "$(printf '%s\n' "${walls[@]}" | median) $rss"
}

rows=()
declare -A rss_of wall_of wall2_of
for c in "${cases[@]}"; do
  read -r name events live options <<<"$c"
  # About 13 bytes per event and the stacks; twice that leaves room for the rest of the machine.
  need_kib=$((events * 26 / 1024 + 65536))
  if [ "$(free_kib)" -lt "$need_kib" ]; then
    echo "bench-analyzer: skipping $name: $((need_kib / 1024)) MiB needed in $scratch," \
      "$(($(free_kib) / 1024)) MiB free (set TMPDIR to a larger disk)" >&2
    rows+=("| $name | $events | $live | skipped: not enough disk | | | | | |")
    continue
  fi
  trace="$scratch/$name.gmt"
  if [ "$live" = "-" ]; then
    read -ra extra <<<"$options"
    generate=("$dir/bin/synthetic_trace" --output "$trace" --events "$events" "${extra[@]}")
    echo "bench-analyzer: generating $name ($events events, $options)" >&2
  else
    generate=("$dir/bin/synthetic_trace" --output "$trace" --events "$events" --live "$live"
      --stacks "$stacks" --threads "$threads" --devices "$devices")
    echo "bench-analyzer: generating $name ($events events, $live live, $stacks stacks)" >&2
  fi
  "${generate[@]}" >/dev/null
  file_mib=$(($(stat -c %s "$trace") / 1048576))
  # Warm the page cache first: the figure is the analyzer's, not the disk's.
  cat "$trace" >/dev/null
  read -r wall rss <<<"$(time_report "$trace" "${pin[@]}")"
  wall2="-"
  if [ "${#pin2[@]}" -gt 0 ]; then read -r wall2 _ <<<"$(time_report "$trace" "${pin2[@]}")"; fi
  passes=$("${pin[@]}" "$dir/bin/analyzer_passes" "$trace")
  read -r read_s first_s <<<"$(python3 -c 'import json,sys; p=json.loads(sys.argv[1]); print(p["read_s"], p["read_replay_s"])' "$passes")"
  rate=$(python3 -c "print(f'{$events / $wall / 1e6:.1f}')")
  rss_mib=$((rss / 1024))
  rss_of[$name]=$rss_mib
  wall_of[$name]=$wall
  wall2_of[$name]=$wall2
  rows+=("| $name | $events | $live | $file_mib | $wall | $rate | $rss_mib | $read_s / $first_s | $wall2 |")
  rm -f "$trace"
done

verdict() { if [ "$1" = 1 ]; then echo "met"; else echo "**missed**"; fi; }
{
  echo "### Analyzer speed (\`gpumemtrace report --json\`, median of $reps, one core)"
  echo
  echo "$(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo
  echo "| trace | events | live set | file MiB | wall s | M events/s | peak RSS MiB | reader / reader+replay s | wall s, 2 CPUs |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  if [ -n "${wall_of[10M]:-}" ]; then
    ok=$(python3 -c "print(int(10e6 / ${wall_of[10M]} >= 20e6))")
    echo "- ≥ 20 M events/s (10M): $(verdict "$ok")"
  fi
  if [ -n "${wall_of[100M]:-}" ]; then
    ok=$(python3 -c "print(int(${wall_of[100M]} <= 10))")
    echo "- 100 M events in ≤ 10 s: ${wall_of[100M]} s, $(verdict "$ok")"
    if [ "${wall2_of[100M]:-"-"}" != "-" ]; then
      echo "- (not a target) 100 M events with two CPUs: ${wall2_of[100M]} s"
    fi
  fi
  if [ -n "${rss_of[100M]:-}" ] && [ -n "${rss_of[10M]:-}" ]; then
    ratio=$(python3 -c "print(f'{${rss_of[100M]} / ${rss_of[10M]}:.2f}')")
    ok=$(python3 -c "print(int(${rss_of[100M]} < 10 * ${rss_of[10M]}))")
    echo "- peak RSS 100M / 10M, same live set: ${ratio}x (must not be 10x), $(verdict "$ok")"
  fi
  if [ -n "${wall_of[10M-blocks-roles]:-}" ]; then
    rate=$(python3 -c "print(f'{10e6 / ${wall_of[10M-blocks-roles]} / 1e6:.1f}')")
    line="- 10M-blocks-roles (PyTorch's block events, scopes and tags; the target above is 10M's): $rate M events/s"
    if [ -n "${wall_of[10M]:-}" ]; then
      line+=", $(python3 -c "print(f'{${wall_of[10M-blocks-roles]} / ${wall_of[10M]}:.2f}')")x the 10M case's time"
    fi
    echo "$line"
  fi
  if [ -n "${rss_of[10M-10x-live]:-}" ] && [ -n "${rss_of[10M]:-}" ]; then
    ratio=$(python3 -c "print(f'{${rss_of[10M-10x-live]} / ${rss_of[10M]}:.2f}')")
    echo "- peak RSS 10M with 10x the live set / 10M: ${ratio}x (RSS follows the live set)"
  fi
} >"$scratch/table.md"
cat "$scratch/table.md"
if [ -n "$out_file" ]; then cp "$scratch/table.md" "$out_file"; fi
