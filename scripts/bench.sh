#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures what gpumemtrace adds to CUDA allocation calls, on the simulated driver: time per
# event with and without native stacks, with 1, 4 and 16 threads, and trace bytes per event.
# Prints Markdown tables (docs/benchmarks.md explains them). Usage: scripts/bench.sh [OUTPUT_FILE]
#
# Exits non-zero only when something failed to build or run; a missed target is reported in the
# tables, not treated as a failure. Takes about two minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

out_file="${1:-}"
dir=build-bench  # Release, apart from the developer's build/ (covered by .gitignore's /build*/)

source scripts/lib/cuda_args.sh

# Only what the benchmark needs (the preload library, the simulated driver, the benchmark and
# trace_bytes): the rest of the project is not measured here, and building it would double the
# time this takes.
echo "bench: building in $dir (Release)" >&2
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)" --target hook_overhead_bench recorder_bench unwind_bench \
  trace_bytes gpumemtrace_preload >/dev/null

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# The library reads GPUMEMTRACE_STACKS once per process: one run per mode. "python" and "all" are
# not benchmarked: this program has no Python interpreter, so there are no Python frames to
# record (docs/benchmarks.md). Random interleaving spreads each benchmark's repetitions over the
# whole run, so that a burst of load from something else on the machine lands on traced and
# untraced alike instead of on one of them.
modes=(none native)
table_args=()
for mode in "${modes[@]}"; do
  echo "bench: running with GPUMEMTRACE_STACKS=$mode" >&2
  GPUMEMTRACE_STACKS="$mode" GPUMEMTRACE_OUTPUT="$scratch/$mode.%p.gmt" \
    "$dir/bin/hook_overhead_bench" \
    --benchmark_repetitions=9 --benchmark_min_time=0.1 \
    --benchmark_enable_random_interleaving=true \
    --benchmark_format=json >"$scratch/$mode.json"
  traces=("$scratch/$mode".*.gmt)
  if [ "${#traces[@]}" -ne 1 ] || [ ! -f "${traces[0]}" ]; then
    echo "bench: expected one trace from the $mode run, found: ${traces[*]}" >&2
    exit 1
  fi
  "$dir/bin/trace_bytes" "${traces[0]}" >"$scratch/$mode.bytes.json"
  rm -f "${traces[0]}"  # hundreds of MB: do not keep two at once
  table_args+=("$mode" "$scratch/$mode.json" "$scratch/$mode.bytes.json")
done

python3 tests/bench/overhead_table.py "${table_args[@]}" >"$scratch/table.md"

# The recorder alone, no driver under it: whether its own shared state holds threads back.
recorder_args=()
for mode in "${modes[@]}"; do
  echo "bench: running recorder_bench with GPUMEMTRACE_STACKS=$mode" >&2
  GPUMEMTRACE_STACKS="$mode" GPUMEMTRACE_OUTPUT="$scratch/recorder.$mode.%p.gmt" \
    "$dir/bin/recorder_bench" --benchmark_repetitions=9 --benchmark_min_time=0.1 \
    --benchmark_enable_random_interleaving=true --benchmark_format=json \
    >"$scratch/recorder.$mode.json"
  rm -f "$scratch/recorder.$mode".*.gmt
  recorder_args+=("$mode" "$scratch/recorder.$mode.json")
done
# A bounded trace (GPUMEMTRACE_MAX_SIZE): the hooks write as unbounded, and the writer's
# checkpoint thread reads every record back to fold it into the live set the checkpoints are
# written from; the run writes far more than its limit. That thread's CPU time is not the
# measured threads': recorder_bench prints it per event, and the table's note gives it.
echo "bench: running recorder_bench with GPUMEMTRACE_STACKS=native GPUMEMTRACE_MAX_SIZE=64MiB" >&2
GPUMEMTRACE_STACKS=native GPUMEMTRACE_MAX_SIZE=64MiB GPUMEMTRACE_OUTPUT="$scratch/recorder.bounded.%p.gmt" \
  "$dir/bin/recorder_bench" --benchmark_repetitions=9 --benchmark_min_time=0.1 \
  --benchmark_enable_random_interleaving=true --benchmark_format=json \
  >"$scratch/recorder.bounded.json" 2>"$scratch/recorder.bounded.err"
