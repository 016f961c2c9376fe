#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Inference in its own terms, on the GPU (issue: weights, the key-value cache, tokens that fit):
#   - a Llama-shaped LlamaForCausalLM from its config (bf16, 8 layers, GQA), generate() with the
#     default DynamicCache: at exit the kv_cache role equals the cache's keys and values (to the
#     allocator's block), by each layer's attention module; bytes per token per sequence equal
#     2 x layers x kv heads x head dim x 2; no frame of our hooks in any stack shown or exported;
#   - the same with cache_implementation="static": kv_cache equals the preallocated cache;
#   - tokens that fit: with the device filled but for a few GiB, the traced run's figure N (the
#     allocator's model running the decode loop forward) is checked by generating N more tokens
#     untraced (it must fit) and against the tokens generate() makes before it runs out (at most
#     1.1 x N + 64 more);
#   - a hand-written decoder whose attention modules keep their keys and values: state, by module;
#   - a decode step captured in a CUDA graph (torch.cuda.graph) and replayed: its pool's blocks
#     live at the end are cuda_graph, to the byte.
# Usage: scripts/gpu-validate-inference.sh [OUTPUT_DIR]; exits non-zero when a check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-validate-output}}"
mkdir -p "$out"
. scripts/lib/gpu_build.sh
. scripts/lib/gpu_checks.sh
dev='d["devices"][0]'
# GMT_INFERENCE_ONLY: the sections run, a pattern of their names (models, kept, graphed, fit,
# cost); all by default.
shopt -s extglob
wanted() {
  # shellcheck disable=SC2053  # GMT_INFERENCE_ONLY is a pattern
  [[ -z ${GMT_INFERENCE_ONLY:-} || $1 == $GMT_INFERENCE_ONLY ]]
}
role_at() {  # role_at FILE WHEN ROLE
  json_field "$1" "sum(r['bytes'] for r in $dev['by_role']['$2'] if r['role'] == '$3')"
}

