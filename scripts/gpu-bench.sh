#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Overhead on a real GPU, in one run: a small PyTorch MLP training step, untraced, traced by
# gpumemtrace with each stack mode, and with PyTorch's own _record_memory_history for
# comparison; with the default caching allocator, with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every
# tensor goes to cudaMalloc/cudaFree) and with backend:cudaMallocAsync (every tensor goes to the
# driver's stream-ordered pool). Prints time per step and the ratio to untraced.
# Usage: scripts/gpu-bench.sh [OUTPUT_DIR]   (default: $OUT, else gpu-bench-output)
# GMT_BENCH_ROUNDS (default 3) and GMT_BENCH_ALLOCATORS (default "caching nocache async") narrow
# a run to fit a time limit, as GMT_BENCH_MODES does (default: all six below). GMT_BENCH_MODEL=small
# times a CPU-bound step instead (tiny layers: the cost per allocation event shows, see
# tests/gpu/mlp_step_time.py); GMT_BENCH_CPUS (a taskset list, e.g. "2-5") pins every run to
# the same cores, which narrows the spread of a CPU-bound step. GMT_BENCH_MODEL=tensors times
# tensors made and dropped from the caching allocator instead of a step (tests/gpu/tensor_cost.py):
# what one block allocation and its free cost each configuration, in ns, to better than a step's
# spread; the table then adds the ns each configuration adds per tensor.
# A mode gmt_STACKS_bounded (not in the default list: gmt_all_bounded) traces with a bounded
# trace of GMT_BENCH_MAX_SIZE (default 2MiB), for its cost next to the unbounded one's; a mode
# gmt_STACKS_libunwind (e.g. gmt_all_libunwind) takes native stacks by libunwind alone
# (GPUMEMTRACE_UNWIND=libunwind), for our walker's gain next to it; a mode gmt_STACKS_nosampler
# turns the sampler off (GPUMEMTRACE_SAMPLE_MS=0), for what it costs; gmt_STACKS_noblocks turns
# PyTorch's block events off (GPUMEMTRACE_TORCH_BLOCKS=0), for what the rest of the recorder costs;
# gmt_STACKS_noroles turns the roles and modules hooks off (GPUMEMTRACE_ROLES=0), for their share.
# GMT_BENCH_MODEL=decode times generate() of a 32-layer Llama-shaped model instead, per token
# (tests/gpu/decode_step_time.py): where module calls are densest.
# After the rounds, each traced configuration runs once more with GPUMEMTRACE_SELF_TIME=1: the
# recorder's own time, measured inside that process, per event and as a share of its step. On a
# shared host, wall time moves by tens of percent from one process to the next; that share does
# not move with it.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-bench-output}}"
mkdir -p "$out"
. scripts/lib/gpu_build.sh

workload=tests/gpu/mlp_step_time.py
[ "${GMT_BENCH_MODEL:-}" = tensors ] && workload=tests/gpu/tensor_cost.py
[ "${GMT_BENCH_MODEL:-}" = decode ] && workload=tests/gpu/decode_step_time.py

