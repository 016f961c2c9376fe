#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What PyTorch's block events cost a training step, each process its own baseline. Between
# processes the host moves a CPU-bound step's time by tens of percent, more than the cost to
# measure; so each process here times its steps, then attaches gpumemtrace's PyTorch shim to the
# caching allocator, then times them again (tests/gpu/mlp_step_time.py --midway), and the figure
# is the second half's step over the first's. Three kinds of process, interleaved in rounds:
#   control       untraced, nothing attached: what drift within one process makes of two halves
#   tracker_noop  untraced; the shim hands PyTorch's entries to an entry point that does nothing
#                 (tests/gpu/noop_block.cpp): what PyTorch's own tracker path costs
#   gmt_STACKS    traced by gpumemtrace with GPUMEMTRACE_STACKS=STACKS and PyTorch's block events
#                 off until the shim is attached midway, into the recorder: the tracker path and
#                 the recorder's block events together, its stacks taken (default: gmt_all)
# The first half of a traced process still runs with gpumemtrace preloaded: its hooks see no
# allocation in a cached step, and its sampler's thread is the rest of what a traced step costs
# (gpu-bench.sh's gmt_all_noblocks, measured inside the process).
# Usage: scripts/gpu-bench-paired.sh [OUTPUT_DIR]   (default: $OUT, else gpu-bench-output)
# GMT_BENCH_ROUNDS (default 6); GMT_BENCH_MODES (default "control tracker_noop gmt_all");
# GMT_BENCH_MODEL (default small: the CPU-bound step; "large" for the default MLP);
# GMT_BENCH_CPUS (default 2-5) pins every run to the same cores.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-bench-output}}"
mkdir -p "$out"
. scripts/lib/gpu_build.sh
export GMT_BENCH_MODEL="${GMT_BENCH_MODEL:-small}"
[ "$GMT_BENCH_MODEL" = large ] && unset GMT_BENCH_MODEL
pin=(taskset -c "${GMT_BENCH_CPUS:-2-5}")

. scripts/lib/tracker_shim.sh
if ! build_tracker_shim; then
  echo "FAIL: no shim was built (see shim-build.log), or the stub did not build"
  exit 1
fi

measure() {  # measure MODE ROUND
  local mode=$1 name="$1.$2"
  case $mode in
    control) "${pin[@]}" python3 tests/gpu/mlp_step_time.py --midway - - "$out/$name.json" ;;
    tracker_noop) "${pin[@]}" python3 tests/gpu/mlp_step_time.py --midway "$shim" "$stub" \
      "$out/$name.json" ;;
    gmt_*) "${pin[@]}" env GPUMEMTRACE_TORCH_BLOCKS=0 GPUMEMTRACE_STACKS="${mode#gmt_}" \
      "$gmt" run -o "$out/$name.%p.gmt" -- \
      python3 tests/gpu/mlp_step_time.py --midway "$shim" - "$out/$name.json" ;;
    *) echo "unknown mode $mode" >&2; return 1 ;;
  esac >"$out/$name.log" 2>&1 || echo "FAIL $name (see $name.log)"
  rm -f "$out/$name".*.gmt
}

read -r -a modes <<<"${GMT_BENCH_MODES:-control tracker_noop gmt_all}"
for round in $(seq 1 "${GMT_BENCH_ROUNDS:-6}"); do
  for mode in "${modes[@]}"; do measure "$mode" "$round"; done
done

python3 - "$out" "${GMT_BENCH_ROUNDS:-6}" "${modes[@]}" <<'PY'
import json, os, statistics, sys
out, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print(f"{'mode':14} {'before ms':>9} {'after ms':>9} {'after/before':>12} {'cpu ratio':>9}"
      f" {'vs control':>10}   after/before by round")
control = None
for mode in modes:
    results = []
    for r in range(1, rounds + 1):
        path = os.path.join(out, f"{mode}.{r}.json")
        if os.path.exists(path):
            results.append(json.load(open(path)))
    if not results:
        print(f"{mode:14} failed (see {mode}.*.log)")
        continue
    ratio = statistics.median(r["ratio"] for r in results)
    control = ratio if mode == "control" else control
    versus = f"{ratio / control:.3f}x" if control else "-"
    print(f"{mode:14} {statistics.median(r['before_ms_per_step'] for r in results):9.3f}"
          f" {statistics.median(r['ms_per_step'] for r in results):9.3f} {ratio:11.3f}x"
          f" {statistics.median(r['cpu_ratio'] for r in results):8.3f}x {versus:>10}   "
          + " ".join(f"{r['ratio']:.3f}" for r in results))
PY