if wanted models; then
  echo "--- inference: Llama-shaped generate(), DynamicCache and StaticCache"
  for cache in dynamic static; do
    name="inference_$cache"
    rm -f "$out/$name".*.gmt
    "$gmt" run -o "$out/$name.%p.gmt" -- python3 tests/gpu/inference_models.py llama "$cache" 8 1024 256 0 \
      "$out/$name.facts.json" >"$out/$name.log" 2>&1 ||
      { echo "FAIL $name (see $name.log)"; tail -30 "$out/$name.log"; failures=$((failures + 1)); continue; }
    trace=$(ls "$out/$name".*.gmt | sed -n 1p)
    "$gmt" report --json "$trace" >"$out/$name.report.json"
    "$gmt" peak --json "$trace" >"$out/$name.peak.json"
    "$gmt" report "$trace" >"$out/$name.report.txt"
    sed -n '/by role at exit/,/inference/p' "$out/$name.report.txt"
    grep -A2 "^    inference" "$out/$name.report.txt" || true
    check "$name: kv_cache at exit equals the cache's keys and values" \
      "$(json_field "$out/$name.facts.json" "d['kv_cache_bytes']")" "$(role_at "$out/$name.report.json" at_exit kv_cache)"
    unknown=$(role_at "$out/$name.report.json" at_exit unknown)
    check "$name: nothing unknown at exit" 0 "$unknown"
    # What is unknown, printed: the machine returns few files.
    [ "$unknown" != 0 ] && json_field "$out/$name.report.json" \
      "[(m['module'], m['by_role']['unknown']) for m in $dev['by_module']['at_exit'] if m['by_role'].get('unknown')]" &&
      { "$gmt" leaks "$trace" >"$out/$name.leaks.txt"; sed -n 1,40p "$out/$name.leaks.txt"; }
    check "$name: bytes per token per sequence as the config gives" \
      "$(json_field "$out/$name.facts.json" "d['bytes_per_token']")" "$(json_field "$out/$name.report.json" "$dev['inference']['bytes_per_token']")"
    # generate() compiles a static cache's decode step, whose forwards run past the hooks: the
    # tokens written are then not counted, and said so (null), never a wrong count.
    expected_tokens=$(json_field "$out/$name.facts.json" "d['written']")
    [ "$cache" = static ] && expected_tokens=None
    check "$name: the tokens the cache holds per sequence, as its get_seq_length() says" \
      "$expected_tokens" "$(json_field "$out/$name.report.json" "$dev['inference']['tokens']")"
    check "$name: the cache by layer: one attention module per layer" 8 \
      "$(json_field "$out/$name.report.json" "len([m for m in $dev['by_module']['at_exit'] if m['by_role'].get('kv_cache', 0) > 0 and m['module'].endswith('self_attn')])")"
    check "$name: the roles at exit add up to what is live" True \
      "$(json_field "$out/$name.report.json" "sum(r['bytes'] for r in $dev['by_role']['at_exit']) == $dev['live_at_exit_bytes']")"
    echo "INFO $name: graphs torch.compile made in generate(): $(json_field "$out/$name.facts.json" "d['compiled_graphs']")"
    "$gmt" whatif --json "$trace" >"$out/$name.whatif.json" 2>/dev/null
    captures=$(json_field "$out/$name.whatif.json" "sum(int(n.split('(')[1].split(')')[0]) for n in d['notes'] if n.startswith('CUDA graph captures'))" 2>/dev/null || echo 0)
    echo "INFO $name: CUDA graph captures: $captures"
    json_field "$out/$name.whatif.json" "[n for n in d['notes'] if 'graph' in n.lower()]"
    if [ "${captures:-0}" -gt 0 ]; then
      # generate() compiles the decode step (mode reduce-overhead) where its cache is static; where
      # the compiled step captured CUDA graphs (cudagraph trees skip a step that mutates its
      # inputs, as a static cache's update does), their pools are cuda_graph.
      # Cudagraph trees free a capture's tensors and replay into the pool's memory: the pools'
      # segments, free space included, are the graphs'.
      echo "INFO $name: cuda_graph at the peak $(role_at "$out/$name.report.json" at_peak cuda_graph) B, at exit $(role_at "$out/$name.report.json" at_exit cuda_graph) B; allocator_cache at exit $(role_at "$out/$name.report.json" at_exit allocator_cache) B"
      check "$name: the compiled decode step's CUDA graphs' pools are cuda_graph at exit" \
        "$(json_field "$out/$name.facts.json" "d['graph_pool_bytes']")" "$(role_at "$out/$name.report.json" at_exit cuda_graph)"
    fi
    "$gmt" export --format folded -o "$out/$name.folded" "$trace" 2>/dev/null
    check "$name: no frame of our hooks in the peak's stacks or the folded export" 0 \
      "$(cat "$out/$name.peak.json" "$out/$name.folded" | grep -c gpumemtrace_roles)"
  done
fi

if wanted kept; then
  echo "--- inference: a decoder keeping its own keys and values"
  name=inference_kept
  rm -f "$out/$name".*.gmt
  "$gmt" run -o "$out/$name.%p.gmt" -- python3 tests/gpu/inference_models.py kept 8 512 64 \
    "$out/$name.facts.json" >"$out/$name.log" 2>&1 ||
    { echo "FAIL $name (see $name.log)"; tail -5 "$out/$name.log"; failures=$((failures + 1)); }
  trace=$(ls "$out/$name".*.gmt 2>/dev/null | sed -n 1p)
  if [ -n "$trace" ]; then
    "$gmt" report --json "$trace" >"$out/$name.report.json"
    check "kept: state by module equals what each attention module keeps" True \
      "$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["state_by_module"]; d=json.load(open(sys.argv[2]))["devices"][0]; got={m["module"]: m["by_role"].get("state", 0) for m in d["by_module"]["at_exit"] if m["by_role"].get("state", 0)}; print(got == e or (got, e))' "$out/$name.facts.json" "$out/$name.report.json")"
    check "kept: nothing unknown at exit" 0 "$(role_at "$out/$name.report.json" at_exit unknown)"
  fi
fi