measure() {  # measure ALLOCATOR MODE ROUND
  local allocator=$1 mode=$2 name="$1.$2.$3" env=()
  # PyTorch refuses: "cudaMallocAsync does not yet support recordHistory".
  if [ "$allocator" = async ] && [ "${mode#torch_history}" != "$mode" ]; then
    echo "PyTorch's history does not support cudaMallocAsync" >"$out/$1.$2.not_run"
    return
  fi
  if [ "$allocator" = async ] && [ "$mode" = torch_tracker_noop ]; then
    echo "cudaMallocAsync has no trace tracker" >"$out/$1.$2.not_run"
    return
  fi
  if [ "$mode" = torch_tracker_noop ] && [ -z "$shim" ]; then
    echo "no shim to attach (see shim-build.log)" >"$out/$1.$2.not_run"
    return
  fi
  local pin=()
  [ -n "${GMT_BENCH_CPUS:-}" ] && pin=(taskset -c "$GMT_BENCH_CPUS")
  [ "$allocator" = nocache ] && env+=(PYTORCH_NO_CUDA_MEMORY_CACHING=1)
  [ "$allocator" = async ] && env+=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)
  case $mode in
    untraced) "${pin[@]}" env "${env[@]}" python3 "$workload" "$out/$name.json" ;;
    torch_history_python) "${pin[@]}" env "${env[@]}" python3 "$workload" --history python "$out/$name.json" ;;
    torch_history_all) "${pin[@]}" env "${env[@]}" python3 "$workload" --history all "$out/$name.json" ;;
    torch_tracker_noop) "${pin[@]}" env "${env[@]}" python3 "$workload" --tracker "$shim" "$stub" \
      "$out/$name.json" ;;
    gmt_*) [ -n "${GMT_SELF_TIME_RUN:-}" ] && env+=(GPUMEMTRACE_SELF_TIME=1)
      # gmt_STACKS_SUFFIX: each suffix turns one setting on. _bounded: a bounded trace
      # (GMT_BENCH_MAX_SIZE, default 2MiB), which the run fills many times over, its checkpoints
      # and reuse of chunks in the figures; _nosampler: the sampler off; _noblocks: PyTorch's block
      # events off (what being preloaded costs a step whose allocations all come from the cache);
      # _noroles: the roles and modules hooks off;
      # _libunwind: native stacks by libunwind alone, not our walker.
      local stacks=${mode#gmt_}
      while [[ $stacks == *_* ]]; do
        case ${stacks##*_} in
          bounded) env+=(GPUMEMTRACE_MAX_SIZE="${GMT_BENCH_MAX_SIZE:-2MiB}") ;;
          nosampler) env+=(GPUMEMTRACE_SAMPLE_MS=0) ;;
          noblocks) env+=(GPUMEMTRACE_TORCH_BLOCKS=0) ;;
          noroles) env+=(GPUMEMTRACE_ROLES=0) ;;
          libunwind) env+=(GPUMEMTRACE_UNWIND=libunwind) ;;
          *) break ;;
        esac
        stacks=${stacks%_*}
      done
      "${pin[@]}" env "${env[@]}" GPUMEMTRACE_STACKS="$stacks" "$gmt" run -o "$out/$name.%p.gmt" -- \
      python3 "$workload" "$out/$name.json" ;;
  esac >"$out/$name.log" 2>&1 || echo "FAIL $name (see $name.log)"
}

# torch_tracker_noop (not in the default list): untraced, but with our PyTorch shim attached to
# the caching allocator, handing every trace entry to an entry point that does nothing
# (tests/gpu/noop_block.cpp): what PyTorch itself spends on a trace tracker, which no recorder
# can save. The shim is the one a traced run builds for this torch, in a cache of the bench's own.
shim="" stub=""
if [[ " ${GMT_BENCH_MODES:-} " == *" torch_tracker_noop "* ]]; then
  . scripts/lib/tracker_shim.sh
  build_tracker_shim ||
    echo "FAIL torch_tracker_noop: no shim was built (see shim-build.log), or the stub did not build"
fi

# Rounds interleave the configurations, so that a slow minute of the machine does not land on
# one configuration only; the table takes each configuration's median over the rounds.
rounds=${GMT_BENCH_ROUNDS:-3}
read -r -a allocators <<<"${GMT_BENCH_ALLOCATORS:-caching nocache async}"
read -r -a modes <<<"${GMT_BENCH_MODES:-untraced gmt_none gmt_native gmt_all torch_history_python torch_history_all}"
for round in $(seq 1 "$rounds"); do
  for allocator in "${allocators[@]}"; do
    for mode in "${modes[@]}"; do measure "$allocator" "$mode" "$round"; done
  done
done

python3 - "$out" "$rounds" "${allocators[*]}" "${modes[@]}" <<'PY'
import json, os, statistics, sys
out, rounds, allocators, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
tensors = os.environ.get("GMT_BENCH_MODEL") == "tensors"
unit = "1000 tensors" if tensors else "step"
# CPU time beside wall time, where the workload gives it (mlp_step_time.py): the process's
# threads' CPU time per step leaves out the time it waited for a core.
print(f"{'allocator':10} {'mode':22} {'ms':>8} {'vs untraced':>12}"
      + (f" {'ns added/tensor':>16}" if tensors else f" {'cpu vs untraced':>16}")
      + f"   rounds (ms per {unit})")
