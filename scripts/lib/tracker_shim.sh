# SPDX-License-Identifier: Apache-2.0
# Sourced by the GPU benches, from the repository root, with $out and $gmt set (gpu_build.sh).
# build_tracker_shim: builds the PyTorch shim a traced run builds for this torch, in a cache of
# the bench's own ($out/shim), and the stub whose block entry point does nothing
# (tests/gpu/noop_block.cpp); sets $shim and $stub, or returns 1 with $shim empty (see
# $out/shim-build.log).
build_tracker_shim() {
  rm -rf "$out/shim"  # a shim left by an earlier run may be another torch's
  GPUMEMTRACE_CACHE_DIR="$out/shim" "$gmt" run -o "$out/shim-build.%p.gmt" -- \
    python3 -c 'import torch; torch.zeros(1, device="cuda")' >"$out/shim-build.log" 2>&1
  rm -f "$out"/shim-build.*.gmt
  shim=$(find "$out/shim" -name 'torch-tracker-*.so' 2>/dev/null | sed -n 1p)
  stub="$out/shim/noop_block.so"
  if [ -z "$shim" ] || ! c++ -shared -fPIC -O2 -o "$stub" tests/gpu/noop_block.cpp; then
    shim=""
    return 1
  fi
}