if wanted graphed; then
  echo "--- inference: a decode step captured in a CUDA graph and replayed"
  name=inference_graphed
  rm -f "$out/$name".*.gmt
  "$gmt" run -o "$out/$name.%p.gmt" -- python3 tests/gpu/inference_models.py graphed 8 1024 64 \
    "$out/$name.facts.json" >"$out/$name.log" 2>&1 ||
    { echo "FAIL $name (see $name.log)"; tail -5 "$out/$name.log"; failures=$((failures + 1)); }
  trace=$(ls "$out/$name".*.gmt 2>/dev/null | sed -n 1p)
  if [ -n "$trace" ]; then
    "$gmt" report --json "$trace" >"$out/$name.report.json"
    "$gmt" report "$trace" >"$out/$name.report.txt"
    sed -n '/by role at exit/,/top sites at the peak/p' "$out/$name.report.txt"
    echo "INFO graphed: the graph pool's live blocks $(json_field "$out/$name.facts.json" "d['graph_pool_live_bytes']") B"
    check "graphed: cuda_graph at exit equals the graph pool's segments (live blocks and free space)" \
      "$(json_field "$out/$name.facts.json" "d['graph_pool_bytes']")" "$(role_at "$out/$name.report.json" at_exit cuda_graph)"
    check "graphed: nothing unknown at exit" 0 "$(role_at "$out/$name.report.json" at_exit unknown)"
  fi
fi

