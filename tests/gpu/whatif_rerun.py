# SPDX-License-Identifier: Apache-2.0
"""One run of a small PyTorch training program under a change, for scripts/gpu-validate-whatif.sh:
traced once unchanged (the trace `whatif` predicts from), then rerun untraced under each change,
PyTorch's own figures written beside it, so that predictions are checked against reality.

    python3 whatif_rerun.py CASE FIGURES.json [--batch N] [--batch-scale K] [--steps N]
                            [--checkpoint MODULE]... [--set-to-none 0|1]

CASE: mlp (4 blocks 1024->4096->1024, AdamW), resnet (torchvision ResNet-50, AMP, SGD momentum),
transformer (nn.TransformerEncoder d=512 x 4, AdamW), fragmented (6 MiB tensors fill the device,
two of three freed, then 1 GiB asked for). The batch is --batch, else the case's own batch for
this device (its size read from torch.cuda.get_device_properties), times --batch-scale (rounded
to a whole batch, at least 1). The allocator's settings come from PYTORCH_CUDA_ALLOC_CONF.
FIGURES.json: the batch run, PyTorch's max_memory_allocated/reserved, and whether it ran out of
memory (then the figures are those up to the failure).
"""
import argparse
import json
import os
import sys

import torch
from torch import nn

MiB = 1 << 20
GiB = 1 << 30

# Rough bytes per sample of each case at its shapes, so that the batch each device runs uses
# about a third of it (the changes then go both ways: some fit, some do not).
BYTES_PER_SAMPLE = {"mlp": 200 * 1024, "resnet": 90 * MiB, "transformer": 70 * MiB}
SHARE = 1 / 3


def default_batch(case, total):
    per = BYTES_PER_SAMPLE[case]
    step = 64 if case == "mlp" else 8
    return max(step, int(total * SHARE / per) // step * step)


def build(case):
    if case == "mlp":
        blocks = [nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
                  for _ in range(4)]
        model = nn.Sequential(*blocks).cuda()
        return model, torch.optim.AdamW(model.parameters(), lr=1e-4), (1024,), False
    if case == "resnet":
        import torchvision

        model = torchvision.models.resnet50().cuda()
        return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), (3, 224, 224), True
    if case == "transformer":
        layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, batch_first=True)
        model = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False).cuda()
        return model, torch.optim.AdamW(model.parameters(), lr=1e-4), (256, 512), False
    raise SystemExit(f"whatif_rerun: unknown case {case!r}")


def checkpointed(model, names):
    """The named submodules' forwards run under torch.utils.checkpoint: their activations freed
    at the forward's end and recomputed in backward."""
    from torch.utils.checkpoint import checkpoint

    modules = dict(model.named_modules())
    for name in names:
        if name not in modules:
            raise SystemExit(f"whatif_rerun: no module {name!r} (have: "
                             f"{', '.join(n for n in list(modules)[:20] if n)}...)")
        module = modules[name]
        forward = module.forward
        module.forward = (lambda f: lambda *a, **k: checkpoint(f, *a, use_reentrant=False, **k))(forward)
    return model


def train(case, batch, steps, checkpoint_names, set_to_none):
    model, optimizer, shape, amp = build(case)
    if checkpoint_names:
        checkpointed(model, checkpoint_names)
    scaler = torch.amp.GradScaler("cuda") if amp else None
    for _ in range(steps):
        x = torch.randn(batch, *shape, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = model(x).float().square().mean()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad(set_to_none=set_to_none)
        del x, loss
    torch.cuda.synchronize()


def fragmented():
    blocks = []
    try:
        while True:
            blocks.append(torch.empty(6 * MiB, dtype=torch.uint8, device="cuda"))
    except torch.cuda.OutOfMemoryError:
        pass
    kept = blocks[2::3]
    del blocks
    big = torch.empty(1024 * MiB, dtype=torch.uint8, device="cuda")  # raises when it does not fit
    del big, kept


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=["mlp", "resnet", "transformer", "fragmented"])
    parser.add_argument("figures")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--batch-scale", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--checkpoint", action="append", default=[])
    parser.add_argument("--set-to-none", type=int, choices=[0, 1], default=1)
    args = parser.parse_args()

    total = torch.cuda.get_device_properties(0).total_memory
    batch = None
    if args.case != "fragmented":
        base = args.batch or default_batch(args.case, total)
        batch = max(1, round(base * args.batch_scale))
    oom = ""
    at_oom = None
    try:
        if args.case == "fragmented":
            fragmented()
        else:
            train(args.case, batch, args.steps, args.checkpoint, bool(args.set_to_none))
    except torch.cuda.OutOfMemoryError as error:
        # The whole first paragraph: PyTorch names the memory outside its allocator there
        # ("Including non-PyTorch memory, this process has ... in use").
        oom = str(error).split("\n\n")[0][:1000]
        free, _ = torch.cuda.mem_get_info()
        at_oom = {"driver_free": free, "memory_reserved": torch.cuda.memory_reserved(),
                  "memory_allocated": torch.cuda.memory_allocated(),
                  "outside_allocator": total - free - torch.cuda.memory_reserved()}
    figures = {
        "case": args.case,
        "torch": torch.__version__,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "device_total_bytes": total,
        "batch": batch,
        "steps": args.steps,
        "checkpoint": args.checkpoint,
        "set_to_none": bool(args.set_to_none),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "oom": oom,
        "at_oom": at_oom,
    }
    with open(args.figures, "w") as f:
        json.dump(figures, f, indent=1)
    print(json.dumps({k: figures[k] for k in ("case", "batch", "alloc_conf", "max_memory_allocated",
                                              "max_memory_reserved", "oom")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
