#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# whatif --batch-from against PyTorch rerun for real: the traces in
# tests/data/batch_from_real_runs.tar.gz were recorded on an H100 (torch 2.11.0+cu130) by
# scripts/gpu-validate-whatif.sh's mlp case: the MLP (AdamW) at batch 138,368 (mlp.gmt) and at half
# that (mlp_half.gmt), with PyTorch's own figures of the MLP rerun untraced at twice and three
# times the batch (mlp_x2.figures.json, mlp_x3.figures.json). Each request's size fitted through
# the two runs must predict the reruns' highest reserved to the byte (the allocator's model is
# exact on these runs), their highest allocated within 0.5 %, and that both fit.
# Usage: batch_from_real_runs_test.sh GPUMEMTRACE ARCHIVE
. "$(dirname "$0")/real_runs_archive.bash" "$@"
for k in 2 3; do
  "$gmt" whatif --json "$work/mlp.gmt" --batch-from "$work/mlp_half.gmt" --batch-scale "$k" \
    >"$work/x$k.whatif.json" || { echo "FAIL x$k: whatif exited $?"; status=1; continue; }
  python3 - "x$k" "$work/x$k.whatif.json" "$work/mlp_x$k.figures.json" <<'PY' || status=1
import json
import sys

label, answer, figures = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
[device] = answer["devices"]
predicted = device["predicted"]
allocated_error = predicted["max_allocated_bytes"] / figures["max_memory_allocated"] - 1
expected = {"batch ratio": 0.5, "max reserved": figures["max_memory_reserved"],
            "allocated within 0.5 %": True, "fits": figures["oom"] == ""}
got = {"batch ratio": answer["batch_from"]["batch_ratio"],
       "max reserved": predicted["max_reserved_bytes"],
       "allocated within 0.5 %": abs(allocated_error) <= 0.005, "fits": predicted["fits"]}
if got != expected:
    print(f"FAIL {label}: expected {expected}, got {got} (allocated {allocated_error:+.2%})")
    sys.exit(1)
print(f"PASS {label}: {got} (allocated {allocated_error:+.3%})")
PY
done
exit $status