if wanted fit; then
  echo "--- inference: tokens that fit, checked by generating them"
  name=inference_fit
  rm -f "$out/$name".*.gmt
  "$gmt" run -o "$out/$name.%p.gmt" -- python3 tests/gpu/inference_models.py llama dynamic 64 512 64 auto:3 \
    "$out/$name.facts.json" >"$out/$name.log" 2>&1 ||
    { echo "FAIL $name (see $name.log)"; tail -30 "$out/$name.log"; failures=$((failures + 1)); }
  trace=$(ls "$out/$name".*.gmt 2>/dev/null | sed -n 1p)
  if [ -n "$trace" ]; then
    "$gmt" report --json "$trace" >"$out/$name.report.json"
    "$gmt" report "$trace" >"$out/$name.report.txt"
    grep -A2 "^    inference" "$out/$name.report.txt" || true
    fit=$(json_field "$out/$name.report.json" "$dev['inference']['tokens_that_fit']")
    filler=$(json_field "$out/$name.facts.json" "d['filler_bytes']")
    echo "INFO tokens that fit after 64: $fit (filler $filler bytes; by $(json_field "$out/$name.report.json" "$dev['inference']['tokens_that_fit_by']"), estimate $(json_field "$out/$name.report.json" "$dev['inference']['estimated_tokens_that_fit']"), modelled $(json_field "$out/$name.report.json" "$dev['inference']['modelled']"), not modelled: $(json_field "$out/$name.report.json" "$dev['inference']['not_modelled']"))"
    if [ "$fit" != None ] && [ "$fit" -gt 0 ]; then
      python3 tests/gpu/inference_models.py llama dynamic 64 512 $((64 + fit)) "$filler" "$out/$name.more.json" >"$out/$name.more.log" 2>&1
      [ -f "$out/$name.more.json" ] || tail -20 "$out/$name.more.log"
      check "tokens that fit: $fit more tokens fit (untraced)" False "$(json_field "$out/$name.more.json" "d['oom']")"
      # The truth: the same generate() run on until it runs out, its tokens counted as they come.
      python3 tests/gpu/inference_models.py llama dynamic 64 512 max "$filler" "$out/$name.max.json" >"$out/$name.max.log" 2>&1
      [ -f "$out/$name.max.json" ] || tail -20 "$out/$name.max.log"
      most=$(json_field "$out/$name.max.json" "d.get('generated_before_oom', -1)")
      echo "INFO tokens that fit after 64: generate() ran out after $most tokens, $((most - 64)) more than 64"
      check "tokens that fit: within a tenth (and 64 tokens) of those generated before running out" True \
        "$(python3 -c "print($most >= 64 + $fit and 64 + $fit * 11 // 10 + 64 >= $most)")"
      # The same loop traced as it runs out: at its failure no more tokens fit, by the failure
      # itself, at the length the cache had (the prompt and the tokens generated, less the one
      # the failing step was to write).
      rm -f "$out/${name}_max".*.gmt
      "$gmt" run -o "$out/${name}_max.%p.gmt" -- python3 tests/gpu/inference_models.py llama dynamic 64 512 max \
        "$filler" "$out/$name.max_traced.json" >"$out/$name.max_traced.log" 2>&1
      max_trace=$(ls "$out/${name}_max".*.gmt 2>/dev/null | sed -n 1p)
      if [ -n "$max_trace" ]; then
        "$gmt" oom --json "$max_trace" >"$out/$name.max_oom.json"
        "$gmt" oom "$max_trace" >"$out/$name.max_oom.txt"
        grep -m4 -B1 -A2 "tokens" "$out/$name.max_oom.txt"
        generated=$(json_field "$out/$name.max_traced.json" "d.get('generated_before_oom', -1)")
        at_failure="[o['inference'] for o in d['ooms'] if (o.get('inference') or {}).get('tokens_that_fit_by') == 'failure']"
        check "tokens that fit at the decode step that ran out: none, by the failure" "['failure', 0]" \
          "$(json_field "$out/$name.max_oom.json" "[($at_failure or [{}])[-1].get(k) for k in ('tokens_that_fit_by', 'tokens_that_fit')]")"
        check "the decode step ran out at the cache's length (512 + $generated generated - 1)" $((512 + generated - 1)) \
          "$(json_field "$out/$name.max_oom.json" "($at_failure or [{}])[-1].get('ran_out_tokens')")"
      else
        check "tokens that fit: the loop that ran out traced" True False
      fi
    else
      check "tokens that fit: a figure above 0" True False
    fi
  fi
fi

if wanted cost; then
  # Between processes a CPU-bound loop's time moves by more than the target, so each part is
  # measured inside one process: the hooks by generate() calls alternating with them on and off
  # (decode_step_time.py --roles-ab), the recorder by its own time (GPUMEMTRACE_SELF_TIME, less
  # the measurement's clock reads: scripts/lib/recorder_cost.py). Untraced against traced, one
  # process each, beside them.
  echo "--- inference: the cost where module calls are densest (generate(), 32 layers, batch 1)"
  rm -f "$out"/inference_time.*
  python3 tests/gpu/decode_step_time.py "$out/inference_time.plain.json" >"$out/inference_time.plain.log" 2>&1
  "$gmt" run -o "$out/inference_time.traced.%p.gmt" -- python3 tests/gpu/decode_step_time.py \
    "$out/inference_time.traced.json" >"$out/inference_time.traced.log" 2>&1
  GPUMEMTRACE_SELF_TIME=1 "$gmt" run -o "$out/inference_time.ab.%p.gmt" -- python3 tests/gpu/decode_step_time.py \
    --roles-ab "$out/inference_time.ab.json" >"$out/inference_time.ab.log" 2>&1
  python3 - "$out" "$gmt" <<'PY'
import glob, json, sys
sys.path.insert(0, "scripts/lib")
from recorder_cost import corrected, note_of
out, gmt = sys.argv[1], sys.argv[2]
try:
    plain, traced, ab = (json.load(open(f"{out}/inference_time.{k}.json")) for k in ("plain", "traced", "ab"))
    note = note_of(gmt, glob.glob(f"{out}/inference_time.ab.*.gmt")[0])
except (OSError, IndexError, ValueError) as e:
    print(f"FAIL the cost runs: {e.__class__.__name__}: {e} (see inference_time.*.log)")
    sys.exit(0)
cost = corrected(note, ab["steps_run"], ab["ms_per_step"])
print(f"INFO generate(), ms per token: untraced {plain['ms_per_step']:.2f}, traced {traced['ms_per_step']:.2f}"
      f" ({traced['ms_per_step'] / plain['ms_per_step']:.3f}x, two processes)")
print(f"INFO in one process: the roles hooks {ab['roles_ratio']:.3f}x (on {ab['ms_per_step']:.2f} ms, off "
      f"{ab['off_ms_per_step']:.2f} ms a token); the recorder {cost['share']:.1%} of a token "
      f"({note['events'] / ab['steps_run']:.0f} events a token, {cost['total_ns'] / note['events']:.0f} ns each, "
      f"{cost['stack_ns'] / max(note['stacks'], 1):.0f} ns a stack)")
PY
  rm -f "$out"/inference_time.*.gmt
fi

check_summary
echo "inference: $failures failure(s)"
[ "$failures" -eq 0 ]