for allocator in allocators:
    base = None
    cpu_base = None
    for mode in modes:
        runs = []
        cpu_runs = []
        for r in range(1, rounds + 1):
            path = os.path.join(out, f"{allocator}.{mode}.{r}.json")
            if os.path.exists(path):
                result = json.load(open(path))
                runs.append(result["ms_per_step"])
                if "cpu_ms_per_step" in result:
                    cpu_runs.append(result["cpu_ms_per_step"])
        not_run = os.path.join(out, f"{allocator}.{mode}.not_run")
        if not runs and os.path.exists(not_run):
            print(f"{allocator:10} {mode:22} {'n/a':>8}   ({open(not_run).read().strip()})")
            continue
        if not runs:
            print(f"{allocator:10} {mode:22} {'failed':>8}   (see {allocator}.{mode}.*.log)")
            continue
        ms = statistics.median(runs)
        base = ms if mode == "untraced" else base
        ratio = f"{ms / base:.3f}x" if base else "-"
        cpu = statistics.median(cpu_runs) if len(cpu_runs) == len(runs) else None
        cpu_base = cpu if mode == "untraced" else cpu_base
        cpu_ratio = f"{cpu / cpu_base:.3f}x" if cpu and cpu_base else "-"
        # 1000 tensors per step: the ms a step gains are the us, so ns / 1000, a tensor gains.
        added = ((f" {(ms - base) * 1000:16.0f}" if base else f" {'-':>16}") if tensors
                 else f" {cpu_ratio:>16}")
        print(f"{allocator:10} {mode:22} {ms:8.3f} {ratio:>12}{added}   "
              f"{' '.join(f'{x:.3f}' for x in runs)}")
PY

# The recorder's own share, measured inside one traced run per configuration.
cost_rows=()
for allocator in "${allocators[@]}"; do
  for mode in "${modes[@]}"; do
    [ "${mode#gmt_}" = "$mode" ] && continue
    GMT_SELF_TIME_RUN=1 measure "$allocator" "$mode" cost
    cost_rows+=("$allocator.$mode")
  done
done
if [ "${#cost_rows[@]}" -gt 0 ]; then
  echo
  python3 - "$out" "$gmt" "${cost_rows[@]}" <<'PY'
import glob, json, sys
sys.path.insert(0, "scripts/lib")
from recorder_cost import corrected, note_of
out, gmt, rows = sys.argv[1], sys.argv[2], sys.argv[3:]
# The recorder's cost less the measurement's own clock reads, and its share of a step without
# the measurement (recorder_cost.py); the share as measured, reads and all, beside it.
print(f"{'configuration':26} {'events/step':>11} {'ns/event':>9} {'of it stacks':>13}"
      f" {'ns/stack':>9} {'python':>7} {'native frames':>13} {'remembered':>10} {'libunwind':>9}"
      f" {'clock read':>10} {'us/step':>8} {'ms/step':>8} {'recorder share':>15}"
      f" {'with the reads':>15}")
for row in rows:
    try:
        result = json.load(open(f"{out}/{row}.cost.json"))
        note = note_of(gmt, glob.glob(f"{out}/{row}.cost.*.gmt")[0])
        if note is None:
            raise ValueError("the trace has no cost note")
    except (OSError, IndexError, ValueError) as e:
        print(f"{row:26} no cost note ({e.__class__.__name__}: {e})")
        continue
    steps, ms_per_step = result["steps_run"], result["ms_per_step"]
    cost = corrected(note, steps, ms_per_step)
    events, taken = note["events"], max(note["stacks"], 1)
    if events < steps:  # e.g. no block events: a few first allocations, which set up the stacks
        print(f"{row:26} {events / steps:11.1f} {'-':>9} ({events} events in {steps} steps:"
              f" {cost['total_ns'] / steps / 1e3:.1f} us a step, {cost['share']:.1%} of it)")
        continue
    print(f"{row:26} {events / steps:11.1f} {cost['total_ns'] / events:9.0f}"
          f" {cost['stack_ns'] / events:13.0f} {cost['stack_ns'] / taken:9.0f}"
          f" {cost['python_ns'] / taken:7.0f} {note['native_frames'] / taken:13.1f}"
          f" {note['remembered'] / taken:10.1%} {note['libunwind']:9d} {note['clock_read_ns']:10d}"
          f" {cost['total_ns'] / steps / 1e3:8.1f} {ms_per_step:8.3f} {cost['share']:14.1%}"
          f" {cost['measured_share']:14.1%}")
PY
fi

# What the traced runs saw, by kind: the async runs' allocations must be stream-ordered ones.
for allocator in "${allocators[@]}"; do
  for trace in "$out/$allocator.gmt_none.1".*.gmt; do
    [ -f "$trace" ] || continue
    echo "$allocator, no stacks, round 1: allocations by kind $("$gmt" info --json "$trace" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["allocations_by_kind"])')"
  done
done
