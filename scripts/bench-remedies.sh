#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the remedies (issue 48, section 4) add to `peak` and `oom`: on the synthetic PyTorch
# training trace (`synthetic_trace --framework-blocks`: ResNet-50 behind PyTorch's caching
# allocator, with the roles hooks' scopes and tags), `peak --json` timed with the remedies
# (default) and without (GPUMEMTRACE_REMEDIES=0), side by side, interleaved, median of $BENCH_REPS:
#   - the run fits the recorded device: the remedies replay it once to know (on their own thread);
#   - `--device-memory` below its peak: the whole search (an allocator setting, the largest
#     batch, bf16 activations, sharding), as `oom` runs it on a failed run.
# Each on one CPU (taskset) and on two, where the machine has them. Target: at most +20 %.
# Prints a Markdown table. Usage: [BENCH_EVENTS=10000000] scripts/bench-remedies.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build-analyzer-bench}"
events="${BENCH_EVENTS:-10000000}"
reps="${BENCH_REPS:-3}"
if [ ! -x "$dir/bin/gpumemtrace" ] || [ ! -x "$dir/bin/synthetic_trace" ]; then
  source scripts/lib/cuda_args.sh
  echo "bench-remedies: building in $dir" >&2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda_args[@]}" >/dev/null
  cmake --build "$dir" -j "$(nproc)" --target gpumemtrace synthetic_trace >/dev/null
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
trace="$scratch/blocks.gmt"
echo "bench-remedies: generating $events events (--framework-blocks)" >&2
"$dir/bin/synthetic_trace" --output "$trace" --events "$events" --framework-blocks >/dev/null
cat "$trace" >/dev/null
peak_reserved=$("$dir/bin/gpumemtrace" whatif --json "$trace" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["recorded"]["max_reserved_bytes"])')
small=$((peak_reserved * 9 / 10))

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
wall() {  # wall [TASKSET...] COMMAND...: its wall seconds
  python3 tests/bench/measure_run.py "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["wall_s"])'
}
rows=()
cpus=("0")
if command -v taskset >/dev/null && taskset -c 0,1 true 2>/dev/null && [ "$(nproc)" -ge 2 ]; then cpus+=("0,1"); fi
for cpu in "${cpus[@]}"; do
  pin=()
  if command -v taskset >/dev/null && taskset -c "$cpu" true 2>/dev/null; then pin=(taskset -c "$cpu"); fi
  for case in fits smaller; do
    extra=()
    [ "$case" = smaller ] && extra=(--device-memory "$small")
    with=() without=()
    for ((i = 0; i < reps; ++i)); do
      without+=("$(GPUMEMTRACE_REMEDIES=0 wall "${pin[@]}" "$dir/bin/gpumemtrace" peak --json "${extra[@]}" "$trace")")
      with+=("$(wall "${pin[@]}" "$dir/bin/gpumemtrace" peak --json "${extra[@]}" "$trace")")
    done
    w=$(printf '%s\n' "${with[@]}" | median)
    wo=$(printf '%s\n' "${without[@]}" | median)
    ratio=$(python3 -c "print(f'{$w / $wo:.2f}')")
    ok=$(python3 -c "print('met' if $w / $wo <= 1.2 else '**missed**')")
    rows+=("| $case | $cpu | $wo | $w | $ratio | $ok |")
  done
done
echo "### Remedies in \`peak --json\` ($events events, median of $reps; smaller: --device-memory $small of $peak_reserved reserved)"
echo
echo "| case | CPUs | without s | with s | ratio | ≤ 1.20 |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
