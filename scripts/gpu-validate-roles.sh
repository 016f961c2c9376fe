#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Section 14 of scripts/gpu-validate.sh, also run on its own: memory by role and by module.
#   - four MLP blocks with AdamW: parameters, gradients and AdamW's state at exit equal the bytes
#     the model and the optimizer give; activations 0 at exit, > 0 at the peak; module names as
#     named_modules() gives them; the roles at the peak add up to the peak;
#   - the same model under PyTorch's MemTracker (its figures at its peak, printed beside ours);
#   - torchvision ResNet-50 (AMP) and nn.TransformerEncoder with AdamW: the role table at the peak;
#   - the MLP's blocks under activation checkpointing: the same checks (the modules recomputed in
#     backward keep the model's names), and fewer activations at the peak than the plain MLP's;
#   - the MLP's peak in its 6th step, a forward the hooks report in outline: its activations are
#     its modules' (named_modules()), none the root's;
#   - the MLP's forward captured in a CUDA graph: the live blocks of its private pool (the kept
#     output, the workspace cuBLAS took for the capture's stream) are cuda_graph at exit;
#   - the MLP deleted after training: torch's allocated falls by its parameters, gradients and
#     state, and no parameter, gradient or optimizer state is left at exit (the hooks hold no
#     tensor);
#   - an OOM in a forward: ResNet-50 AMP at a batch too large for the device fails in its first
#     forward; at the failure the role table leads with activations (temporaries under no_grad),
#     made by the forward still running, by module; almost nothing is unknown;
#   - the cost: ResNet-50 AMP steps with roles and without (GPUMEMTRACE_ROLES=0), interleaved.
# Usage: scripts/gpu-validate-roles.sh [OUTPUT_DIR]; exits non-zero when a check failed.
# GMT_ROLES_COST=0 skips the cost; GMT_ROLES_MODELS picks the models of the first checks (default
# "mlp resnet transformer checkpointed"; "" runs none of them, only the CUDA graph, torch.compile and
# MemTracker parts).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-validate-output}}"
mkdir -p "$out"
. scripts/lib/gpu_build.sh
. scripts/lib/gpu_checks.sh

echo "--- 14. roles and modules"
for model in ${GMT_ROLES_MODELS-mlp resnet transformer checkpointed}; do
  rm -f "$out/roles_$model".*.gmt
  "$gmt" run -o "$out/roles_$model.%p.gmt" -- python3 tests/gpu/roles_models.py "$model" \
    "$out/roles_$model.expected.json" >"$out/roles_$model.log" 2>&1 ||
    { echo "FAIL roles_models.py $model (see roles_$model.log)"; tail -5 "$out/roles_$model.log"; failures=$((failures + 1)); continue; }
  trace=$(ls "$out/roles_$model".*.gmt | sed -n 1p)
  "$gmt" peak --json "$trace" >"$out/roles_$model.peak.json"
  "$gmt" report --json "$trace" >"$out/roles_$model.report.json"
  echo "== $model: gpumemtrace peak (roles, modules, first sites)"
  "$gmt" peak --top 3 "$trace" | sed -n 1,40p
  grep -h "roles and modules" "$out/roles_$model.log" || "$gmt" info "$trace" | grep -i "roles" || true
  dev='d["devices"][0]'
  check "$model: the roles at the peak add up to the peak" True \
    "$(json_field "$out/roles_$model.peak.json" "sum(r['bytes'] for r in $dev['by_role']) == $dev['peak_bytes']")"
  check "$model: the roles at exit add up to what is live at exit" True \
    "$(json_field "$out/roles_$model.report.json" "sum(r['bytes'] for r in $dev['by_role']['at_exit']) == $dev['live_at_exit_bytes']")"
  role_at() {  # role_at FILE WHEN ROLE
    json_field "$1" "[r['bytes'] for r in $dev['by_role']['$2'] if r['role'] == '$3'][0]"
  }
  for role in parameter gradient optimizer_state; do
    check "$model: $role bytes at exit equal the model's" \
      "$(json_field "$out/roles_$model.expected.json" "d['${role}_bytes']")" \
      "$(role_at "$out/roles_$model.report.json" at_exit "$role")"
  done
  check "$model: no activation at exit" 0 "$(role_at "$out/roles_$model.report.json" at_exit activation)"
  # Checkpointed, the peak moves into the optimizer's first step, where no activation lives: it
  # is checked against the plain MLP's below instead.
  if [ "$model" != checkpointed ]; then
    check "$model: activations at the peak" True "$(json_field "$out/roles_$model.report.json" "[r['bytes'] for r in $dev['by_role']['at_peak'] if r['role'] == 'activation'][0] > 0")"
  fi
  check "$model: every module named is one of named_modules() or the root's class" True \
    "$(python3 -c 'import json,sys; e=set(json.load(open(sys.argv[1]))["modules"]); p=json.load(open(sys.argv[2]))["devices"][0]["by_module"]; print(all(m["module"] in e or "." not in m["module"] and m["module"][:1].isupper() for m in p) and len(p) > 0)' "$out/roles_$model.expected.json" "$out/roles_$model.peak.json")"
