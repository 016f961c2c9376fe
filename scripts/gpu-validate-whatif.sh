#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Section 5 of issue 48: whatif's predictions checked against PyTorch rerun for real. For the MLP
# (AdamW), ResNet-50 AMP, a Transformer with AdamW and the fragmentation case: one traced run
# at a batch sized to the device (tests/gpu/whatif_rerun.py), then for each change a prediction
# (`whatif --json`) and a rerun untraced under the change, with PyTorch's max_memory_allocated,
# max_memory_reserved and whether it ran out of memory. The changes: none (the model against an
# untraced run), allocator settings (expandable_segments, max_split_size_mb), batch x0.5, x2,
# x3, activation checkpointing of the repeated blocks, zero_grad(set_to_none=True) (from a run
# traced with set_to_none=False), the largest batch whatif says fits and a batch 1/8 above it.
# Targets (issue 48): allocator settings within 2 % of the highest reserved; batch scales and
# checkpointing within 5 % of the highest allocated; every fits / does-not-fit verdict right.
# Output: OUTPUT_DIR/whatif_table.md (also printed), each case's files as whatif_CASE_*.
# Usage: scripts/gpu-validate-whatif.sh [OUTPUT_DIR]   (default: $OUT, else gpu-validate-output)
# GMT_WHATIF_CASES picks the cases (default "mlp resnet transformer fragmented"), GMT_WHATIF_LABELS
# the changes by a pattern of their labels (unchanged, expandable, max_split, batch_x2, batch_from_x2
# (needs batch_x2), checkpoint,
# batch_largest_x1...; default all: "batch_largest*" reruns only the verdict's edge).
# GMT_WHATIF_TRACE_EDGE=1 also traces the largest batch said to fit (whatif_CASE_edge.*).
set -uo pipefail
shopt -s extglob  # GMT_WHATIF_LABELS may be "@(batch_largest*|set_to_none)"
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-validate-output}}"
mkdir -p "$out"
. scripts/lib/gpu_build.sh
. scripts/lib/gpu_checks.sh
rows="$out/whatif_rows.jsonl"
: >"$rows"

echo "--- whatif against the rerun"
# predict_and_rerun CASE LABEL CONF BATCH "WHATIF ARGS" [RERUN ARG...]
predict_and_rerun() {
  local case=$1 label=$2 conf=$3 batch=$4 whatif_args=$5
  shift 5
  # shellcheck disable=SC2053  # GMT_WHATIF_LABELS is a pattern
  [[ -z ${GMT_WHATIF_LABELS:-} || $label == $GMT_WHATIF_LABELS ]] || return 0
  local stem="$out/whatif_${case}_${label}"
  # shellcheck disable=SC2086  # the whatif arguments are words
  "$gmt" whatif "$trace" $whatif_args --json >"$stem.predicted.json" 2>"$stem.whatif.err" ||
    { echo "FAIL $case $label: whatif $whatif_args: $(head -1 "$stem.whatif.err")"; failures=$((failures + 1)); return; }
  local batch_args=()
  [ "$batch" != "-" ] && batch_args=(--batch "$batch")
  PYTORCH_CUDA_ALLOC_CONF="$conf" python3 tests/gpu/whatif_rerun.py "$case" "$stem.rerun.json" \
    "${batch_args[@]}" "$@" >"$stem.rerun.log" 2>&1 ||
    { echo "FAIL $case $label: the rerun (see $(basename "$stem").rerun.log)"; tail -3 "$stem.rerun.log"; failures=$((failures + 1)); return; }
  python3 -c 'import json,sys; print(json.dumps(dict(zip(["case","label","change","predicted","rerun"], sys.argv[1:]))))' \
    "$case" "$label" "${whatif_args:-none}${conf:+ (PYTORCH_CUDA_ALLOC_CONF=$conf)}" \
    "$stem.predicted.json" "$stem.rerun.json" >>"$rows"
  echo "$case $label: predicted $(json_field "$stem.predicted.json" 'd["devices"][0]["predicted"]'), rerun $(json_field "$stem.rerun.json" '{k: d[k] for k in ("batch", "max_memory_allocated", "max_memory_reserved", "oom")}')"
}

