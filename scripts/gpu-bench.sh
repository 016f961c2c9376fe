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
# spread; the table then adds what each configuration adds per tensor. Every run also counts
# the CPU's cycles and instructions (tests/gpu/cpu_counters.py): with GMT_BENCH_CPUS, on those
# CPUs, whichever thread runs there, which a busy host's clock changes do not move.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-bench-output}}"
mkdir -p "$out"
. scripts/lib/gpu_build.sh

workload=tests/gpu/mlp_step_time.py
[ "${GMT_BENCH_MODEL:-}" = tensors ] && workload=tests/gpu/tensor_cost.py

measure() {  # measure ALLOCATOR MODE ROUND
  local allocator=$1 mode=$2 name="$1.$2.$3" env=()
  # PyTorch refuses: "cudaMallocAsync does not yet support recordHistory".
  if [ "$allocator" = async ] && [ "${mode#torch_history}" != "$mode" ]; then
    echo "PyTorch's history does not support cudaMallocAsync" >"$out/$1.$2.not_run"
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
    gmt_*) "${pin[@]}" env "${env[@]}" GPUMEMTRACE_STACKS="${mode#gmt_}" "$gmt" run -o "$out/$name.%p.gmt" -- \
      python3 "$workload" "$out/$name.json" ;;
  esac >"$out/$name.log" 2>&1 || echo "FAIL $name (see $name.log)"
}

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
# Per 1000 tensors, the figures added over untraced are per tensor once divided by 1000: ms
# become us, hence ns after * 1000 ... and cycles per tensor after / 1000.
unit = "1000 tensors" if tensors else "step"
print(f"{'allocator':10} {'mode':22} {'ms':>8} {'vs':>7} {'Mcycles':>8} {'vs':>7} {'Minstr':>8} {'vs':>7}"
      + (f" {'+ns':>6} {'+cycles':>8} {'+instr':>8}" if tensors else "")
      + f"   rounds (ms per {unit})")
for allocator in allocators:
    base = None
    for mode in modes:
        runs = []
        for r in range(1, rounds + 1):
            path = os.path.join(out, f"{allocator}.{mode}.{r}.json")
            if os.path.exists(path):
                runs.append(json.load(open(path)))
        not_run = os.path.join(out, f"{allocator}.{mode}.not_run")
        if not runs and os.path.exists(not_run):
            print(f"{allocator:10} {mode:22} {'n/a':>8}   ({open(not_run).read().strip()})")
            continue
        if not runs:
            print(f"{allocator:10} {mode:22} {'failed':>8}   (see {allocator}.{mode}.*.log)")
            continue
        def median(key):
            values = [r[key] for r in runs if r.get(key) is not None]
            return statistics.median(values) if values else None
        row = {"ms": median("ms_per_step"), "cycles": median("cycles_per_step"),
               "instructions": median("instructions_per_step")}
        if mode == "untraced":
            base = row
        def ratio(key):
            return f"{row[key] / base[key]:.3f}x" if base and base[key] and row[key] else "-"
        def millions(key):
            return f"{row[key] / 1e6:8.3f}" if row[key] is not None else f"{'-':>8}"
        line = (f"{allocator:10} {mode:22} {row['ms']:8.3f} {ratio('ms'):>7} {millions('cycles')} "
                f"{ratio('cycles'):>7} {millions('instructions')} {ratio('instructions'):>7}")
        if tensors:
            def added(key, scale):
                if not base or base[key] is None or row[key] is None:
                    return "-"
                return f"{(row[key] - base[key]) * scale:.0f}"
            line += (f" {added('ms', 1000):>6} {added('cycles', 1e-3):>8}"
                     f" {added('instructions', 1e-3):>8}")
        line += "   " + " ".join(f"{r['ms_per_step']:.3f}" for r in runs)
        print(line)
errors = {r.get("counters_error") for a in allocators for m in modes for k in range(1, rounds + 1)
          for p in [os.path.join(out, f"{a}.{m}.{k}.json")] if os.path.exists(p)
          for r in [json.load(open(p))] if r.get("counters_error")}
for e in sorted(errors):
    print(f"CPU counters unavailable: {e}")
PY

# What the traced runs saw, by kind: the async runs' allocations must be stream-ordered ones.
for allocator in "${allocators[@]}"; do
  for trace in "$out/$allocator.gmt_none.1".*.gmt; do
    [ -f "$trace" ] || continue
    echo "$allocator, no stacks, round 1: allocations by kind $("$gmt" info --json "$trace" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["allocations_by_kind"])')"
  done
done