done

if [ -f "$out/roles_checkpointed.report.json" ] && [ -f "$out/roles_mlp.report.json" ]; then
  activation_at_peak() {
    json_field "$1" "[r['bytes'] for r in d['devices'][0]['by_role']['at_peak'] if r['role'] == 'activation'][0]"
  }
  plain=$(activation_at_peak "$out/roles_mlp.report.json")
  kept=$(activation_at_peak "$out/roles_checkpointed.report.json")
  echo "INFO activations at the peak: the MLP $plain bytes, the same blocks checkpointed $kept bytes"
  check "checkpointing: fewer activations at the peak than the plain MLP's" True "$([ "$kept" -lt "$plain" ] && echo True || echo False)"
fi

echo "== outline forwards: the MLP's peak in its 6th step, a forward reported in outline"
rm -f "$out"/roles_outline.*.gmt
if "$gmt" run -o "$out/roles_outline.%p.gmt" -- python3 tests/gpu/roles_models.py outline \
  "$out/roles_outline.json" >"$out/roles_outline.log" 2>&1; then
  "$gmt" peak --json "$(ls "$out"/roles_outline.*.gmt | sed -n 1p)" >"$out/roles_outline.peak.json"
  "$gmt" peak --top 1 "$(ls "$out"/roles_outline.*.gmt | sed -n 1p)" | sed -n 1,20p
  check "outline: activations at the peak are the blocks' own modules', none the root's" True \
    "$(python3 -c 'import json,sys; e=set(json.load(open(sys.argv[1]))["modules"]); p=json.load(open(sys.argv[2]))["devices"][0]["by_module"]; a=[m for m in p if m["by_role"].get("activation")]; print(len(a) > 0 and all(m["module"] in e for m in a))' "$out/roles_outline.json" "$out/roles_outline.peak.json")"
else
  echo "FAIL roles_models.py outline (see roles_outline.log)"; tail -5 "$out/roles_outline.log"; failures=$((failures + 1))
fi

echo "== a CUDA graph: the MLP's forward captured (torch.cuda.graph) after training"
rm -f "$out"/roles_graphed.*.gmt
if "$gmt" run -o "$out/roles_graphed.%p.gmt" -- python3 tests/gpu/roles_models.py graphed \
  "$out/roles_graphed.json" >"$out/roles_graphed.log" 2>&1; then
  "$gmt" report --json "$(ls "$out"/roles_graphed.*.gmt | sed -n 1p)" >"$out/roles_graphed.report.json"
  echo "INFO cuda graph: the kept output $(json_field "$out/roles_graphed.json" 'd["graph_output_bytes"]') bytes, in the graph's private pool"
  check "cuda graph: the live blocks of the graph's private pool (its output, cuBLAS's workspace) are cuda_graph at exit" \
    "$(json_field "$out/roles_graphed.json" 'd["graph_pool_bytes"]')" \
    "$(json_field "$out/roles_graphed.report.json" "[r['bytes'] for r in d['devices'][0]['by_role']['at_exit'] if r['role'] == 'cuda_graph'][0]")"
  check "cuda graph: parameters at exit still the model's" \
    "$(json_field "$out/roles_graphed.json" 'd["parameter_bytes"]')" \
    "$(json_field "$out/roles_graphed.report.json" "[r['bytes'] for r in d['devices'][0]['by_role']['at_exit'] if r['role'] == 'parameter'][0]")"
