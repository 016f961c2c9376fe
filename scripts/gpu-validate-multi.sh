#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Validates gpumemtrace on two GPUs of one host, in one go (a few minutes):
#   1. torchrun --nproc_per_node=2, NCCL data-parallel, one GPU per rank: one trace per rank,
#      each rank's memory on its own device, NCCL's buffers owned by libnccl, the run table;
#   2. one process on both GPUs with CUDA_VISIBLE_DEVICES=1,0: each ordinal matched to its
#      physical GPU by PCI bus id, NVML's per-process figure reconciled per device;
#   3. a CUDA tensor shared between two processes (torch.multiprocessing, CUDA IPC): the
#      importer records the import and does not count it as its own.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0); nothing here calls cuMulticastCreate.
# Usage: scripts/gpu-validate-multi.sh [OUTPUT_DIR]   (default: $OUT, else gpu-validate-output)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-validate-output}}"
mkdir -p "$out"

. scripts/lib/gpu_build.sh
. scripts/lib/gpu_checks.sh
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total --format=csv,noheader
count=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
if [ "$count" -lt 2 ]; then echo "FAIL this machine has $count GPU(s); two are needed"; exit 1; fi

echo "--- 1. torchrun, two ranks, NCCL, one GPU each"
traced_torchrun ddp 29551 nccl own
for rank in 0 1; do
  q="[t for t in d['traces'] if t['rank'] == $rank][0]['pid']"
  check "rank $rank: its memory is on its own device only" "[$rank]" \
    "$(json_field "$out/ddp.report.json" "sorted(x['device'] for x in d['devices'] if x['pid'] == $q and x['peak_bytes'] > 0)")"
  check "rank $rank: NCCL's buffers owned by libnccl at the peak" True \
    "$(json_field "$out/ddp.report.json" "[x for x in d['devices'] if x['pid'] == $q and x['device'] == $rank][0]['views']['at_peak']['by_library'].get('libnccl', 0) > 0")"
  json_field "$out/ddp.report.json" "[x for x in d['devices'] if x['pid'] == $q and x['device'] == $rank][0]['views']['at_peak']"
done
check "the two ranks are on different GPUs" True \
  "$(json_field "$out/ddp.report.json" "len({x['pci_bus_id'] for x in d['devices'] if x['peak_bytes'] > 0}) == 2")"

echo "--- 2. one process, both GPUs, CUDA_VISIBLE_DEVICES=1,0"
rm -f "$out"/twodev.*.gmt
CUDA_VISIBLE_DEVICES=1,0 "$gmt" run -o "$out/twodev.%p.gmt" -- python3 tests/gpu/two_devices.py "$out/twodev.torch.json" \
  >"$out/twodev.log" 2>&1 || { echo "FAIL two_devices (see twodev.log)"; tail -5 "$out/twodev.log"; failures=$((failures + 1)); }
"$gmt" report --json "$out"/twodev.*.gmt >"$out/twodev.report.json"
"$gmt" report "$out"/twodev.*.gmt | grep -v '^        '
for ordinal in 0 1; do
  check "ordinal $ordinal: PCI bus id as PyTorch sees it" \
    "$(json_field "$out/twodev.torch.json" "d['ordinals']['$ordinal']['pci_bus_id']")" \
    "$(json_field "$out/twodev.report.json" "[x for x in d['devices'] if x['device'] == $ordinal][0]['pci_bus_id'].lower()[-12:]")"
  check "ordinal $ordinal: NVML index of that GPU" "$((1 - ordinal))" \
    "$(json_field "$out/twodev.report.json" "[x for x in d['devices'] if x['device'] == $ordinal][0]['nvml_index']")"
  check "ordinal $ordinal: NVML per-process equals nvidia-ml's own reading" \
    "$(json_field "$out/twodev.torch.json" "d['nvml'][d['ordinals']['$ordinal']['pci_bus_id']]['process_bytes']")" \
    "$(json_field "$out/twodev.report.json" "[x for x in d['devices'] if x['device'] == $ordinal][0]['views']['at_exit']['nvml_process_bytes']")"
done
check "ordinal 0 peak (1 GiB)" 1073741824 "$(json_field "$out/twodev.report.json" "[x for x in d['devices'] if x['device'] == 0][0]['peak_bytes']")"
check "ordinal 1 peak (2 GiB)" 2147483648 "$(json_field "$out/twodev.report.json" "[x for x in d['devices'] if x['device'] == 1][0]['peak_bytes']")"

echo "--- 3. CUDA IPC between two processes"
rm -rf "$out/ipc" && mkdir -p "$out/ipc"
"$gmt" run -o "$out/ipc/ipc.%p.gmt" -- python3 tests/gpu/ipc_share.py >"$out/ipc.log" 2>&1 ||
  { echo "FAIL ipc_share (see ipc.log)"; tail -5 "$out/ipc.log"; failures=$((failures + 1)); }
cat "$out/ipc.log"
"$gmt" report --json "$out/ipc" >"$out/ipc.report.json"
"$gmt" report "$out/ipc" | grep -v '^        '
check "the importer recorded the import (ipc_import bytes)" True \
  "$(json_field "$out/ipc.report.json" "any(x['by_kind'].get('ipc_import', {}).get('peak_bytes', 0) >= 512 * 2**20 for x in d['devices'])")"
check "the importer does not count it: its peak is its own 64 MiB in the caching allocator's segments" True \
  "$(json_field "$out/ipc.report.json" "[x for x in d['devices'] if 'ipc_import' in x['by_kind']][0]['peak_bytes'] < 512 * 2**20")"

echo "gpu-validate-multi: $failures failure(s)"
exit $((failures > 0))
