#!/usr/bin/env bash
# Overhead on a real GPU, in one run: a small PyTorch MLP training step, untraced, traced by
# gpumemtrace with each stack mode, and with PyTorch's own _record_memory_history for
# comparison; with the default caching allocator and with PYTORCH_NO_CUDA_MEMORY_CACHING=1
# (every tensor goes to the driver). Prints time per step and the ratio to untraced.
# Usage: scripts/gpu-bench.sh [OUTPUT_DIR]   (default: $OUT, else gpu-bench-output)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-bench-output}}"
mkdir -p "$out"
if [ ! -x build-gpu/bin/gpumemtrace ]; then
  cmake -S . -B build-gpu -DGMT_BUILD_TESTS=OFF >"$out/build.log" 2>&1 &&
    cmake --build build-gpu -j "$(nproc)" >>"$out/build.log" 2>&1 || { echo "build failed (see build.log)"; exit 1; }
fi
if [ -d build-gpu/lib/deps ]; then export LD_LIBRARY_PATH="$PWD/build-gpu/lib/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
gmt="$PWD/build-gpu/bin/gpumemtrace"

measure() {  # measure ALLOCATOR MODE
  local allocator=$1 mode=$2 name="$1.$2" env=()
  [ "$allocator" = nocache ] && env+=(PYTORCH_NO_CUDA_MEMORY_CACHING=1)
  case $mode in
    untraced) env "${env[@]}" python3 tests/gpu/mlp_step_time.py "$out/$name.json" ;;
    torch_history_python) env "${env[@]}" python3 tests/gpu/mlp_step_time.py --history python "$out/$name.json" ;;
    torch_history_all) env "${env[@]}" python3 tests/gpu/mlp_step_time.py --history all "$out/$name.json" ;;
    gmt_*) env "${env[@]}" GPUMEMTRACE_STACKS="${mode#gmt_}" "$gmt" run -o "$out/$name.%p.gmt" -- \
      python3 tests/gpu/mlp_step_time.py "$out/$name.json" ;;
  esac >"$out/$name.log" 2>&1 || echo "FAIL $name (see $name.log)"
}

modes=(untraced gmt_none gmt_native gmt_all torch_history_python torch_history_all)
for allocator in caching nocache; do
  for mode in "${modes[@]}"; do measure "$allocator" "$mode"; done
done

python3 - "$out" "${modes[@]}" <<'PY'
import json, sys, os
out, modes = sys.argv[1], sys.argv[2:]
print(f"{'allocator':10} {'mode':22} {'ms/step':>9} {'vs untraced':>12}")
for allocator in ("caching", "nocache"):
    base = None
    for mode in modes:
        path = os.path.join(out, f"{allocator}.{mode}.json")
        if not os.path.exists(path):
            print(f"{allocator:10} {mode:22} {'failed':>9}")
            continue
        ms = json.load(open(path))["ms_per_step"]
        base = ms if mode == "untraced" else base
        ratio = f"{ms / base:.3f}x" if base else "-"
        print(f"{allocator:10} {mode:22} {ms:9.3f} {ratio:>12}")
PY