else
  echo "FAIL roles_models.py graphed (see roles_graphed.log)"; tail -5 "$out/roles_graphed.log"; failures=$((failures + 1))
fi

echo "== a model the program deletes after training: nothing of it stays (the hooks hold no tensor)"
rm -f "$out"/roles_deleted.*.gmt
if "$gmt" run -o "$out/roles_deleted.%p.gmt" -- python3 tests/gpu/roles_models.py deleted \
  "$out/roles_deleted.json" >"$out/roles_deleted.log" 2>&1; then
  "$gmt" report --json "$(ls "$out"/roles_deleted.*.gmt | sed -n 1p)" >"$out/roles_deleted.report.json"
  echo "INFO deleted: the model's parameters $(json_field "$out/roles_deleted.json" 'd["parameter_bytes"]') bytes; allocated after the delete $(json_field "$out/roles_deleted.json" 'd["allocated_after_delete"]') bytes"
  # What stays allocated after the delete is not the model's (cuBLAS keeps its workspace, 65 MiB
  # on an H100): torch's allocated falls by at least the model's parameters, gradients and state.
  check "deleted: torch's allocated falls by the model's parameters, gradients and state" True \
    "$(json_field "$out/roles_deleted.json" 'd["allocated_before_delete"] - d["allocated_after_delete"] >= d["model_bytes"]')"
  check "deleted: no parameter, gradient or optimizer state at exit" 0 \
    "$(json_field "$out/roles_deleted.report.json" "sum(r['bytes'] for r in d['devices'][0]['by_role']['at_exit'] if r['role'] in ('parameter', 'gradient', 'optimizer_state'))")"
else
  echo "FAIL roles_models.py deleted (see roles_deleted.log)"; tail -5 "$out/roles_deleted.log"; failures=$((failures + 1))
fi

