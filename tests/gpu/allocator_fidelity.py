# SPDX-License-Identifier: Apache-2.0
"""Small PyTorch programs whose traces are kept as test data for the caching allocator's model
(analyzer/model/allocator): replayed from the trace, the model must take the segments PyTorch
took and reach its highest reserved, to the byte. Recorded by scripts/gpu-record-fidelity.sh.

    python3 allocator_fidelity.py CASE FIGURES.json

CASE: mlp (4 blocks 1024->4096->1024, AdamW, 3 steps), resnet (torchvision ResNet-50, AMP, batch
32, SGD momentum, 2 steps), transformer (nn.TransformerEncoder d=512 x 4, AdamW, 2 steps),
compiled (the MLP under torch.compile(mode="reduce-overhead"): CUDA graphs), empty_cache (the
MLP with torch.cuda.empty_cache() between steps). The allocator's settings come from
PYTORCH_CUDA_ALLOC_CONF, as users set them. FIGURES.json gets PyTorch's own figures.
"""
import json
import os
import sys

import torch
from torch import nn


def mlp():
    blocks = [nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
              for _ in range(4)]
    model = nn.Sequential(*blocks).cuda()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), (512, 1024), False


def resnet():
    import torchvision

    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer, (32, 3, 224, 224), True


def transformer():
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False).cuda()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), (16, 256, 512), False


def train(model, optimizer, shape, amp, steps, empty_cache=False):
    scaler = torch.amp.GradScaler("cuda") if amp else None
    for _ in range(steps):
        x = torch.randn(*shape, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = model(x).float().square().mean()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad()
        del x, loss
        if empty_cache:
            torch.cuda.empty_cache()
    torch.cuda.synchronize()


def main():
    which, figures_path = sys.argv[1], sys.argv[2]
    build = {"mlp": mlp, "resnet": resnet, "transformer": transformer, "compiled": mlp,
             "empty_cache": mlp}[which]
    model, optimizer, shape, amp = build()
    if which == "compiled":
        model = torch.compile(model, mode="reduce-overhead")
    steps = {"resnet": 2, "transformer": 2}.get(which, 3)
    train(model, optimizer, shape, amp, steps, empty_cache=which == "empty_cache")
    stats = torch.cuda.memory_stats()
    segments = torch.cuda.memory_snapshot()
    figures = {
        "case": which,
        "torch": torch.__version__,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "device_total_bytes": torch.cuda.get_device_properties(0).total_memory,
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "memory_reserved_at_end": torch.cuda.memory_reserved(),
        "num_alloc_retries": stats.get("num_alloc_retries", 0),
        "num_ooms": stats.get("num_ooms", 0),
        "segment_allocs": stats.get("segment.all.allocated", 0),
        "segment_frees": stats.get("segment.all.freed", 0),
        # The segments held at the end, as PyTorch's snapshot gives them (address order).
        "segments_at_end": sorted((s["address"], s["total_size"], s["stream"]) for s in segments),
    }
    with open(figures_path, "w") as f:
        json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
