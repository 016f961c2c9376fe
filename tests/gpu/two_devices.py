# SPDX-License-Identifier: Apache-2.0
"""One process on two GPUs, for scripts/gpu-validate-multi.sh (run it with CUDA_VISIBLE_DEVICES=1,0).

Usage: python3 two_devices.py OUT_JSON
Allocates 1 GiB on cuda:0 and 2 GiB on cuda:1, then writes each ordinal's PCI bus id (as PyTorch
sees it) and what NVML says this process uses on each physical GPU.
"""
import json
import os
import sys
import time

import torch

GiB = 1 << 30


def main():
    a = torch.empty(GiB, dtype=torch.uint8, device="cuda:0")
    b = torch.empty(2 * GiB, dtype=torch.uint8, device="cuda:1")
    torch.cuda.synchronize("cuda:0")
    torch.cuda.synchronize("cuda:1")
    time.sleep(0.3)  # the sampler reads both devices here
    figures = {"ordinals": {}}
    for ordinal in (0, 1):
        props = torch.cuda.get_device_properties(ordinal)
        bus = "%04x:%02x:%02x.0" % (props.pci_domain_id, props.pci_bus_id, props.pci_device_id)
        figures["ordinals"][str(ordinal)] = {
            "pci_bus_id": bus,
            "reserved": torch.cuda.memory_reserved(ordinal),
        }
    try:
        import pynvml

        pynvml.nvmlInit()
        per_bus = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            bus = pynvml.nvmlDeviceGetPciInfo(h).busId
            bus = bus.decode() if isinstance(bus, bytes) else bus
            used = [p.usedGpuMemory for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)
                    if p.pid == os.getpid()]
            per_bus[bus.lower()[-12:]] = {"nvml_index": i, "process_bytes": used[0] if used else None}
        figures["nvml"] = per_bus
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        figures["nvml_error"] = str(e)
    del a, b
    with open(sys.argv[1], "w") as f:
        json.dump(figures, f, indent=1)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
