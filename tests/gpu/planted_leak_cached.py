# SPDX-License-Identifier: Apache-2.0
"""A PyTorch training loop with the default caching allocator that leaks from a small helper:
remember() keeps one activation every 5 steps (the line marked PLANTED LEAK). With the cache on, a
driver-level trace blames whichever line grew the cache; block events name remember()'s line.

At the end it writes what PyTorch itself says (ORACLE_JSON): memory_allocated, memory_reserved,
and every active block and segment of torch.cuda.memory._snapshot() (address, size), then leaves
with os._exit(0), so that the trace's state at its end is the state the oracle describes.

Usage: python3 planted_leak_cached.py ORACLE_JSON
"""
import inspect
import json
import os
import sys

import torch

kept = []


def remember(activation):
    kept.append(activation.detach().clone())  # PLANTED LEAK
    return inspect.currentframe().f_lineno - 1


def main():
    model = torch.nn.Sequential(
        *[m for _ in range(8) for m in (torch.nn.Linear(1024, 1024), torch.nn.ReLU())]
    ).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    line = None
    for step in range(60):
        x = torch.randn(512, 1024, device="cuda")
        hidden = model(x)
        loss = hidden.square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 5 == 0:
            line = remember(torch.cat([hidden] * 4))
        del hidden, loss, x
    # Held to the end, so that PyTorch's blocks differ from the sizes asked for (which are all its
    # trace entries give): a 4-byte scalar in a 512-byte block, and 3 MiB + 1000 bytes rounded up
    # to 512 bytes, or more where the rest of its free block is not worth splitting off.
    scalar = torch.zeros((), device="cuda")
    odd = torch.empty(3 * 2**20 + 1000, dtype=torch.uint8, device="cuda")
    # A 48 MiB + 1000-byte tensor in the 64 MiB block a freed tensor left in the cache: split off
    # by default; whole with max_split_size_mb:32 (a block of 32 MiB or more is never split),
    # where roundup_power2_divisions:4 first rounds the request to 56 MiB.
    big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    del big
    reused = torch.empty((48 << 20) + 1000, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    snapshot = torch.cuda.memory._snapshot()
    blocks, segments = [], []
    for seg in snapshot["segments"]:
        segments.append({"address": seg["address"], "size": seg["total_size"]})
        addr = seg["address"]
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                blocks.append({"address": addr, "size": b["size"]})
            addr += b["size"]
    oracle = {
        "leak_line": line,
        "kept": len(kept),
        "kept_bytes": sum(t.untyped_storage().nbytes() for t in kept),
        "memory_allocated": torch.cuda.memory_allocated(),
        "memory_reserved": torch.cuda.memory_reserved(),
        "blocks": blocks,
        "segments": segments,
    }
    assert scalar.untyped_storage().nbytes() == 4 and odd.untyped_storage().nbytes() == 3 * 2**20 + 1000
    assert reused.untyped_storage().nbytes() == (48 << 20) + 1000
    with open(sys.argv[1], "w") as f:
        json.dump(oracle, f)
    print(f"leak_line={line} kept={len(kept)} allocated={oracle['memory_allocated']} "
          f"reserved={oracle['memory_reserved']} blocks={len(blocks)} segments={len(segments)}",
          flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
