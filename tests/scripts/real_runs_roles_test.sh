#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Roles of real PyTorch runs (traces recorded on an H100, torch 2.11.0+cu130, kept in
# tests/data/allocator_fidelity.tar.gz): nothing of a trained MLP, ResNet-50 or transformer is
# `unknown`, at the peak or at exit. What used to be: PyTorch's cuBLAS workspaces (32 MiB for the
# main thread, 32 MiB for the autograd thread) and cuBLASLt's (1 MiB), now `library` beside
# cuBLAS's own driver allocations (each trace's figure below: those plus the 65 MiB).
# Usage: real_runs_roles_test.sh GPUMEMTRACE ARCHIVE
. "$(dirname "$0")/real_runs_archive.bash" "$@"
for case in mlp:134481920 transformer:134481920 resnet:134532616; do
  name=${case%%:*} driver=${case#*:}
  "$gmt" report --json "$work/$name.gmt" >"$work/$name.json"
  python3 - "$name" "$driver" "$work/$name.json" <<'PY' || status=1
import json
import sys

name, driver, report = sys.argv[1], int(sys.argv[2]), json.load(open(sys.argv[3]))
[device] = report["devices"]
workspaces = 2 * 32 * 1024 * 1024 + 1024 * 1024
got, expected = {}, {}
for moment in ("at_peak", "at_exit"):
    roles = {r["role"]: r for r in device["by_role"][moment]}
    got[moment] = {"unknown": roles["unknown"]["bytes"], "library": roles["library"]["bytes"]}
    expected[moment] = {"unknown": 0, "library": driver + workspaces}
if got != expected:
    print(f"FAIL {name}: expected {expected}, got {got}")
    sys.exit(1)
print(f"PASS {name}: {got}")
PY
done
exit $status