rm -f "$scratch/recorder.bounded".*.gmt
recorder_args+=("native, bounded to 64 MiB" "$scratch/recorder.bounded.json")
python3 tests/bench/recorder_table.py "${recorder_args[@]}" >>"$scratch/table.md"
fold_line=$(grep -m1 "checkpoint thread CPU" "$scratch/recorder.bounded.err" || true)
{
  echo
  echo "Bounded: ${fold_line:-recorder_bench: no checkpoint thread found (it did not start)}"
} >>"$scratch/table.md"

# Native stacks: our walker against libunwind's unw_backtrace on the same stacks, in one run.
echo "bench: running unwind_bench" >&2
"$dir/bin/unwind_bench" --benchmark_repetitions=9 --benchmark_min_time=0.1 \
  --benchmark_enable_random_interleaving=true --benchmark_format=json >"$scratch/unwind.json"
python3 - "$scratch/unwind.json" >>"$scratch/table.md" <<'PY'
import json, statistics, sys
runs = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type") == "iteration":
        runs.setdefault(b["run_name"], []).append(b)
print()
print("### Native stacks: our walker against libunwind (remembered walks, warm caches)")
print()
print("| depth | frames | walker ns | libunwind ns | libunwind / walker |")
print("|---|---|---|---|---|")
for depth in (8, 32, 128):
    ours, theirs = runs.get(f"walker/depth:{depth}"), runs.get(f"libunwind/depth:{depth}")
    if not ours or not theirs:
        print(f"| {depth} | - | missing | missing | - |")
        continue
    a = statistics.median(r["real_time"] for r in ours)
    b = statistics.median(r["real_time"] for r in theirs)
    print(f"| {depth} | {int(theirs[0]['frames'])} | {a:.0f} | {b:.0f} | {b / a:.2f}x |")
PY

# Python frames: a Python program through ctypes, untraced and with each stack mode, one after
# the other in this run (target: at most 1.5 us added per event with Python frames).
cmake --build "$dir" -j "$(nproc)" --target fakecuda_runtime >/dev/null
cudart="$dir/fakecuda/lib/libcudart.so.13"
{
for variant in PyDLL CDLL CDLL-long; do
  loader=${variant%-long}
  shape=short; [ "$variant" = CDLL-long ] && shape=long
  held="the GIL held"; [ "$loader" = CDLL ] && held="the GIL released"
  where=""; [ "$shape" = long ] && where="; the call 400 lines into its function"
  echo
  echo "### Python frames (ctypes.$loader: $held; 10 Python frames deep$where, 1 MiB pairs)"
  echo
  echo "| stacks | ns per pair | added ns per event |"
  echo "|---|---|---|"
  base=""
  for mode in untraced none native python all; do
    if [ "$mode" = untraced ]; then
      ns=$(LD_LIBRARY_PATH="$dir/fakecuda/lib" python3 tests/bench/python_overhead.py "$cudart" 20000 "$loader" "$shape")
    else
      ns=$(LD_LIBRARY_PATH="$dir/fakecuda/lib" GPUMEMTRACE_STACKS="$mode" \
        GPUMEMTRACE_OUTPUT="$scratch/py.$mode.%p.gmt" LD_PRELOAD="$PWD/$dir/lib/libgpumemtrace.so" \
        python3 tests/bench/python_overhead.py "$cudart" 20000 "$loader" "$shape")
    fi
    ns=$(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])["ns_per_pair"]))' "$ns")
    [ -z "$base" ] && base=$ns
    echo "| $mode | $ns | $(( (ns - base) / 2 )) |"
  done
done
} >>"$scratch/table.md"
cat "$scratch/table.md"
if [ -n "$out_file" ]; then cp "$scratch/table.md" "$out_file"; fi
