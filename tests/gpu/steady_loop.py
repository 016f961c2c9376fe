# SPDX-License-Identifier: Apache-2.0
"""A PyTorch training loop (default caching allocator) that runs for a while, for the checks that
watch a running job (`gpumemtrace top`) or bound its trace (`--max-size`).

remember() keeps one 8 MiB tensor every 10 steps (the line marked PLANTED LEAK), so the job grows
slowly and steadily. Every step rewrites FIGURES_JSON with what PyTorch says at that moment
(memory_allocated, memory_reserved, the step, the leak's line and the bytes kept), so that a
watcher can put them beside its own figures; the file is replaced atomically. It leaves with
os._exit(0) after the last step, so that the trace's state at its end is what the file's last
figures describe (no teardown frees after them).

With GMT_STEADY_NCCL=1 it also all-reduces the loss over a one-rank NCCL group every step, so
that NCCL's own VMM buffers (mapped, then released at once) are live from the start to the end.

Usage: python3 steady_loop.py SECONDS FIGURES_JSON
"""
import inspect
import json
import os
import sys
import tempfile
import time

import torch

MiB = 1 << 20
kept = []


def remember():
    kept.append(torch.empty(8 * MiB, dtype=torch.uint8, device="cuda"))  # PLANTED LEAK
    return inspect.currentframe().f_lineno - 1


def write_figures(path, figures):
    with open(path + ".tmp", "w") as f:
        json.dump(figures, f)
    os.replace(path + ".tmp", path)


def main():
    seconds, path = float(sys.argv[1]), sys.argv[2]
    model = torch.nn.Sequential(
        *[m for _ in range(6) for m in (torch.nn.Linear(1024, 1024), torch.nn.ReLU())]
    ).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    nccl = os.environ.get("GMT_STEADY_NCCL") == "1"
    if nccl:
        import torch.distributed as dist
        store = tempfile.mktemp(prefix="steady-nccl-")
        dist.init_process_group("nccl", init_method=f"file://{store}", rank=0, world_size=1,
                                device_id=torch.device("cuda", 0))
    line = None
    step = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        x = torch.randn(256, 1024, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        if nccl:
            dist.all_reduce(loss.detach())
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 10 == 0:
            line = remember()
        torch.cuda.synchronize()
        write_figures(path, {
            "pid": os.getpid(),
            "step": step,
            "leak_line": line,
            "kept_bytes": len(kept) * 8 * MiB,
            "memory_allocated": torch.cuda.memory_allocated(),
            "memory_reserved": torch.cuda.memory_reserved(),
        })
        step += 1
        time.sleep(0.01)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
