#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Validates gpumemtrace on a machine with a real NVIDIA GPU, in one go (a few minutes):
#   1. PyTorch's caching allocator: our peak equals torch.cuda.max_memory_reserved();
#   2. nvcc programs with the default static cudart, the shared cudart, and cuMemAlloc via
#      -lcuda: the known sequence gives exactly the expected peak, live bytes and API names;
#   3. PyTorch (default, expandable segments, cudaMallocAsync, pinned), NCCL, JAX (default and
#      platform allocator) and CuPy: one table row each, ours beside the framework's own figure
#      and NVML's, with checks against PyTorch's own memory snapshot;
#   4. Python without CUDA under the preload leaves no trace;
#   5. a PyTorch training loop with NVTX ranges, NCCL and a planted OOM: views, phases, exports;
#   6. a planted leak, found as the top probable leak at its Python line; with the default
#      caching allocator, with expandable segments and with roundup_power2_divisions and
#      max_split_size_mb set, through PyTorch's block events, checked against PyTorch's own
#      snapshot (every active block and segment, allocated and reserved);
#   7. torchrun with two ranks: one trace per rank;
#   9. stacks open at the user's line (the frame policy), for PyTorch and an nvcc program;
#  10. classes: address-space reservations apart, what libraries keep on purpose (library_cache);
#  11. `top` against a running PyTorch loop, then the loop with a bounded trace (--max-size), and
#      with expandable segments and NCCL (VMM memory mapped before the history kept);
#  12. torchrun with eight ranks on the one GPU: the job view;
#  13. every trace's chunk headers count its records (format 4.1), checked apart from the reader;
#  14. roles and modules (scripts/gpu-validate-roles.sh, without its cost measurement);
#  15. the Python wheel in a venv that sees the host's torch: `python -m gpumemtrace run` on a
#      PyTorch script, and the pytest plugin on a PyTorch test that leaks.
#  16. JAX under XLA's default allocator (the pool's note in report and peak) and under
#      `run --jax-allocator=platform` (no note; a kept array at its line).
#  17. reports that once misled: the framework's figures at the peak of `y = x * 2; del x` equal
#      torch's max allocated and reserved; a fragmentation OOM listed once with the allocator's
#      figures; an evaluation loop without no_grad whose leak groups lead with the user's lines.
#  18. the recorder's own threads open no descriptor: a PyTorch program's descriptors stay put
#      while it sleeps and the sampler reads NVML every millisecond (and untraced, the control).
# Exits non-zero when any check failed.
# Usage: scripts/gpu-validate.sh [OUTPUT_DIR]   (default: $OUT, else gpu-validate-output)
# GMT_SECTIONS="1 2 14" runs those sections only (13 reads the traces of those that ran; 10
# needs those of 3 and 6, and says it skipped without them).
# Uses build-gpu/ if it holds a build (carried from elsewhere), else builds one (no tests).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-validate-output}}"
mkdir -p "$out"