echo "== an OOM in a forward: ResNet-50 AMP at a batch too large for the device, with grad and without"
for case in oom_forward:activation oom_no_grad:temporary; do
  name=${case%%:*} role=${case#*:}
  rm -f "$out/roles_$name".*.gmt
  if ! "$gmt" run -o "$out/roles_$name.%p.gmt" -- python3 tests/gpu/roles_models.py "$name" \
    "$out/roles_$name.json" >"$out/roles_$name.log" 2>&1; then
    echo "FAIL roles_models.py $name (see roles_$name.log)"; tail -5 "$out/roles_$name.log"; failures=$((failures + 1)); continue
  fi
  trace=$(ls "$out/roles_$name".*.gmt | sed -n 1p)
  "$gmt" oom --json "$trace" >"$out/roles_$name.oom.json"
  "$gmt" oom "$trace" | sed -n 1,30p
  echo "INFO $name: batch $(json_field "$out/roles_$name.json" 'd["batch"]'), torch said: $(json_field "$out/roles_$name.json" 'd["error"]')"
  last='d["ooms"][-1]'
  check "$name: the forward failed" True "$(json_field "$out/roles_$name.json" 'd["error"] != ""')"
  check "$name: the roles at the failure add up to what was live then" True \
    "$(json_field "$out/roles_$name.oom.json" "sum(r['bytes'] for r in $last['by_role']) == $last['live_bytes']")"
  check "$name: $role leads the role table at the failure" "$role" \
    "$(json_field "$out/roles_$name.oom.json" "max($last['by_role'], key=lambda r: r['bytes'])['role']")"
  check "$name: the $role bytes were made by the forward running then" True \
    "$(json_field "$out/roles_$name.oom.json" "[r for r in $last['by_role'] if r['role'] == '$role'][0]['running_bytes'] > 0")"
  check "$name: unknown is under 2 % of what was live" True \
    "$(json_field "$out/roles_$name.oom.json" "[r['bytes'] for r in $last['by_role'] if r['role'] == 'unknown'][0] * 50 < $last['live_bytes']")"
  check "$name: parameters at the failure are the model's" \
    "$(json_field "$out/roles_$name.json" 'd["parameter_bytes"]')" \
    "$(json_field "$out/roles_$name.oom.json" "[r['bytes'] for r in $last['by_role'] if r['role'] == 'parameter'][0]")"
  check "$name: the $role bytes are the model's modules'" True \
    "$(python3 -c 'import json,sys; e=set(json.load(open(sys.argv[1]))["modules"]); f=json.load(open(sys.argv[2]))["ooms"][-1]; m=[x for x in f["by_module"] if x["by_role"].get(sys.argv[3])]; print(len(m) > 0 and all(x["module"] in e or x["module"] == "ResNet" for x in m))' "$out/roles_$name.json" "$out/roles_$name.oom.json" "$role")"
done

echo "== torch.compile: the MLP compiled, with roles and without (GPUMEMTRACE_ROLES=0)"
for roles in 1 0; do
  rm -f "$out/roles_compiled_$roles".*.gmt
  GPUMEMTRACE_ROLES=$roles "$gmt" run -o "$out/roles_compiled_$roles.%p.gmt" -- python3 tests/gpu/roles_models.py compiled \
    "$out/roles_compiled_$roles.json" >"$out/roles_compiled_$roles.log" 2>&1 ||
    { echo "FAIL roles_models.py compiled with GPUMEMTRACE_ROLES=$roles (see roles_compiled_$roles.log)"; tail -5 "$out/roles_compiled_$roles.log"; failures=$((failures + 1)); }
done
check "torch.compile: graph breaks with roles equal those without" \
  "$(json_field "$out/roles_compiled_0.json" 'd["graph_breaks"]')" "$(json_field "$out/roles_compiled_1.json" 'd["graph_breaks"]')"
"$gmt" peak --json "$(ls "$out"/roles_compiled_1.*.gmt | sed -n 1p)" >"$out/roles_compiled.peak.json"
check "torch.compile: parameters tagged at the peak" True \
  "$(json_field "$out/roles_compiled.peak.json" "[r['bytes'] for r in d['devices'][0]['by_role'] if r['role'] == 'parameter'][0] == json.load(open(sys.argv[3]))['parameter_bytes']" "$out/roles_compiled_1.json")"

echo "== PyTorch's MemTracker on the MLP (the program changed to use it), at its peak"
python3 tests/gpu/roles_models.py memtracker "$out/roles_memtracker.json" >"$out/roles_memtracker.log" 2>&1 &&
  json_field "$out/roles_memtracker.json" 'd["memtracker_peak"]' || { echo "INFO MemTracker failed (see roles_memtracker.log)"; tail -3 "$out/roles_memtracker.log"; }
echo "== ours on the MLP at the peak, by role (bytes)"
json_field "$out/roles_mlp.peak.json" '{r["role"]: r["bytes"] for r in d["devices"][0]["by_role"] if r["bytes"]}'

if [ "${GMT_ROLES_COST:-1}" = 0 ]; then
  echo "gpu-validate-roles: $failures failure(s) (cost not measured: GMT_ROLES_COST=0)"
  exit $((failures > 0))
fi
echo "== cost: ResNet-50 AMP, 20 steps, roles on and off, interleaved (median step after the first 5)"
for round in 1 2 3; do
  for roles in 1 0; do
    GMT_STEPS=20 GPUMEMTRACE_ROLES=$roles "$gmt" run -o "$out/cost_$roles.%p.gmt" -- \
      python3 tests/gpu/roles_models.py resnet "$out/cost_${roles}_$round.json" >/dev/null 2>&1
    rm -f "$out"/cost_$roles.*.gmt
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
med = {r: statistics.median(statistics.median(json.load(open(f"{out}/cost_{r}_{i}.json"))["step_seconds"][5:]) for i in (1, 2, 3)) for r in ("1", "0")}
print(f"INFO ResNet-50 AMP step: roles on {med['1']*1e3:.2f} ms, off {med['0']*1e3:.2f} ms, ratio {med['1']/med['0']:.4f}")
PY

echo "gpu-validate-roles: $failures failure(s)"
exit $((failures > 0))
