#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Records, on a GPU, the small PyTorch traces that the caching allocator's model is checked
# against without one (tests/gpu/allocator_fidelity.py; the fragmentation OOM of
# tests/gpu/report_cases.py): each traced with the defaults users run (PyTorch's caching
# allocator, block events, stacks), with PyTorch's own figures beside it. Everything goes into
# one archive, OUTPUT_DIR/fidelity.tar.gz: CASE.gmt and CASE.figures.json per case.
# Usage: scripts/gpu-record-fidelity.sh [OUTPUT_DIR]   (default: $OUT, else gpu-validate-output)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-validate-output}}"
mkdir -p "$out"
. scripts/lib/gpu_build.sh
. scripts/lib/gpu_checks.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
record() {  # record NAME ALLOC_CONF PROGRAM ARG...
  local name=$1 conf=$2
  shift 2
  PYTORCH_CUDA_ALLOC_CONF="$conf" "$gmt" run -o "$work/$name.%p.gmt" -- python3 "$@" \
    "$work/$name.figures.json" >"$work/$name.log" 2>&1 ||
    { echo "FAIL $name (see its log)"; tail -5 "$work/$name.log"; failures=$((failures + 1)); return; }
  mv "$work/$name".*.gmt "$work/$name.gmt"
  echo "$name: $(stat -c %s "$work/$name.gmt") bytes; torch: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print({k: d[k] for k in d if k.startswith("max_") or k.startswith("num_") or k in ("memory_reserved", "oom")})' "$work/$name.figures.json")"
}
for case in mlp resnet transformer compiled empty_cache; do
  record "$case" "" tests/gpu/allocator_fidelity.py "$case"
done
record expandable "expandable_segments:True" tests/gpu/allocator_fidelity.py mlp
record tuned "max_split_size_mb:32,roundup_power2_divisions:4" tests/gpu/allocator_fidelity.py mlp
record fragmented "" tests/gpu/report_cases.py fragmented
tar -czf "$out/fidelity.tar.gz" -C "$work" $(cd "$work" && ls -- *.gmt *.figures.json)
ls -la "$out/fidelity.tar.gz"
echo "gpu-record-fidelity: $failures failure(s)"
exit $((failures > 0))
