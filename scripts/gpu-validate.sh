#!/usr/bin/env bash
# Validates gpumemtrace on a machine with a real NVIDIA GPU, in one go (a few minutes):
#   1. PyTorch's caching allocator: our peak equals torch.cuda.max_memory_reserved();
#   2. an nvcc program with the default static cudart, and one calling cuMemAlloc via -lcuda:
#      the known sequence gives exactly the expected peak and live bytes;
#   3. Python without CUDA under the preload leaves no trace.
# Usage: scripts/gpu-validate.sh [OUTPUT_DIR]   (default: $OUT, else gpu-validate-output)
# Uses build-gpu/ if it holds a build (carried from elsewhere), else builds one (no tests).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-validate-output}}"
mkdir -p "$out"
failures=0
check() {  # check NAME EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then echo "PASS $1: $3"; else echo "FAIL $1: expected $2, got $3"; failures=$((failures + 1)); fi
}

if [ ! -x build-gpu/bin/gpumemtrace ]; then
  cmake -S . -B build-gpu -DGMT_BUILD_TESTS=OFF >"$out/build.log" 2>&1 &&
    cmake --build build-gpu -j "$(nproc)" >>"$out/build.log" 2>&1 || { echo "FAIL build (see build.log)"; exit 1; }
fi
gmt="$PWD/build-gpu/bin/gpumemtrace"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

json_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

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

echo "--- 2. nvcc programs: static cudart, and the driver through -lcuda"
nvcc -O1 -o "$out/seq_static" tests/gpu/alloc_sequence.cu >>"$out/build.log" 2>&1 || echo "FAIL nvcc static"
nvcc -O1 -DUSE_DRIVER -o "$out/seq_driver" tests/gpu/alloc_sequence.cu -lcuda >>"$out/build.log" 2>&1 || echo "FAIL nvcc driver"
for prog in seq_static seq_driver; do
  rm -f "$out/$prog".*.gmt
  "$gmt" run -o "$out/$prog.%p.gmt" -- "$out/$prog"
  "$gmt" report --json "$out/$prog".*.gmt >"$out/$prog.json"
  check "$prog peak_bytes" $((14 << 20)) "$(json_field "$out/$prog.json" 'd["devices"][0]["peak_bytes"]')"
  check "$prog live_at_exit_bytes" $((2 << 20)) "$(json_field "$out/$prog.json" 'd["devices"][0]["live_at_exit_bytes"]')"
  check "$prog alloc/free counts" "4/3" "$(json_field "$out/$prog.json" '"%d/%d" % (d["devices"][0]["alloc_count"], d["devices"][0]["free_count"])')"
done

echo "--- 3. JAX (cuGetProcAddress at 11030) and CuPy (dlsym of cuMemAlloc_v2)"
rm -f "$out"/jax.*.gmt "$out"/cupy.*.gmt
XLA_PYTHON_CLIENT_MEM_FRACTION=0.05 "$gmt" run -o "$out/jax.%p.gmt" -- python3 -c '
import jax, jax.numpy as jnp
x = jnp.ones((1024, 1024), dtype=jnp.float32); x.block_until_ready()
print("jax devices", jax.devices())'
"$gmt" report --json "$out"/jax.*.gmt >"$out/jax.json"
total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0)
jax_peak=$(json_field "$out/jax.json" 'max(x["peak_bytes"] for x in d["devices"])')
echo "INFO jax peak $jax_peak bytes; 5% of the device is $((total * 1024 * 1024 / 20)) bytes"
# jax 0.11 preallocates with cuMemCreate/cuMemMap fetched by dlsym: VMM is not tracked yet
# (interception issue), so this is reported, not checked.
echo "INFO jax preallocation seen: $(python3 -c "print('yes' if $jax_peak >= $total * 1048576 * 0.045 else 'no (VMM not tracked yet)')")"
"$gmt" run -o "$out/cupy.%p.gmt" -- python3 -c '
import cupy
a = cupy.ones((32, 1024, 1024), dtype=cupy.float32)
cupy.cuda.Device().synchronize()
print("cupy pool used", cupy.get_default_memory_pool().used_bytes())'
"$gmt" report --json "$out"/cupy.*.gmt >"$out/cupy.json"
cupy_peak=$(json_field "$out/cupy.json" 'max(x["peak_bytes"] for x in d["devices"])')
check "cupy 128 MiB array seen (peak >= 128 MiB)" yes "$(python3 -c "print('yes' if $cupy_peak >= 128 << 20 else 'no')")"

echo "--- 4. no CUDA, no trace"
rm -f "$out"/nocuda.*.gmt
GPUMEMTRACE_OUTPUT="$out/nocuda.%p.gmt" LD_PRELOAD="$PWD/build-gpu/lib/libgpumemtrace.so" python3 -c 'import torch; print("imported torch")'
check "traces left by a process without CUDA use" 0 "$(ls "$out"/nocuda.*.gmt 2>/dev/null | wc -l)"

echo "gpu-validate: $failures failure(s)"
exit $((failures > 0))