# predict_against CASE LABEL RERUN_LABEL "WHATIF ARGS": a prediction checked against another
# change's rerun (the same program under the same change, predicted another way).
predict_against() {
  local case=$1 label=$2 rerun_label=$3 whatif_args=$4
  # shellcheck disable=SC2053  # GMT_WHATIF_LABELS is a pattern
  [[ -z ${GMT_WHATIF_LABELS:-} || $label == $GMT_WHATIF_LABELS ]] || return 0
  local stem="$out/whatif_${case}_${label}" rerun="$out/whatif_${case}_${rerun_label}.rerun.json"
  [ -f "$rerun" ] || { echo "FAIL $case $label: no rerun $rerun_label to check against"; failures=$((failures + 1)); return; }
  # shellcheck disable=SC2086  # the whatif arguments are words
  "$gmt" whatif "$trace" $whatif_args --json >"$stem.predicted.json" 2>"$stem.whatif.err" ||
    { echo "FAIL $case $label: whatif $whatif_args: $(head -1 "$stem.whatif.err")"; failures=$((failures + 1)); return; }
  python3 -c 'import json,sys; print(json.dumps(dict(zip(["case","label","change","predicted","rerun"], sys.argv[1:]))))' \
    "$case" "$label" "$whatif_args" "$stem.predicted.json" "$rerun" >>"$rows"
  echo "$case $label: predicted $(json_field "$stem.predicted.json" 'd["devices"][0]["predicted"]'), rerun $(json_field "$rerun" '{k: d[k] for k in ("batch", "max_memory_allocated", "max_memory_reserved", "oom")}')"
}