. scripts/lib/gpu_build.sh
. scripts/lib/gpu_checks.sh
want() { [ -z "${GMT_SECTIONS:-}" ] || [[ " $GMT_SECTIONS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

if want 1; then
echo "--- 1. PyTorch default allocator"
for variant in plain matmul; do
  flag=""; [ "$variant" = matmul ] && flag="--matmul"
  rm -f "$out/torch_$variant".*.gmt
  "$gmt" run -o "$out/torch_$variant.%p.gmt" -- python3 tests/gpu/torch_allocations.py $flag "$out/torch_${variant}_expected.json"
  "$gmt" report --json "$out/torch_$variant".*.gmt >"$out/torch_${variant}_report.json"
  "$gmt" report "$out/torch_$variant".*.gmt
  reserved=$(json_field "$out/torch_${variant}_expected.json" 'd["max_memory_reserved"]')
  ours=$(json_field "$out/torch_${variant}_report.json" 'd["devices"][0]["peak_bytes"]')
  if [ "$variant" = plain ]; then
    check "torch peak_bytes == torch.cuda.max_memory_reserved()" "$reserved" "$ours"
  else
    echo "INFO torch+cuBLAS: our peak $ours, torch max_memory_reserved $reserved, outside the caching allocator $((ours - reserved)) bytes"
    [ "$ours" -ge "$reserved" ] || check "torch+cuBLAS peak >= max_memory_reserved" ">= $reserved" "$ours"
  fi
done

fi

if want 2; then
echo "--- 2. nvcc programs: static cudart, shared cudart, and the driver through -lcuda"
nvcc -O1 -g -o "$out/seq_static" tests/gpu/alloc_sequence.cu >>"$out/build.log" 2>&1 || echo "FAIL nvcc static"
nvcc -O1 -cudart shared -o "$out/seq_shared" tests/gpu/alloc_sequence.cu >>"$out/build.log" 2>&1 || echo "FAIL nvcc shared"
nvcc -O1 -DUSE_DRIVER -o "$out/seq_driver" tests/gpu/alloc_sequence.cu -lcuda >>"$out/build.log" 2>&1 || echo "FAIL nvcc driver"
declare -A seq_apis=([seq_static]="{'cuMemAlloc': 4}/{'cuMemFree': 3}"
                     [seq_shared]="{'cudaMalloc': 4}/{'cudaFree': 3}"
                     [seq_driver]="{'cuMemAlloc': 4}/{'cuMemFree': 3}")
for prog in seq_static seq_shared seq_driver; do
  rm -f "$out/$prog".*.gmt
  "$gmt" run -o "$out/$prog.%p.gmt" -- "$out/$prog"
  "$gmt" report --json "$out/$prog".*.gmt >"$out/$prog.json"
  check "$prog peak_bytes" $((14 << 20)) "$(json_field "$out/$prog.json" 'd["devices"][0]["peak_bytes"]')"
  check "$prog live_at_exit_bytes" $((2 << 20)) "$(json_field "$out/$prog.json" 'd["devices"][0]["live_at_exit_bytes"]')"
  check "$prog alloc/free counts" "4/3" "$(json_field "$out/$prog.json" '"%d/%d" % (d["devices"][0]["alloc_count"], d["devices"][0]["free_count"])')"
  "$gmt" info --json "$out/$prog".*.gmt >"$out/$prog.info.json"
  check "$prog allocations/frees by API" "${seq_apis[$prog]}" "$(json_field "$out/$prog.info.json" '"%s/%s" % (dict(d["allocations_by_api"]), dict(d["frees_by_api"]))')"
done

fi

if want 3; then
echo "--- 3. interception table: workload | ours | the framework's own figure | NVML | residual"
run_workload() {  # run_workload NAME [ENV=VALUE...]
  local name=$1
  shift
  rm -f "$out/$name".*.gmt
  env "$@" "$gmt" run -o "$out/$name.%p.gmt" -- python3 tests/gpu/framework_workloads.py "$name" "$out/$name.figures.json" \
    >"$out/$name.log" 2>&1 || { echo "FAIL $name: the workload failed (see $name.log)"; tail -5 "$out/$name.log"; failures=$((failures + 1)); return; }
  "$gmt" report --json "$out/$name".*.gmt >"$out/$name.report.json"
  "$gmt" dump "$out"/$name.*.gmt >"$out/$name.dump.jsonl"
  python3 tests/gpu/interception_row.py "$out/$name.figures.json" "$out/$name.report.json" "$out/$name.dump.jsonl" ||
    failures=$((failures + 1))
  "$gmt" info --json "$out/$name".*.gmt >"$out/$name.info.json"
  echo "INFO $name allocations by API: $(json_field "$out/$name.info.json" 'dict(d["allocations_by_api"])')"
}
# The API each framework's allocator calls, as the trace names it: PyTorch calls its bundled
# shared libcudart, whose names must be there (the driver's stay beside them in the dump). CuPy
# and JAX are only printed: they reach the driver directly or through runtime functions looked
# up with dlsym, which keep the driver's names.
expect_api() {  # expect_api WORKLOAD API
  check "$1 allocations named $2" True "$(json_field "$out/$1.info.json" 'd["allocations_by_api"].get(sys.argv[3], 0) > 0' "$2")"
}
run_workload torch_default
run_workload torch_expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
run_workload torch_async PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
run_workload torch_pinned
run_workload nccl NCCL_NVLS_ENABLE=0
run_workload jax_default
run_workload jax_platform XLA_PYTHON_CLIENT_ALLOCATOR=platform
run_workload cupy
expect_api torch_default cudaMalloc
expect_api torch_async cudaMallocAsync
expect_api torch_pinned cudaHostAlloc

fi

if want 4; then
echo "--- 4. no CUDA, no trace"
rm -f "$out"/nocuda.*.gmt
GPUMEMTRACE_OUTPUT="$out/nocuda.%p.gmt" LD_PRELOAD="$PWD/build-gpu/lib/libgpumemtrace.so" python3 -c 'import torch; print("imported torch")'
check "traces left by a process without CUDA use" 0 "$(ls "$out"/nocuda.*.gmt 2>/dev/null | wc -l)"

fi

if want 5; then
echo "--- 5. views, phases, leak and OOM: a PyTorch training loop with NVTX ranges and NCCL"
rm -f "$out"/views.*.gmt
NCCL_NVLS_ENABLE=0 "$gmt" run -o "$out/views.%p.gmt" -- python3 tests/gpu/views_training.py "$out/views.torch.json" \
  >"$out/views.log" 2>&1 || { echo "FAIL views_training (see views.log)"; tail -5 "$out/views.log"; failures=$((failures + 1)); }
views_trace=$(ls "$out"/views.*.gmt | sed -n 1p)
"$gmt" report --json "$views_trace" >"$out/views.report.json"
"$gmt" report "$views_trace" | sed -n '/^  device 0/,$p' | grep -v '^        '
"$gmt" leaks "$views_trace" | sed -n 1,30p
"$gmt" oom "$views_trace" | sed -n 1,30p
echo "PyTorch and nvidia-smi, read by the script at the end of the step with the most reserved:"
cat "$out/views.torch.json"
for phase in step forward backward all-reduce optimizer; do
  check "phase '$phase' calls" 8 "$(json_field "$out/views.report.json" '[p["calls"] for p in d["phases"] if p["name"] == sys.argv[3] and p["device"] == 0][0]' "$phase")"
done
check "views at the peak: NVML per-process read" True "$(json_field "$out/views.report.json" 'd["devices"][0]["views"]["at_peak"]["nvml_process_bytes"] is not None')"
check "views at the peak: driver used read" True "$(json_field "$out/views.report.json" 'd["devices"][0]["views"]["at_peak"]["driver_used_bytes"] is not None')"
check "context overhead at the peak between 100 MiB and 2 GiB" True "$(json_field "$out/views.report.json" '100 * 2**20 <= d["devices"][0]["views"]["at_peak"]["context_overhead_bytes"] <= 2 * 2**30')"
check "planted OOM recorded with its size" 4398046511104 "$(json_field "$out/views.report.json" 'd["ooms"][0]["requested_bytes"]')"
check "planted OOM has the driver's free memory" True "$(json_field "$out/views.report.json" 'd["ooms"][0]["driver_free_bytes"] is not None')"
check "no NCCL range left open at the peak (payload pops are seen)" True "$(json_field "$out/views.report.json" '"ncclCommInitRankConfig" not in d["devices"][0]["peak_phase"]')"
"$gmt" export "$views_trace" --format memviz -o "$out/views.memviz.pickle"
python3 -m torch.cuda._memory_viz trace_plot "$out/views.memviz.pickle" -o "$out/views.memviz_trace.html" >"$out/memviz.log" 2>&1
check "torch.cuda._memory_viz trace_plot loads our export" 0 "$?"
python3 -m torch.cuda._memory_viz segment_plot "$out/views.memviz.pickle" -o "$out/views.memviz_segments.html" >>"$out/memviz.log" 2>&1
check "torch.cuda._memory_viz segment_plot loads our export" 0 "$?"
ls -la "$out"/views.memviz*
python3 - "$out/views.memviz.pickle" <<'PY'
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
print("memviz: %d segments, %d bytes in them; device 0 trace: %d entries, actions %s" % (
    len(s["segments"]), sum(x["total_size"] for x in s["segments"]), len(s["device_traces"][0]),
    sorted({e["action"] for e in s["device_traces"][0]})))
PY
"$gmt" export "$views_trace" --format pprof -o "$out/views.pb.gz" && echo "pprof export: $(stat -c %s "$out/views.pb.gz") bytes"
"$gmt" export "$views_trace" --format perfetto -o "$out/views.perfetto.json" && echo "perfetto export: $(stat -c %s "$out/views.perfetto.json") bytes"

fi

if want 6; then
echo "--- 6. the planted leak: every tensor a driver allocation (PYTORCH_NO_CUDA_MEMORY_CACHING=1)"
rm -f "$out"/leak.*.gmt
PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$gmt" run -o "$out/leak.%p.gmt" -- python3 tests/gpu/planted_leak.py >"$out/leak.log" 2>&1 ||
  { echo "FAIL planted_leak.py (see leak.log)"; tail -5 "$out/leak.log"; failures=$((failures + 1)); }
leak_trace=$(ls "$out"/leak.*.gmt | sed -n 1p)
"$gmt" leaks "$leak_trace" | sed -n 1,24p
"$gmt" leaks --json "$leak_trace" >"$out/leak.leaks.json"
leak_line=$(sed -n 's/^leak_line=//p' "$out/leak.log")
check "the planted leak is the top probable leak, at planted_leak.py:$leak_line" True "$(json_field "$out/leak.leaks.json" '[any(f["file"] is not None and f["file"].endswith("planted_leak.py") and f["line"] == int(sys.argv[3]) for f in l["frames"]) for l in d["leaks"] if l["class"] == "probable_leak"][:1] == [True]' "$leak_line")"
# Its bytes are what it held a tenth of the trace before the end (Python frees the list at exit):
# 8 to 10 of the 16 MiB tensors, whole ones.
check "the planted leak's bytes: whole 16 MiB tensors, 8 to 10 of them" True "$(json_field "$out/leak.leaks.json" '[l["bytes"] % (16 << 20) == 0 and 8 <= l["bytes"] >> 24 <= 10 for l in d["leaks"] if l["class"] == "probable_leak"][:1] == [True]')"


echo "--- 6b. the planted leak with the default caching allocator: PyTorch's block events"
# The shim is built into a fresh cache folder here, so that its build is checked too.
export GPUMEMTRACE_CACHE_DIR="$out/shim-cache"
rm -rf "$GPUMEMTRACE_CACHE_DIR"
for variant in default expandable tuned; do
  conf=""; [ "$variant" = expandable ] && conf="expandable_segments:True"
  # Settings that change blocks' extents, which the trace gives the analyzer (AllocatorSettings).
  [ "$variant" = tuned ] && conf="roundup_power2_divisions:4,max_split_size_mb:32"
  rm -f "$out/cached_$variant".*.gmt
  PYTORCH_CUDA_ALLOC_CONF="$conf" "$gmt" run -o "$out/cached_$variant.%p.gmt" -- \
    python3 tests/gpu/planted_leak_cached.py "$out/cached_$variant.oracle.json" >"$out/cached_$variant.log" 2>&1 ||
    { echo "FAIL planted_leak_cached.py $variant (see cached_$variant.log)"; tail -5 "$out/cached_$variant.log"; failures=$((failures + 1)); }
  trace=$(ls "$out"/cached_$variant.*.gmt | sed -n 1p)
  "$gmt" leaks "$trace" | sed -n 1,30p
  "$gmt" leaks --json "$trace" >"$out/cached_$variant.leaks.json"
  "$gmt" report --json "$trace" >"$out/cached_$variant.report.json"
  "$gmt" dump "$trace" >"$out/cached_$variant.dump.jsonl"
  "$gmt" export --format memviz "$trace" -o "$out/cached_$variant.memviz.pickle"
  check "$variant: the trace notes the block events" True "$(json_field "$out/cached_$variant.report.json" 'any(n.startswith("pytorch block events on") for n in d["traces"][0]["notes"])')"
  line=$(json_field "$out/cached_$variant.oracle.json" 'd["leak_line"]')
  check "$variant: the planted leak is the top probable leak, at planted_leak_cached.py:$line" True "$(json_field "$out/cached_$variant.leaks.json" '[any(f["file"] is not None and f["file"].endswith("planted_leak_cached.py") and f["line"] == int(sys.argv[3]) for f in l["frames"]) for l in d["leaks"] if l["class"] == "probable_leak"][:1] == [True]' "$line")"
  oracle=$(python3 tests/gpu/block_oracle.py "$out/cached_$variant.oracle.json" "$out/cached_$variant.dump.jsonl" "$out/cached_$variant.report.json" "$out/cached_$variant.leaks.json" "$out/cached_$variant.memviz.pickle" | tee -a "$out/oracle.log" | tail -1)
  echo "$oracle"
  check "$variant: torch's active blocks live in the trace (missing/extra)" "blocks_missing=0 blocks_extra=0" "$(echo "$oracle" | grep -o 'blocks_missing=[0-9]* blocks_extra=[0-9]*')"
  check "$variant: PyTorch's allocated/reserved at the end (leaks: blocks, cache) equal torch's" "allocated_equal=True reserved_equal=True" "$(echo "$oracle" | grep -o 'allocated_equal=[A-Za-z]* reserved_equal=[A-Za-z]*')"
  if [ "$variant" = tuned ]; then
    settings=$(grep '"record":"allocator_settings"' "$out/cached_tuned.dump.jsonl" | sed -n 1p)
    echo "tuned: $settings"
    check "tuned: the note names the settings that differ from the defaults" True "$(json_field "$out/cached_tuned.report.json" 'any(n.endswith("; allocator settings max_split_size_mb:32,roundup_power2_divisions:4") for n in d["traces"][0]["notes"])')"
    check "tuned: the trace gives the allocator's settings as torch read them" "33554432 [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]" "$(echo "$settings" | python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); print(d["max_split_size"], d["roundup_divisions"])')"
  fi
  if [ "$variant" = default ]; then
    python3 -m torch.cuda._memory_viz segment_plot "$out/cached_default.memviz.pickle" -o "$out/cached_default.segments.html" >"$out/cached_memviz.log" 2>&1
    check "default: torch's memory_viz draws the exported segments and blocks" "0" "$?"
    check "default: torch's segments live in the trace, blocks and driver (missing/extra/driver)" "segments_missing=0 segments_extra=0 driver_segments_missing=0" "$(echo "$oracle" | grep -o 'segments_missing=[0-9]* segments_extra=[0-9]* driver_segments_missing=[0-9]*')"
  fi
done
# Without a compiler the shim cannot be built: one note, and segments as before.
rm -f "$out"/nocxx.*.gmt
GPUMEMTRACE_CACHE_DIR="$out/shim-cache-nocxx" GPUMEMTRACE_CXX=/nonexistent/c++ "$gmt" run -o "$out/nocxx.%p.gmt" -- \
  python3 tests/gpu/planted_leak_cached.py "$out/nocxx.oracle.json" >"$out/nocxx.log" 2>&1
"$gmt" report --json "$out"/nocxx.*.gmt >"$out/nocxx.report.json"
echo "without a compiler: $(json_field "$out/nocxx.report.json" '[n for n in d["traces"][0]["notes"] if "pytorch" in n]')"
nocxx_blocks=$("$gmt" dump "$out"/nocxx.*.gmt | grep -c '"record":"block"')
check "without a compiler: one note, no block events" "1/0" "$(json_field "$out/nocxx.report.json" 'sum("pytorch block events unavailable" in n for n in d["traces"][0]["notes"])')/$nocxx_blocks"
unset GPUMEMTRACE_CACHE_DIR

echo "--- 6c. a planted leak in CuPy, through its MemoryHook (python/gpumemtrace_cupy.py)"
rm -f "$out"/cupy_leak.*.gmt
"$gmt" run -o "$out/cupy_leak.%p.gmt" -- python3 tests/gpu/cupy_planted_leak.py >"$out/cupy_leak.log" 2>&1 ||
  { echo "FAIL cupy_planted_leak.py (see cupy_leak.log)"; tail -5 "$out/cupy_leak.log"; failures=$((failures + 1)); }
cat "$out/cupy_leak.log"
cupy_trace=$(ls "$out"/cupy_leak.*.gmt | sed -n 1p)
"$gmt" leaks "$cupy_trace" | sed -n 1,20p
"$gmt" leaks --json "$cupy_trace" >"$out/cupy_leak.leaks.json"
"$gmt" report --json "$cupy_trace" >"$out/cupy_leak.report.json"
cupy_line=$(sed -n 's/^leak_line=\([0-9]*\).*/\1/p' "$out/cupy_leak.log")
check "cupy: the planted leak is the top probable leak, at cupy_planted_leak.py:$cupy_line" True "$(json_field "$out/cupy_leak.leaks.json" '[any(f["file"] is not None and f["file"].endswith("cupy_planted_leak.py") and f["line"] == int(sys.argv[3]) for f in l["frames"]) for l in d["leaks"] if l["class"] == "probable_leak"][:1] == [True]' "$cupy_line")"
check "cupy: the planted leak's stack opens at its line, and its library is cupy" "True cupy" "$(json_field "$out/cupy_leak.leaks.json" '(lambda l: "%s %s" % (any(f.get("user") and f["line"] == int(sys.argv[3]) for f in l["frames"]), l["library"]))([l for l in d["leaks"] if l["class"] == "probable_leak"][0])' "$cupy_line")"
cupy_used=$(sed -n 's/.*used_bytes=\([0-9]*\).*/\1/p' "$out/cupy_leak.log")
check "cupy: its blocks never freed at the end equal the pool's used bytes" "$cupy_used" "$(json_field "$out/cupy_leak.leaks.json" 'sum(g["bytes"] for g in d["leaks"] if g.get("allocator") == "cupy" and g.get("level") == "block")')"

fi

if want 7; then
echo "--- 7. torchrun, two ranks (gloo) on one GPU: one trace per rank"
traced_torchrun ranks 29541 gloo shared
check "ranks traced" "[0, 1]" "$(json_field "$out/ranks.report.json" 'sorted(t["rank"] for t in d["traces"] if t["rank"] is not None)')"

fi

# Section 9 reads what sections 2 (seq_static) and 6 (cached_default) traced: where they did not
# run, it says so instead of failing on files that are not there.
missing9=""
for name in seq_static cached_default; do
  ls "$out/$name".*.gmt >/dev/null 2>&1 || missing9+=" $name"
done
if want 9 && [ -n "$missing9" ]; then
  echo "--- 9. SKIPPED: it reads the traces of sections 2 and 6, missing here:$missing9 (GMT_SECTIONS=\"2 6 9\")"
elif want 9; then
echo "--- 9. stacks open at the user's line"
# first_frame_after TRACE PATTERN: the line after the first line of `leaks` that matches PATTERN
# (a group's line: "2.00 MiB in 1  unfreed  device 0 ..."), that is the group's first frame.
first_frame_after() { "$gmt" leaks "$1" | awk -v p="$2" 'found == 1 { print; found = 2 } $0 ~ p && !found { found = 1 }' | sed 's/^ *//'; }
line=$(json_field "$out/cached_default.oracle.json" 'd["leak_line"]')
first=$(first_frame_after "$(ls "$out"/cached_default.*.gmt | sed -n 1p)" 'in [0-9]+  probable_leak')
echo "first line under the planted leak: $first"
check "the planted leak's first line is remember()'s" "remember  planted_leak_cached.py:$line" "$first"
check "leaks --json marks that frame as the user's" True "$(json_field "$out/cached_default.leaks.json" '[[f["file"].endswith("planted_leak_cached.py") for f in l["frames"] if f.get("user")] for l in d["leaks"] if l["class"] == "probable_leak"][0] == [True]')"
# Gradients are allocated on PyTorch's autograd thread, which has no Python frames: at the peak
# they are shown at the loss.backward() line, marked as the calling thread's frames.
backward_line=$(grep -m1 -n 'loss.backward()' tests/gpu/planted_leak_cached.py | cut -d: -f1)
"$gmt" peak --json --top 1000 "$(ls "$out"/cached_default.*.gmt | sed -n 1p)" >"$out/cached_default.peak.json"
check "blocks of the autograd thread are shown at loss.backward(), planted_leak_cached.py:$backward_line" True "$(json_field "$out/cached_default.peak.json" 'any(any(f["kind"] == "attribution" for f in g["frames"]) and [(f["file"] or "").endswith("planted_leak_cached.py") and f["line"] == int(sys.argv[3]) for f in g["frames"] if f.get("user")] == [True] for dev in d["devices"] for g in dev["groups"])' "$backward_line")"
"$gmt" peak "$(ls "$out"/cached_default.*.gmt | sed -n 1p)" | grep -B1 -A2 'autograd thread' | sed -n 1,8p
first=$(first_frame_after "$(ls "$out"/seq_static.*.gmt | sed -n 1p)" 'in [0-9]+  unfreed')
echo "first line under the static-cudart program's unfreed group: $first"
check "the nvcc program (static cudart) opens at its own source" True "$(case "$first" in *alloc_sequence.cu:*) echo True ;; *) echo False ;; esac)"
"$gmt" leaks "$(ls "$out"/seq_static.*.gmt | sed -n 1p)" | sed -n 1,12p
"$gmt" leaks --frames all "$(ls "$out"/seq_static.*.gmt | sed -n 1p)" | sed -n 1,16p

fi

# Section 10 reads what sections 3 (nccl, jax_default) and 6 (cached_*) traced: where they did
# not run, it says so instead of failing on files that are not there.
missing10=""
for name in cached_expandable cached_default nccl jax_default; do
  ls "$out/$name".*.gmt >/dev/null 2>&1 || missing10+=" $name"
done
if want 10 && [ -n "$missing10" ]; then
  echo "--- 10. SKIPPED: it reads the traces of sections 3 and 6, missing here:$missing10 (GMT_SECTIONS=\"3 6 10\")"
elif want 10; then
echo "--- 10. classes: address space apart, what libraries keep on purpose"
"$gmt" leaks "$(ls "$out"/cached_expandable.*.gmt | sed -n 1p)" | grep -E 'address space|cached|library_cache' | sed -n 1,8p
check "expandable: no never-freed group of 64 GiB or more (address space is apart)" True "$(json_field "$out/cached_expandable.leaks.json" 'all(l["bytes"] < 64 << 30 for l in d["leaks"])')"
check "expandable: the reservations are listed apart, on device 0" True "$(json_field "$out/cached_expandable.leaks.json" 'len(d.get("reservations", [])) > 0 and all(r["device"] == 0 for r in d["reservations"])')"
# NCCL gives its buffers back when the process group is destroyed: printed, nothing to check.
for name in nccl jax_default; do
  "$gmt" leaks --json "$out"/$name.*.gmt >"$out/$name.leaks.json"
  echo "INFO $name never freed by class: $(json_field "$out/$name.leaks.json" 'sorted({(l["class"], l.get("library")) for l in d["leaks"]}, key=str)')"
done
check "jax_default: what XLA keeps is library_cache" True "$(json_field "$out/jax_default.leaks.json" 'any(l["class"] == "library_cache" for l in d["leaks"])')"
check "cuBLAS's workspace (planted_leak_cached) is library_cache" True "$(json_field "$out/cached_default.leaks.json" 'any(l["class"] == "library_cache" and "cublas" in (l.get("library") or "") for l in d["leaks"])')"
# cuBLAS allocates a workspace of its own on the autograd thread that runs the first backward
# matmul: it is shown at loss.backward(), as that thread's blocks are.
backward_line=$(grep -m1 -n 'loss.backward()' tests/gpu/planted_leak_cached.py | cut -d: -f1)
check "cuBLAS's workspace of the autograd thread is shown at loss.backward(), planted_leak_cached.py:$backward_line" True "$(json_field "$out/cached_default.leaks.json" 'any("cublas" in (l.get("library") or "") and any(f["kind"] == "attribution" for f in l["frames"]) and [(f["file"] or "").endswith("planted_leak_cached.py") and f["line"] == int(sys.argv[3]) for f in l["frames"] if f.get("user")] == [True] for l in d["leaks"])' "$backward_line")"
"$gmt" leaks "$(ls "$out"/cached_default.*.gmt | sed -n 1p)" | grep -A3 'library_cache  device 0  libcublas' | sed -n 1,8p

fi

if want 11; then
echo "--- 11. top against a running PyTorch loop; then the same loop with a bounded trace (--max-size 2MiB)"
# steady_run NAME SECONDS [RUN OPTION...]: steady_loop.py traced in the background, until its step 200.
steady_run() {
  local name=$1 seconds=$2
  shift 2
  rm -f "$out/$name".*.gmt "$out/$name.figures.json"
  GPUMEMTRACE_CACHE_DIR="$out/shim-cache" "$gmt" run "$@" -o "$out/$name.%p.gmt" -- \
    python3 tests/gpu/steady_loop.py "$seconds" "$out/$name.figures.json" >"$out/$name.log" 2>&1 &
  steady_pid=$!
  for _ in $(seq 60); do
    [ -f "$out/$name.figures.json" ] && [ "$(json_field "$out/$name.figures.json" 'd["step"]')" -ge 200 ] && break
    sleep 1
  done
}
steady_run steady 25
"$gmt" top --once "$out"/steady.*.gmt | tee "$out/steady.top.txt"
"$gmt" top --once --json "$out"/steady.*.gmt >"$out/steady.top.json"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv | tee "$out/steady.nvidia-smi.txt"
echo "PyTorch right after: $(cat "$out/steady.figures.json")"
check "top: the loop is running, with its framework's reserved bytes" True "$(json_field "$out/steady.top.json" '[p["state"] == "running" and (p["devices"][0]["framework_reserved_bytes"] or 0) > 0 for p in d["processes"]] == [True]')"
check "top: the framework's reserved bytes are within the process's device bytes" True "$(json_field "$out/steady.top.json" 'd["processes"][0]["devices"][0]["framework_reserved_bytes"] <= d["processes"][0]["devices"][0]["live_bytes"]')"
wait "$steady_pid" || { echo "FAIL steady_loop.py (see steady.log)"; tail -5 "$out/steady.log"; failures=$((failures + 1)); }

steady_run bounded 40 --max-size 2MiB
bounded_trace=$(ls "$out"/bounded.*.gmt | sed -n 1p)
"$gmt" top --once "$bounded_trace" | tee "$out/bounded.top.txt"
wait "$steady_pid" || { echo "FAIL steady_loop.py bounded (see bounded.log)"; tail -5 "$out/bounded.log"; failures=$((failures + 1)); }
"$gmt" info "$bounded_trace" | tee "$out/bounded.info.txt" | sed -n 1,20p
"$gmt" leaks --json "$bounded_trace" >"$out/bounded.leaks.json"
"$gmt" leaks "$bounded_trace" | sed -n 1,16p
size=$(stat -c %s "$bounded_trace")
echo "INFO bounded trace: limit $((2 << 20)) bytes, file $size bytes"
check "bounded: the file is within the limit plus 16 chunks of 64 KiB" True "$([ "$size" -le $(((2 << 20) + 16 * 65536)) ] && echo True || echo False)"
check "bounded: info says the history was cut" True "$(grep -q 'history kept from' "$out/bounded.info.txt" && echo True || echo False)"
bounded_line=$(json_field "$out/bounded.figures.json" 'd["leak_line"]')
check "bounded: the planted leak is the top probable leak, at steady_loop.py:$bounded_line" True "$(json_field "$out/bounded.leaks.json" '[any(f["file"] is not None and f["file"].endswith("steady_loop.py") and f["line"] == int(sys.argv[3]) for f in l["frames"]) for l in d["leaks"] if l["class"] == "probable_leak"][:1] == [True]' "$bounded_line")"
check "bounded: the planted leak's bytes are all it kept" "$(json_field "$out/bounded.figures.json" 'd["kept_bytes"]')" "$(json_field "$out/bounded.leaks.json" '[l["bytes"] for l in d["leaks"] if l["class"] == "probable_leak"][0]')"
check "bounded: PyTorch's allocated at the end (blocks never freed) equals torch's" "$(json_field "$out/bounded.figures.json" 'd["memory_allocated"]')" "$(json_field "$out/bounded.leaks.json" 'sum(g["bytes"] for g in d["leaks"] if g.get("allocator") == "pytorch" and g.get("level") == "block")')"
check "bounded: and with the cache, its reserved" "$(json_field "$out/bounded.figures.json" 'd["memory_reserved"]')" "$(json_field "$out/bounded.leaks.json" 'sum(g["bytes"] for g in d["leaks"] if g.get("allocator") == "pytorch" and g.get("level") in ("block", "cache"))')"

# Expandable segments and a one-rank NCCL group: PyTorch's reserved memory and NCCL's buffers are
# VMM memory, mapped long before the history a bounded trace keeps. Bounded and unbounded run
# side by side; NCCL's VMM bytes (all VMM memory but PyTorch's reserved) must be the same.
for name in vmm_bounded vmm_whole; do rm -f "$out/$name".*.gmt "$out/$name.figures.json"; done
vmm_env=(env GMT_STEADY_NCCL=1 NCCL_NVLS_ENABLE=0 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)
"${vmm_env[@]}" "$gmt" run --max-size 1MiB -o "$out/vmm_bounded.%p.gmt" -- \
  python3 tests/gpu/steady_loop.py 30 "$out/vmm_bounded.figures.json" >"$out/vmm_bounded.log" 2>&1 &
vmm_bounded_pid=$!
"${vmm_env[@]}" "$gmt" run -o "$out/vmm_whole.%p.gmt" -- \
  python3 tests/gpu/steady_loop.py 30 "$out/vmm_whole.figures.json" >"$out/vmm_whole.log" 2>&1
wait "$vmm_bounded_pid" || { echo "FAIL steady_loop.py vmm_bounded (see vmm_bounded.log)"; tail -5 "$out/vmm_bounded.log"; failures=$((failures + 1)); }
for name in vmm_bounded vmm_whole; do
  trace=$(ls "$out/$name".*.gmt | sed -n 1p)
  "$gmt" report --json "$trace" >"$out/$name.report.json"
  "$gmt" leaks --json "$trace" >"$out/$name.leaks.json"
  "$gmt" info "$trace" >"$out/$name.info.txt"
  echo "INFO $name: $(stat -c %s "$trace") bytes; torch $(cat "$out/$name.figures.json")"
  echo "INFO $name by kind at exit: $(json_field "$out/$name.report.json" '{k: v["live_at_exit_bytes"] for k, v in d["devices"][0]["by_kind"].items()}')"
done
check "vmm_bounded: info says the history was cut" True "$(grep -q 'history kept from' "$out/vmm_bounded.info.txt" && echo True || echo False)"
for name in vmm_bounded vmm_whole; do
  check "$name: PyTorch's allocated at the end equals torch's (expandable segments)" "$(json_field "$out/$name.figures.json" 'd["memory_allocated"]')" "$(json_field "$out/$name.leaks.json" 'sum(g["bytes"] for g in d["leaks"] if g.get("allocator") == "pytorch" and g.get("level") == "block")')"
  check "$name: and its reserved" "$(json_field "$out/$name.figures.json" 'd["memory_reserved"]')" "$(json_field "$out/$name.leaks.json" 'sum(g["bytes"] for g in d["leaks"] if g.get("allocator") == "pytorch" and g.get("level") in ("block", "cache"))')"
  check "$name: every VMM handle live at exit is mapped" True "$(json_field "$out/$name.report.json" 'd["devices"][0]["by_kind"]["vmm_physical"]["live_at_exit_bytes"] == d["devices"][0]["by_kind"]["vmm_mapping"]["live_at_exit_bytes"] > 0')"
done
nccl_vmm='d["devices"][0]["by_kind"]["vmm_physical"]["live_at_exit_bytes"] - json.load(open(sys.argv[3]))["memory_reserved"]'
check "NCCL's VMM bytes at exit: the bounded trace's equal the unbounded one's" "$(json_field "$out/vmm_whole.report.json" "$nccl_vmm" "$out/vmm_whole.figures.json")" "$(json_field "$out/vmm_bounded.report.json" "$nccl_vmm" "$out/vmm_bounded.figures.json")"

fi

if want 12; then
echo "--- 12. torchrun, eight ranks (gloo) on one GPU: the job view"
NPROC=8 traced_torchrun job8 29561 gloo shared
check "ranks traced" "[0, 1, 2, 3, 4, 5, 6, 7]" "$(json_field "$out/job8.report.json" 'sorted(t["rank"] for t in d["traces"] if t["rank"] is not None)')"
check "the highest peak is rank 7's (it keeps 256 MiB more than rank 6)" 7 "$(json_field "$out/job8.report.json" 'd["job"]["highest_peak"]["rank"]')"
rm -rf "$out/job8-summaries" && mkdir -p "$out/job8-summaries"
for t in "$out"/job8/*.gmt; do
  "$gmt" summarize "$t" -o "$out/job8-summaries/$(basename "$t" .gmt).summary.json"
done
"$gmt" report --json "$out/job8-summaries" >"$out/job8.summaries.report.json"
check "the job view from the ranks' summaries equals the one from their traces" True \
  "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["job"] == json.load(open(sys.argv[2]))["job"])' "$out/job8.report.json" "$out/job8.summaries.report.json")"
"$gmt" export --format jsonl -o "$out/job8.jsonl" "$out/job8" && echo "jsonl export: $(wc -l <"$out/job8.jsonl") rows"
# Rank 7 keeps 2 GiB of its own, the median rank about 1.1 GiB: a spread of about 1.7.
"$gmt" check --max-imbalance 1.5 "$out/job8" >"$out/job8.check.txt" 2>&1
check "check --max-imbalance 1.5 fails the job" 1 "$?"
cat "$out/job8.check.txt"
"$gmt" check --max-imbalance 2.5 "$out/job8" >/dev/null 2>&1
check "check --max-imbalance 2.5 passes it" 0 "$?"

fi

if want 13; then
echo "--- 13. format 4.1: every trace's chunk headers count their records"
counts=$(python3 tests/gpu/chunk_counts.py $(find "$out" -name '*.gmt' | sort) | tail -1)
echo "$counts"
check "chunks whose header's record count is wrong, in every trace of this run" 0 "${counts##*mismatched }"

fi

if want 14; then
echo "--- 14. roles and modules (scripts/gpu-validate-roles.sh, its cost measured apart)"
GMT_ROLES_COST=0 scripts/gpu-validate-roles.sh "$out" || failures=$((failures + 1))

fi

if want 15; then
echo "--- 15. the wheel in a venv that sees the host's torch: run, and the pytest plugin"
rm -rf "$out/wheel" && mkdir -p "$out/wheel"
# A wheel carried with the build (build-gpu/dist, built where patchelf is) is used as it is.
carried_wheel=$(ls build-gpu/dist/gpumemtrace-*.whl 2>/dev/null | sed -n 1p)
if wheel=${carried_wheel:-$(PYTHON="${PYTHON:-python3}" scripts/build-wheel.sh build-gpu "$out/wheel/dist" 2>"$out/wheel/build.log")} &&
  python3 -m venv --system-site-packages "$out/wheel/venv" &&
  # --system-site-packages leaves out the user's site and PYTHONPATH, where a host may keep
  # torch and pytest: a .pth puts every folder of packages the host's python3 sees after the
  # venv's own.
  python3 -c 'import sys; print("\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))' \
    >"$("$out/wheel/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/host-packages.pth" &&
  "$out/wheel/venv/bin/pip" install --no-index --quiet "$wheel"; then
  wpy="$out/wheel/venv/bin/python"
  "$wpy" -m gpumemtrace run -o "$out/wheel/train.gmt" -- "$wpy" tests/gpu/wheel_torch_train.py "$out/wheel/train.json"
  kept_line=$(grep -n "# site: kept" tests/gpu/wheel_torch_train.py | cut -d: -f1)
  "$out/wheel/venv/bin/gpumemtrace" leaks --json "$out/wheel/train.gmt" >"$out/wheel/train.leaks.json"
  "$out/wheel/venv/bin/gpumemtrace" leaks "$out/wheel/train.gmt" | sed -n 1,16p
  check "wheel: the kept tensor is PyTorch's block never freed, at its line" "[33554432]" \
    "$(json_field "$out/wheel/train.leaks.json" '[g["bytes"] for g in d["leaks"] if g.get("level") == "block" and any(f["line"] == int(sys.argv[3]) and (f["file"] or "").endswith("wheel_torch_train.py") for f in g["frames"])]' "$kept_line")"
  check "wheel: the API's leaks are the CLI's" True "$("$wpy" -c 'import json, sys, gpumemtrace; print([r["bytes"] for r in gpumemtrace.load(sys.argv[1]).leaks.to_dict("records")] == [g["bytes"] for g in json.load(open(sys.argv[2]))["leaks"]])' "$out/wheel/train.gmt" "$out/wheel/train.leaks.json")"
  leak_line=$(grep -n "# site: leak" tests/gpu/wheel_torch_leak_cases.py | cut -d: -f1)
  (cd "$out/wheel" && "$wpy" -m pytest -p no:cacheprovider --gpumemtrace --gpumemtrace-dir "$out/wheel/pytest" \
    "$OLDPWD/tests/gpu/wheel_torch_leak_cases.py" >"$out/wheel/pytest.log" 2>&1)
  check "wheel: pytest --gpumemtrace fails the leaking test" 1 "$?"
  tail -5 "$out/wheel/pytest.log"
  check "wheel: 1 failed, 1 passed" True "$(grep -qE '^=+ 1 failed, 1 passed' "$out/wheel/pytest.log" && echo True || echo False)"
  check "wheel: the failure names the tensor's line and 16 MiB" True \
    "$(grep -qF "test_keeps_a_tensor left 16.0 MiB (16777216 bytes) of GPU memory in 1 allocation(s) live after it, over its limit limit_gpu_leaks(1.0 MiB); top site: wheel_torch_leak_cases.py:$leak_line" "$out/wheel/pytest.log" && echo True || echo False)"
else
  echo "FAIL wheel: not built or not installed (see $out/wheel/build.log)"; failures=$((failures + 1))
fi

fi

if want 16; then
echo "--- 16. JAX: XLA's pool noted by default; --jax-allocator=platform puts a kept array at its line"
for allocator in default platform; do
  option=(); [ "$allocator" = platform ] && option=(--jax-allocator=platform)
  rm -f "$out/jax_kept_$allocator".*.gmt
  "$gmt" run "${option[@]}" -o "$out/jax_kept_$allocator.%p.gmt" -- python3 tests/gpu/jax_kept_array.py \
    >"$out/jax_kept_$allocator.log" 2>&1 ||
    { echo "FAIL jax_kept_array.py $allocator (see jax_kept_$allocator.log)"; tail -5 "$out/jax_kept_$allocator.log"; failures=$((failures + 1)); }
  trace=$(ls "$out"/jax_kept_$allocator.*.gmt | sed -n 1p)
  "$gmt" report --json "$trace" >"$out/jax_kept_$allocator.report.json"
  "$gmt" peak --json --top 1000 "$trace" >"$out/jax_kept_$allocator.peak.json"
  "$gmt" peak "$trace" | sed -n 1,12p
  "$gmt" peak --by library "$trace" | sed -n 1,6p
done
pool='d["devices"][0]["hidden_pool"]'
check "jax default: report notes XLA's pool, naming XLA_PYTHON_CLIENT_ALLOCATOR=platform" True "$(json_field "$out/jax_kept_default.report.json" "$pool[\"framework\"] == \"jax\" and \"XLA_PYTHON_CLIENT_ALLOCATOR=platform\" in $pool[\"note\"]")"
check "jax default: the pool is taken at once and holds over half the device" True "$(json_field "$out/jax_kept_default.report.json" "$pool[\"preallocated\"] and 2 * $pool[\"bytes\"] > $pool[\"device_total_bytes\"] > 0")"
check "jax default: peak notes it too" True "$(json_field "$out/jax_kept_default.peak.json" "$pool == json.load(open(sys.argv[3]))[\"devices\"][0][\"hidden_pool\"]" "$out/jax_kept_default.report.json")"
check "jax platform: the trace keeps the allocator run set" True "$(json_field "$out/jax_kept_platform.report.json" '"XLA_PYTHON_CLIENT_ALLOCATOR=platform" in d["traces"][0]["env"]')"
check "jax platform: no pool to note" False "$(json_field "$out/jax_kept_platform.report.json" '"hidden_pool" in d["devices"][0]')"
keep_line=$(sed -n 's/^keep_line=//p' "$out/jax_kept_platform.log")
keep_bytes=$(sed -n 's/^keep_bytes=//p' "$out/jax_kept_platform.log")
check "jax platform: the kept array ($keep_bytes bytes) at its line, jax_kept_array.py:$keep_line" True "$(json_field "$out/jax_kept_platform.peak.json" 'any(g["bytes"] >= int(sys.argv[4]) and [(f["file"] or "").endswith("jax_kept_array.py") and f["line"] == int(sys.argv[3]) for f in g.get("frames", []) if f.get("user")] == [True] for g in d["devices"][0]["groups"])' "$keep_line" "$keep_bytes")"

fi
if want 17; then
echo "--- 17. reports that once misled: the views at the seed's peak, one OOM per failure, the user's lines first"
for case in seed fragmented evaluation; do
  rm -f "$out/case_$case".*.gmt
  "$gmt" run -o "$out/case_$case.%p.gmt" -- python3 tests/gpu/report_cases.py "$case" "$out/case_$case.json" \
    >"$out/case_$case.log" 2>&1 || { echo "FAIL report_cases.py $case (see case_$case.log)"; tail -5 "$out/case_$case.log"; failures=$((failures + 1)); }
done
seed=$(ls "$out"/case_seed.*.gmt | sed -n 1p)
"$gmt" report --json "$seed" >"$out/case_seed.report.json"
at_peak='d["devices"][0]["views"]["at_peak"]'
check "seed: framework allocated at the peak == torch.cuda.max_memory_allocated()" "$(json_field "$out/case_seed.json" 'd["max_memory_allocated"]')" "$(json_field "$out/case_seed.report.json" "$at_peak[\"framework_allocated_bytes\"]")"
check "seed: framework reserved at the peak == torch.cuda.max_memory_reserved()" "$(json_field "$out/case_seed.json" 'd["max_memory_reserved"]')" "$(json_field "$out/case_seed.report.json" "$at_peak[\"framework_reserved_bytes\"]")"
check "seed: peak_bytes == torch.cuda.max_memory_reserved()" "$(json_field "$out/case_seed.json" 'd["max_memory_reserved"]')" "$(json_field "$out/case_seed.report.json" 'd["devices"][0]["peak_bytes"]')"
echo "INFO seed: outside the framework at the peak $(json_field "$out/case_seed.report.json" "$at_peak.get(\"outside_framework_bytes\")") bytes"
fragmented=$(ls "$out"/case_fragmented.*.gmt | sed -n 1p)
"$gmt" oom --json "$fragmented" >"$out/case_fragmented.oom.json"
"$gmt" oom "$fragmented" | sed -n 1,30p
# Two failures: the fill's last 6 MiB (the device full) and the 1 GiB one; each listed once,
# its release of the cache and retry folded into it.
check "fragmented: two failures, each listed once" 2 "$(json_field "$out/case_fragmented.oom.json" 'len(d["ooms"])')"
check "fragmented: the 1 GiB request, with the allocator's figures: fragmented" "(1073741824, True, True)" \
  "$(json_field "$out/case_fragmented.oom.json" '[(o.get("allocator_requested_bytes"), o.get("fragmentation"), o.get("cache_free_bytes", 0) >= 1 << 30 > o.get("largest_free_block_bytes", 1 << 31)) for o in d["ooms"][-1:]][0]')"
evaluation=$(ls "$out"/case_evaluation.*.gmt | sed -n 1p)
"$gmt" leaks --json "$evaluation" >"$out/case_evaluation.leaks.json"
"$gmt" leaks "$evaluation" | sed -n 1,24p
lead='[next((f for f in g["frames"] if f.get("user")), {}).get("file") or "" for g in d["leaks"] if g.get("level") == "block"]'
check "evaluation: every PyTorch block group of the leak leads with the program's own line" True \
  "$(json_field "$out/case_evaluation.leaks.json" "len($lead) > 0 and all(f.endswith('report_cases.py') for f in $lead)")"
hidden_line=$(grep -n "# site: hidden" tests/gpu/report_cases.py | cut -d: -f1)
check "evaluation: the kept activations at report_cases.py:$hidden_line, 40 of 16 MiB" "[(671088640, 40)]" \
  "$(json_field "$out/case_evaluation.leaks.json" '[(g["bytes"], g["count"]) for g in d["leaks"] if g.get("level") == "block" and g["bytes"] == 671088640 and next((f for f in g["frames"] if f.get("user")), {}).get("line") == int(sys.argv[3])]' "$hidden_line")"
fi

if want 18; then
echo "--- 18. the recorder's threads open no descriptor: the process's descriptors stay put while it sleeps"
# Sampling every millisecond; untraced first, the same program, as the control.
python3 tests/gpu/descriptors_stay_put.py "$out/descriptors_untraced.json" >"$out/descriptors_untraced.log" 2>&1 ||
  { echo "FAIL descriptors_stay_put.py untraced (see descriptors_untraced.log)"; failures=$((failures + 1)); }
rm -f "$out"/descriptors.*.gmt
GPUMEMTRACE_SAMPLE_MS=1 "$gmt" run -o "$out/descriptors.%p.gmt" -- python3 tests/gpu/descriptors_stay_put.py \
  "$out/descriptors_traced.json" >"$out/descriptors_traced.log" 2>&1 ||
  { echo "FAIL descriptors_stay_put.py traced (see descriptors_traced.log)"; failures=$((failures + 1)); }
for run in untraced traced; do
  check "descriptors: none opened or closed while the program slept ($run)" "{} {}" \
    "$(json_field "$out/descriptors_$run.json" '" ".join(str(d[k]) for k in ("opened", "closed"))')"
done
"$gmt" report --json "$out"/descriptors.*.gmt >"$out/descriptors.report.json"
check "descriptors: the trace's NVML view named the device" True \
  "$(json_field "$out/descriptors.report.json" 'bool(d["devices"][0].get("name"))')"
check "descriptors: NVML read per process at the peak" True \
  "$(json_field "$out/descriptors.report.json" 'd["devices"][0]["views"]["at_peak"]["nvml_process_bytes"] is not None')"
echo "INFO descriptors the trace added: $(json_field "$out/descriptors_traced.json" 'len(d["before"])') traced against $(json_field "$out/descriptors_untraced.json" 'len(d["before"])') untraced"
fi

echo "gpu-validate: $failures failure(s)"
exit $((failures > 0))
