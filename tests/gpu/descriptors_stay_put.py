# SPDX-License-Identifier: Apache-2.0
"""The recorder's own threads open no descriptor (run traced and untraced by gpu-validate.sh).

After the program's first CUDA allocation has returned, the program sleeps while the sampler
reads NVML and the driver (every millisecond with GPUMEMTRACE_SAMPLE_MS=1): the descriptors the
process holds must stay what they were, as they do untraced. NVML is opened, and each device
looked up, inside the program's first CUDA call: a descriptor taken by another thread while
the program closes and opens its own files would move the number its next open gets.

Usage: descriptors_stay_put.py OUTPUT_JSON
Writes {"before": [...], "after": [...], "opened": {fd: target}, "closed": {fd: target}}.
"""
import json
import os
import sys
import time

import torch


def descriptors():
    # listdir's own descriptor is open while it reads, the same number each time.
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass  # listdir's own, closed by now
    return found


def main():
    x = torch.empty(1 << 20, device="cuda")  # the context, the first allocation, the sampler
    torch.cuda.synchronize()
    time.sleep(0.2)  # whatever the driver and PyTorch do after their first call, untraced too
    before = descriptors()
    time.sleep(1.0)
    after = descriptors()
    del x
    result = {
        "before": sorted(before),
        "after": sorted(after),
        "opened": {fd: after[fd] for fd in sorted(after) if before.get(fd) != after[fd]},
        "closed": {fd: before[fd] for fd in sorted(before) if after.get(fd) != before[fd]},
    }
    with open(sys.argv[1], "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: result[k] for k in ("opened", "closed")}))


if __name__ == "__main__":
    main()