for case in ${GMT_WHATIF_CASES-mlp resnet transformer fragmented}; do
  rm -f "$out/whatif_$case".*.gmt
  "$gmt" run -o "$out/whatif_$case.%p.gmt" -- python3 tests/gpu/whatif_rerun.py "$case" \
    "$out/whatif_${case}_traced.json" >"$out/whatif_${case}_traced.log" 2>&1 ||
    { echo "FAIL $case: the traced run (see whatif_${case}_traced.log)"; tail -5 "$out/whatif_${case}_traced.log"; failures=$((failures + 1)); continue; }
  trace=$(ls "$out/whatif_$case".*.gmt | sed -n 1p)
  if [ "$case" = fragmented ]; then
    batch=-
  else
    batch=$(json_field "$out/whatif_${case}_traced.json" 'd["batch"]')
  fi
  echo "$case: traced at batch $batch on $(json_field "$out/whatif_${case}_traced.json" 'round(d["device_total_bytes"] / 2**30, 1)') GiB: $trace"
  "$gmt" whatif "$trace" | tee "$out/whatif_${case}_unchanged.txt" | sed -n '/fidelity/p'

  predict_and_rerun "$case" unchanged "" "$batch" ""
  predict_and_rerun "$case" expandable "expandable_segments:True" "$batch" \
    "--alloc-conf expandable_segments:True"
  predict_and_rerun "$case" max_split "max_split_size_mb:128" "$batch" \
    "--alloc-conf max_split_size_mb:128"
  [ "$case" = fragmented ] && continue
  for k in 0.5 2 3; do
    b=$(python3 -c "print(max(1, round($batch * $k)))")
    predict_and_rerun "$case" "batch_x$k" "" "$b" "--batch-scale $(python3 -c "print($b / $batch)")"
  done
  # --batch-from: each request's size fitted through this run and one at half the batch, checked
  # against the batch x2 and x3 reruns.
  # shellcheck disable=SC2053  # GMT_WHATIF_LABELS is a pattern
  if [[ -z ${GMT_WHATIF_LABELS:-} || batch_from_x2 == $GMT_WHATIF_LABELS || batch_from_x3 == $GMT_WHATIF_LABELS ]]; then
    half=$(python3 -c "print(max(1, round($batch / 2)))")
    rm -f "$out/whatif_${case}_half".*.gmt
    if "$gmt" run -o "$out/whatif_${case}_half.%p.gmt" -- python3 tests/gpu/whatif_rerun.py "$case" \
      "$out/whatif_${case}_half_traced.json" --batch "$half" >"$out/whatif_${case}_half_traced.log" 2>&1; then
      half_trace=$(ls "$out/whatif_${case}_half".*.gmt | sed -n 1p)
      for k in 2 3; do
        b=$(python3 -c "print(max(1, round($batch * $k)))")
        predict_against "$case" "batch_from_x$k" "batch_x$k" "--batch-from $half_trace --batch-scale $(python3 -c "print($b / $batch)")"
      done
    else
      echo "FAIL $case: the traced run at half the batch (see whatif_${case}_half_traced.log)"
      failures=$((failures + 1))
    fi
  fi
  # Activation checkpointing of the network's repeated blocks (the modules peak's remedies pick).
  case "$case" in
    resnet) modules="layer1 layer2 layer3 layer4" ;;
    transformer) modules="layers.0 layers.1 layers.2 layers.3" ;;
    *) modules="0 1 2 3" ;;
  esac
  checkpoint_whatif="" checkpoint_rerun=()
  for m in $modules; do
    checkpoint_whatif+=" --checkpoint $m"
    checkpoint_rerun+=(--checkpoint "$m")
  done
  predict_and_rerun "$case" checkpoint "" "$batch" "${checkpoint_whatif# }" "${checkpoint_rerun[@]}"
  # zero_grad(set_to_none=False) traced, set to None predicted, and rerun set to None.
  # shellcheck disable=SC2053  # GMT_WHATIF_LABELS is a pattern
  if [[ -z ${GMT_WHATIF_LABELS:-} || set_to_none == $GMT_WHATIF_LABELS ]]; then
    rm -f "$out/whatif_${case}_kept".*.gmt
    if "$gmt" run -o "$out/whatif_${case}_kept.%p.gmt" -- python3 tests/gpu/whatif_rerun.py "$case" \
      "$out/whatif_${case}_kept_traced.json" --batch "$batch" --set-to-none 0 \
      >"$out/whatif_${case}_kept_traced.log" 2>&1; then
      set_to_none_trace=$(ls "$out/whatif_${case}_kept".*.gmt | sed -n 1p)
      echo "$case: traced with zero_grad(set_to_none=False): recorded max allocated $(json_field "$out/whatif_${case}_kept_traced.json" 'd["max_memory_allocated"]')"
      trace_as_recorded=$trace trace=$set_to_none_trace
      predict_and_rerun "$case" set_to_none "" "$batch" "--set-to-none" --set-to-none 1
      trace=$trace_as_recorded
    else
      echo "FAIL $case: the traced run with set_to_none=False (see whatif_${case}_kept_traced.log)"
      failures=$((failures + 1))
    fi
  fi
  # The largest batch whatif says fits, and 1/8 above it: the verdict's edge.
  "$gmt" whatif "$trace" --largest-batch --json >"$out/whatif_${case}_largest.json" ||
    { echo "FAIL $case: whatif --largest-batch"; failures=$((failures + 1)); continue; }
  largest=$(json_field "$out/whatif_${case}_largest.json" 'd["largest_batch_scale"]["largest_fitting"]')
  echo "$case: the largest batch scale that fits, as predicted: $largest"
  if [ "$largest" != None ]; then
    for edge in 1 1.125; do
      b=$(python3 -c "import math; print(max(1, math.floor($batch * $largest * $edge)))")
      predict_and_rerun "$case" "batch_largest_x$edge" "" "$b" "--batch-scale $(python3 -c "print($b / $batch)")"
    done
    # GMT_WHATIF_TRACE_EDGE=1: the largest batch said to fit also run traced, and its own trace
    # replayed unchanged beside the scaled prediction, by role: where a wrong verdict's
    # difference lies (whatif_CASE_edge.*; the trace is kept).
    if [ -n "${GMT_WHATIF_TRACE_EDGE:-}" ]; then
      b=$(python3 -c "import math; print(max(1, math.floor($batch * $largest)))")
      rm -f "$out/whatif_${case}_edge".*.gmt
      "$gmt" run -o "$out/whatif_${case}_edge.%p.gmt" -- python3 tests/gpu/whatif_rerun.py "$case" \
        "$out/whatif_${case}_edge_traced.json" --batch "$b" >"$out/whatif_${case}_edge_traced.log" 2>&1
      edge_trace=$(ls "$out/whatif_${case}_edge".*.gmt 2>/dev/null | sed -n 1p)
      if [ -n "$edge_trace" ]; then
        "$gmt" whatif "$edge_trace" --json >"$out/whatif_${case}_edge.unchanged.json" 2>&1
        {
          echo "== the edge batch $b traced, replayed unchanged"
          "$gmt" whatif "$edge_trace" 2>&1
          echo "== scaled from batch $batch"
          "$gmt" whatif "$trace" --batch-scale "$(python3 -c "print($b / $batch)")" 2>&1
          echo "== the edge run's failure"
          "$gmt" oom "$edge_trace" 2>&1
        } >"$out/whatif_${case}_edge.compare.txt"
        echo "$case: the edge batch $b traced: $(json_field "$out/whatif_${case}_edge_traced.json" '{k: d.get(k) for k in ("max_memory_allocated", "max_memory_reserved", "oom")}')"
      else
        echo "INFO $case: the edge batch $b traced left no trace (see whatif_${case}_edge_traced.log)"
      fi
    fi
  fi
done

python3 tests/gpu/whatif_table.py "$rows" "$out/whatif_table.md"
cat "$out/whatif_table.md"
echo "gpu-validate-whatif: $failures failure(s)"
exit $((failures > 0))
