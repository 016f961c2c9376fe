# SPDX-License-Identifier: Apache-2.0
"""Models whose memory by role is checked on the GPU (scripts/gpu-validate.sh, section 14).

    python3 roles_models.py mlp EXPECTED.json      # four MLP blocks 2048->8192->2048, AdamW
    python3 roles_models.py resnet EXPECTED.json   # torchvision ResNet-50, AMP, SGD momentum
    python3 roles_models.py transformer EXPECTED.json  # nn.TransformerEncoder, AdamW
    python3 roles_models.py checkpointed EXPECTED.json  # the MLP, each block checkpointed
    python3 roles_models.py outline EXPECTED.json   # the MLP, 6 steps, the last one's batch larger
    python3 roles_models.py memtracker EXPECTED.json   # the MLP under PyTorch's MemTracker
    python3 roles_models.py compiled EXPECTED.json  # the MLP under torch.compile: graph breaks
    python3 roles_models.py graphed EXPECTED.json   # the MLP's forward captured in a CUDA graph
    python3 roles_models.py oom_forward EXPECTED.json   # ResNet-50 AMP, a batch too large: OOM
    python3 roles_models.py oom_no_grad EXPECTED.json   # the same forward under torch.no_grad

Unchanged programs as far as gpumemtrace goes: nothing here knows it is traced. EXPECTED.json gets
what the model says of itself (its parameters' bytes, its gradients', its optimizer's state,
named_modules()) and the step time, for the checks; `memtracker` gets MemTracker's figures at its
peak. GMT_STEPS sets the steps (default 3).
"""
import gc
import json
import os
import sys
import time

import torch
from torch import nn


def tensor_bytes(tensors):
    """The bytes of the caching allocator's blocks that hold the tensors, as its own snapshot
    gives them (a block may be larger than its request: the allocator did not split off a rest
    not worth keeping)."""
    blocks = {}
    for segment in torch.cuda.memory_snapshot():
        address = segment["address"]
        for block in segment["blocks"]:
            if block["state"] == "active_allocated":
                blocks[block.get("address", address)] = block["size"]
            address += block["size"]
    storages = {t.untyped_storage().data_ptr() for t in tensors if t is not None and t.is_cuda}
    return sum(blocks.get(p, 0) for p in storages)


def mlp_blocks():
    return [
        nn.Sequential(nn.Linear(2048, 8192), nn.GELU(), nn.Linear(8192, 2048)) for _ in range(4)
    ]


def mlp():
    model = nn.Sequential(*mlp_blocks()).cuda()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), (4096, 2048), False


