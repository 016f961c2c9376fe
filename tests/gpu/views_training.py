# SPDX-License-Identifier: Apache-2.0
"""A PyTorch training loop for the views, phases, leak and OOM checks of scripts/gpu-validate.sh.

Usage: python3 views_training.py OUT_JSON

Each step is an NVTX range "step" holding "forward", "backward", "all-reduce" (NCCL, one rank)
and "optimizer". A leak is planted (a list keeps a 64 MiB tensor every 3 steps, at the line
marked PLANTED LEAK) and an OOM (an allocation far beyond the device, marked PLANTED OOM). After
each step the script reports PyTorch's view to gpumemtrace (gpumemtrace_torch.report) and reads
torch.cuda.memory_allocated/memory_reserved and `nvidia-smi --query-compute-apps` at the same
moment; OUT_JSON keeps the readings of the step with the most memory reserved.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import gpumemtrace_torch  # noqa: E402

MiB = 1024 * 1024


def nvidia_smi_process_bytes():
    out = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
        capture_output=True, text=True).stdout
    for line in out.splitlines():
        pid, used = [f.strip() for f in line.split(",")]
        if int(pid) == os.getpid():
            return int(used) * MiB
    return None


def main():
    out_json = sys.argv[1]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("nccl", rank=0, world_size=1)
    dev = torch.device("cuda:0")
    torch.cuda.set_device(dev)
    model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 4096)).to(dev)
    opt = torch.optim.Adam(model.parameters())
    kept = []
    best = None
    nvtx = torch.cuda.nvtx
    for step in range(8):
        nvtx.range_push("step")
        nvtx.range_push("forward")
        x = torch.randn(4096, 4096, device=dev)
        loss = model(x).square().mean()
        nvtx.range_pop()
        nvtx.range_push("backward")
        loss.backward()
        nvtx.range_pop()
        nvtx.range_push("all-reduce")
        for p in model.parameters():
            dist.all_reduce(p.grad)
        nvtx.range_pop()
        nvtx.range_push("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        nvtx.range_pop()
        if step % 3 == 0:
            kept.append(torch.empty(64 * MiB, dtype=torch.uint8, device=dev))  # PLANTED LEAK
        torch.cuda.synchronize()
        gpumemtrace_torch.report()
        reading = {
            "step": step,
            "time": time.time(),
            "memory_allocated": torch.cuda.memory_allocated(dev),
            "memory_reserved": torch.cuda.memory_reserved(dev),
            "nvidia_smi_process_bytes": nvidia_smi_process_bytes(),
        }
        if best is None or reading["memory_reserved"] >= best["memory_reserved"]:
            best = reading
        time.sleep(0.1)  # the sampler reads NVML and the driver here too
        nvtx.range_pop()
    oom = None
    try:
        torch.empty(1 << 42, dtype=torch.uint8, device=dev)  # PLANTED OOM
    except torch.OutOfMemoryError as e:
        oom = str(e).splitlines()[0]
    dist.destroy_process_group()
    best["max_memory_reserved"] = torch.cuda.max_memory_reserved(dev)
    best["oom"] = oom
    best["kept_tensors"] = len(kept)
    with open(out_json, "w") as f:
        json.dump(best, f, indent=1)
    print(json.dumps(best))


if __name__ == "__main__":
    main()
