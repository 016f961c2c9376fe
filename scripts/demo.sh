#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what building needs (not the tests' tools), builds what the demo runs, runs a workload
# under the profiler and prints the report. On a machine with an NVIDIA GPU and PyTorch: a real
# PyTorch program. Elsewhere: the demo training loop on the simulated GPU (tests/fakecuda).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --build
source scripts/lib/cuda_args.sh
cmake -S . -B build -DGMT_WERROR=ON "${cuda_args[@]}" >/dev/null
cmake --build build -j "$(nproc)" --target gpumemtrace gpumemtrace_preload fakecuda_driver \
  fakecuda_runtime fakecuda_nvml demo_training >/dev/null
out=demo-output
rm -rf "$out"
mkdir -p "$out"

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 &&
   python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "demo: real GPU found: tracing a PyTorch program"
  build/bin/gpumemtrace run -o "$out/torch.%p.gmt" -- python3 tests/gpu/torch_allocations.py
else
  echo "demo: no GPU here: tracing the demo training loop on the simulated GPU"
  LD_LIBRARY_PATH="$PWD/build/fakecuda/lib" FAKECUDA_DEVICE_MEMORY=$((16 << 30)) \
    FAKECUDA_DEVICE_COUNT=2 FAKECUDA_OTHER_PROCESS_MEMORY=$((1 << 30)) \
    build/bin/gpumemtrace run -o "$out/demo.%p.gmt" -- build/workloads/demo_training 20
fi
echo
build/bin/gpumemtrace report "$out"/*.gmt
build/bin/gpumemtrace html "$out"/*.gmt -o "$out/report.html"
echo "demo: the same as a page: $out/report.html (open it in a browser)"
