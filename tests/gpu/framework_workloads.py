# SPDX-License-Identifier: Apache-2.0
"""Allocation workloads of real frameworks, for scripts/gpu-validate.sh.

Usage: python3 framework_workloads.py WORKLOAD OUT_JSON
Each workload allocates known memory through its framework's usual path, then writes what the
framework itself says (and, for PyTorch, its own memory snapshot's segments) and what NVML says
this process uses, to OUT_JSON. Allocator settings come from the environment the caller sets
(PYTORCH_CUDA_ALLOC_CONF, XLA_PYTHON_CLIENT_*), since they must be in place before CUDA starts.
"""
import json
import os
import sys

MiB = 1024 * 1024


def nvml_process_bytes():
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if p.pid == os.getpid():
                return p.usedGpuMemory
    except Exception as e:  # NVML missing, or a container whose PIDs differ
        print("nvml:", e, file=sys.stderr)
    return None


def torch_segments(torch):
    snapshot = torch.cuda.memory._snapshot()
    return [[s["address"], s["total_size"]] for s in snapshot["segments"]]


def torch_tensors(with_snapshot):
    import torch

    if with_snapshot:
        torch.cuda.memory._record_memory_history(max_entries=100000)
    d = torch.device("cuda:0")
    x = torch.empty(256 * MiB, dtype=torch.uint8, device=d)
    y = torch.empty(512 * MiB, dtype=torch.uint8, device=d)
    del x
    z = torch.empty(1024 * MiB, dtype=torch.uint8, device=d)
    torch.cuda.synchronize()
    out = {"framework_label": "torch max_memory_reserved", "framework_bytes": torch.cuda.max_memory_reserved(d)}
    if with_snapshot:
        out["segments"] = torch_segments(torch)
    out["keep"] = (y, z)
    return out


def torch_pinned():
    import torch

    torch.cuda.init()
    t = torch.empty(64 * MiB, dtype=torch.uint8).pin_memory()
    return {"framework_label": "pinned tensor bytes", "framework_bytes": t.numel(), "keep": t}


def nccl_allreduce():
    import torch
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
    t = torch.ones(16 * MiB, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    out = {"framework_label": "torch max_memory_reserved", "framework_bytes": torch.cuda.max_memory_reserved()}
    out["nvml_process_bytes"] = nvml_process_bytes()
    dist.destroy_process_group()
    return out


def jax_array():
    import jax
    import jax.numpy as jnp

    x = jnp.ones((64 * MiB,), dtype=jnp.float32)
    x.block_until_ready()
    stats = jax.devices()[0].memory_stats() or {}
    return {"framework_label": "jax bytes_limit/bytes_in_use",
            "framework_bytes": stats.get("bytes_limit") or stats.get("bytes_in_use") or x.nbytes,
            "keep": x}


def cupy_array():
    import cupy

    a = cupy.ones((32, 1024, 1024), dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    return {"framework_label": "cupy pool total_bytes",
            "framework_bytes": cupy.get_default_memory_pool().total_bytes(), "keep": a}


WORKLOADS = {
    "torch_default": lambda: torch_tensors(True),
    "torch_expandable": lambda: torch_tensors(True),
    "torch_async": lambda: torch_tensors(False),
    "torch_pinned": torch_pinned,
    "nccl": nccl_allreduce,
    "jax_default": jax_array,
    "jax_platform": jax_array,
    "cupy": cupy_array,
}


def main():
    name, out_path = sys.argv[1], sys.argv[2]
    result = WORKLOADS[name]()
    result.pop("keep", None)
    if result.get("nvml_process_bytes") is None:
        result["nvml_process_bytes"] = nvml_process_bytes()
    result["workload"] = name
    with open(out_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
