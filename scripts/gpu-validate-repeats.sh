#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A what-if replay skips the optimizer steps that repeat the one before from the same allocator
# state (analyzer/model/allocator/replay_events.h): checked on real PyTorch training runs. For
# the MLP, ResNet-50 AMP and the Transformer (tests/gpu/whatif_rerun.py) traced over
# GMT_REPEAT_STEPS steps (default 30) at their batch for the device, each what-if's JSON with
# the skipping equals the one without (GPUMEMTRACE_REPLAY_EVERY_STEP=1) but for steps_skipped;
# prints how many steps were skipped and both times.
# Usage: scripts/gpu-validate-repeats.sh [OUTPUT_DIR]   (default: $OUT, else gpu-validate-output)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-validate-output}}"
mkdir -p "$out"
. scripts/lib/gpu_build.sh
. scripts/lib/gpu_checks.sh
steps="${GMT_REPEAT_STEPS:-30}"

echo "--- whatif skips repeated steps: the same figures as replaying every step"
for case in ${GMT_REPEAT_CASES-mlp resnet transformer}; do
  rm -f "$out/repeats_$case".*.gmt
  "$gmt" run -o "$out/repeats_$case.%p.gmt" -- python3 tests/gpu/whatif_rerun.py "$case" \
    "$out/repeats_${case}_traced.json" --steps "$steps" >"$out/repeats_${case}.log" 2>&1 ||
    { echo "FAIL $case: the traced run (see repeats_${case}.log)"; tail -5 "$out/repeats_${case}.log"; failures=$((failures + 1)); continue; }
  trace=$(ls "$out/repeats_$case".*.gmt | sed -n 1p)
  total=$(json_field "$out/repeats_${case}_traced.json" 'd["device_total_bytes"]')
  for change in "--batch-scale 2" "--alloc-conf expandable_segments:True" "--shard 4" \
    "--dtype activation=bf16" "--largest-batch" "--device-memory $((total / 2))"; do
    # shellcheck disable=SC2086  # the change's words
    skipping=$( { /usr/bin/time -f %e "$gmt" whatif "$trace" $change --json >"$out/repeats.skip.json"; } 2>&1 | tail -1)
    # shellcheck disable=SC2086
    every=$( { /usr/bin/time -f %e env GPUMEMTRACE_REPLAY_EVERY_STEP=1 "$gmt" whatif "$trace" $change --json >"$out/repeats.every.json"; } 2>&1 | tail -1)
    same=$(python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); s=a.pop("steps_skipped"); b.pop("steps_skipped"); print("same" if a == b else "DIFFERENT", s)' \
      "$out/repeats.skip.json" "$out/repeats.every.json")
    check "$case $change: the figures with repeated steps skipped (steps skipped: ${same#* }; ${skipping} s, every step ${every} s)" same "${same%% *}"
  done
done
echo "gpu-validate-repeats: $failures failure(s)"
exit $((failures > 0))
