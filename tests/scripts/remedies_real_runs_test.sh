#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The remedies of real PyTorch runs (tests/data/allocator_fidelity.tar.gz, recorded on an H100) on
# a device where the allocator has a tenth less than each needed: `peak` offers activation checkpointing of the
# network's repeated blocks (ResNet-50's layer1..layer4, the transformer's layers.0..3), the
# modules that made at least 5 % of the activations each, and its figures are `whatif`'s with
# those --checkpoint options, to the byte.
# Usage: remedies_real_runs_test.sh GPUMEMTRACE ARCHIVE
. "$(dirname "$0")/real_runs_archive.bash" "$@"
for entry in "resnet:layer1 layer2 layer3 layer4" "transformer:layers.0 layers.1 layers.2 layers.3"; do
  case=${entry%%:*} modules=${entry#*:}
  trace="$work/$case.gmt"
  # The allocator on a device where it has a tenth less than it reserved: the CUDA context and
  # what else the driver's samples show outside it, plus nine tenths of its highest reserved.
  device=$("$gmt" whatif --json "$trace" | python3 -c 'import json,sys; d=json.load(sys.stdin)["devices"][0]; print(d["outside_bytes"] + d["recorded"]["max_reserved_bytes"] * 9 // 10)')
  "$gmt" peak --json --device-memory "$device" "$trace" >"$work/$case.peak.json"
  whatif_args=()
  for m in $modules; do whatif_args+=(--checkpoint "$m"); done
  "$gmt" whatif --json --device-memory "$device" "${whatif_args[@]}" "$trace" >"$work/$case.whatif.json"
  python3 - "$case" "$modules" "$work/$case.peak.json" "$work/$case.whatif.json" <<'PY' || status=1
import json
import sys

case, modules = sys.argv[1], sys.argv[2].split()
peak, whatif = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))

def remedies(o):
    if isinstance(o, dict):
        if "remedies" in o:
            return o["remedies"]
        for v in o.values():
            if (found := remedies(v)) is not None:
                return found
    elif isinstance(o, list):
        for v in o:
            if (found := remedies(v)) is not None:
                return found
    return None

wanted = "checkpoint " + ", ".join(modules)
found = [r for r in remedies(peak) or [] if r["change"] == wanted]
if len(found) != 1:
    print(f"FAIL {case}: no remedy '{wanted}' among {[r['change'] for r in remedies(peak) or []]}")
    sys.exit(1)
[r] = found
p = whatif["devices"][0]["predicted"]
expected = {"whatif": " ".join("--checkpoint " + m for m in modules), "fits": True,
            "max reserved": p["max_reserved_bytes"], "max allocated": p["max_allocated_bytes"],
            "whatif fits": True}
got = {"whatif": r["whatif"], "fits": r["fits"], "max reserved": r["predicted_max_reserved_bytes"],
       "max allocated": r["predicted_max_allocated_bytes"], "whatif fits": p["fits"]}
if got != expected:
    print(f"FAIL {case}: expected {expected}, got {got}")
    sys.exit(1)
print(f"PASS {case}: {got}")
PY
done
exit $status