class Checkpointed(nn.Module):
    """The MLP's blocks under activation checkpointing (torch.utils.checkpoint, non-reentrant):
    each keeps only its input for backward, which recomputes its forward on the autograd thread,
    where the block is called as a root of its own."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*mlp_blocks())

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint

        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return x


def checkpointed():
    model = Checkpointed().cuda()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), (4096, 2048), False


def resnet():
    import torchvision

    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer, (128, 3, 224, 224), True


def transformer():
    layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False).cuda()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), (32, 512, 1024), False


def train(model, optimizer, shape, amp, steps, then_backward=True, last_shape=None):
    scaler = torch.amp.GradScaler("cuda") if amp else None
    times = []
    for step in range(steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        x = torch.randn(*(last_shape if last_shape and step == steps - 1 else shape), device="cuda")
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            out = model(x)
            loss = out.float().square().mean()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad()
        # The gradients stay for the checks at exit: a step's end is where they are tagged.
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        del out, loss
    if not then_backward:
        return times
    # One more backward, so that the gradients are live at exit, as they are in the middle of a
    # training loop.
    with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
        loss = model(x).float().square().mean()
    loss.backward()
    del loss, x
    torch.cuda.synchronize()
    return times


def capture(model, shape):
    """The model's forward (no grad) captured in a CUDA graph and replayed: the static output
    stays in the graph's private pool, the forward's temporaries go back to it."""
    static_in = torch.randn(shape, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        static_out = model(static_in)
    graph.replay()
    torch.cuda.synchronize()
    return graph, static_in, static_out


def out_of_memory(no_grad):
    """ResNet-50 AMP at a batch far too large for the device (4096 per 80 GiB with grad, 32768
    under no_grad, which keeps only a few layers' outputs at a time: its first forward fails, as
    users' most common OOM does): the error caught, as a notebook or a batch-size search catches
    it. What torch said of the failure goes to EXPECTED."""
    import torchvision

    total = torch.cuda.get_device_properties(0).total_memory
    batch = (32768 if no_grad else 4096) * -(-total // (80 << 30))
    model = torchvision.models.resnet50().cuda()
    kept.append(model)
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.float16)
    try:
        with torch.autocast("cuda", dtype=torch.float16), torch.set_grad_enabled(not no_grad):
            model(x)
        failed = ""
    except torch.OutOfMemoryError as error:
        failed = str(error).splitlines()[0]
    return {"batch": batch, "device_total_bytes": total, "error": failed,
            "parameter_bytes": tensor_bytes(model.parameters()),
            "input_bytes": tensor_bytes([x]),
            "modules": [name for name, _ in model.named_modules() if name]}


# The model and its optimizer live to the end of the script, as a training script's globals do:
# what the trace holds "at exit" (the program's end, before the interpreter's teardown).
kept = []


def main():
    which, expected_path = sys.argv[1], sys.argv[2]
    steps = int(os.environ.get("GMT_STEPS", "3"))
    if which in ("oom_forward", "oom_no_grad"):
        with open(expected_path, "w") as f:
            json.dump(out_of_memory(which == "oom_no_grad"), f)
        return
    builders = {
        "mlp": mlp,
        "resnet": resnet,
        "transformer": transformer,
        "checkpointed": checkpointed,
        "outline": mlp,
        "memtracker": mlp,
        "compiled": mlp,
        "graphed": mlp,
        "deleted": mlp,
    }
    model, optimizer, shape, amp = builders[which]()
    if which == "compiled":
        model = torch.compile(model)
    kept.extend([model, optimizer])
    expected = {"model": which}
    if which == "memtracker":
        from torch.distributed._tools.mem_tracker import MemTracker

        tracker = MemTracker()
        tracker.track_external(model, optimizer)
        with tracker:
            train(model, optimizer, shape, amp, 1, then_backward=False)
        peak = tracker.get_tracker_snapshot("peak")
        device = torch.device("cuda", torch.cuda.current_device())
        expected["memtracker_peak"] = {str(k): int(v) for k, v in peak[device].items()}
    elif which == "outline":
        # The peak in the 6th step: a forward the hooks report in outline (the 4th on are, but
        # one in 16), whose blocks take their modules from the last whole one.
        times = train(model, optimizer, shape, amp, 6, then_backward=False,
                      last_shape=(shape[0] * 5 // 4,) + shape[1:])
        expected["step_seconds"] = times
    else:
        times = train(model, optimizer, shape, amp, steps)
        expected["step_seconds"] = times
    if which == "deleted":
        # The program lets go of its model and optimizer, as one that trains several in turn:
        # under the profiler, nothing of them may stay allocated (the hooks hold no tensor).
        expected["parameter_bytes"] = tensor_bytes(model.parameters())
        expected["model_bytes"] = (
            expected["parameter_bytes"] + tensor_bytes(p.grad for p in model.parameters()) +
            tensor_bytes(v for state in optimizer.state.values() for v in state.values()
                         if torch.is_tensor(v)))
        expected["allocated_before_delete"] = torch.cuda.memory_allocated()
        kept.clear()
        del model, optimizer
        gc.collect()
        expected["allocated_after_delete"] = torch.cuda.memory_allocated()
        with open(expected_path, "w") as f:
            json.dump(expected, f)
        return
    if which == "graphed":
        graph, static_in, static_out = capture(model, shape)
        kept.extend([graph, static_in, static_out])
        expected["graph_output_bytes"] = tensor_bytes([static_out])
        # The cuda_graph role is the blocks of the graph's private pool: its output, and what
        # libraries took during the capture (cuBLAS's workspace for the capture's stream); its
        # free space is allocator_cache. The live blocks of every pool but the default one
        # (0, 0), as torch's snapshot gives them.
        expected["graph_pool_bytes"] = sum(
            s["allocated_size"] for s in torch.cuda.memory_snapshot()
            if tuple(s.get("segment_pool_id", (0, 0))) != (0, 0))
    expected["parameter_bytes"] = tensor_bytes(model.parameters())
    expected["buffer_bytes"] = tensor_bytes(model.buffers())
    expected["gradient_bytes"] = tensor_bytes(p.grad for p in model.parameters())
    expected["optimizer_state_bytes"] = tensor_bytes(
        v for state in optimizer.state.values() for v in state.values() if torch.is_tensor(v)
    )
    expected["modules"] = [name for name, _ in model.named_modules() if name]
    if which == "compiled":
        from torch._dynamo.utils import counters

        expected["graph_breaks"] = sum(counters["graph_break"].values())
    expected["max_memory_allocated"] = torch.cuda.max_memory_allocated()
    expected["max_memory_reserved"] = torch.cuda.max_memory_reserved()
    with open(expected_path, "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()
