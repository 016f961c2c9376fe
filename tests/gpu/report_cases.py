# SPDX-License-Identifier: Apache-2.0
"""Three PyTorch programs whose reports once misled (issue #41), for gpu-validate.sh section 17.
Unchanged programs as far as gpumemtrace goes; FIGURES.json gets torch's own figures.

    python3 report_cases.py seed FIGURES.json       # x of 1 GiB, y = x * 2, del x
    python3 report_cases.py fragmented FIGURES.json # 6 MiB tensors fill the device, two of three
                                                    # freed, then 1 GiB asked for: one OOM
    python3 report_cases.py evaluation FIGURES.json # an evaluation loop without no_grad keeps
                                                    # every step's graph: the leak

Lines marked `# site:` are the ones the checks look for.
"""
import json
import os
import sys

import torch

MiB = 1 << 20


def seed():
    x = torch.randn(256 * MiB, device="cuda")  # 1 GiB of float32
    y = x * 2
    del x
    torch.cuda.synchronize()
    return {"max_memory_allocated": torch.cuda.max_memory_allocated(),
            "max_memory_reserved": torch.cuda.max_memory_reserved(),
            "kept": y.numel() * y.element_size()}


def fragmented():
    # 6 MiB blocks come three to a 20 MiB segment; freeing two of three leaves the cache with
    # most of the device free, in pieces too small for 1 GiB.
    blocks = []
    try:
        while True:
            blocks.append(torch.empty(6 * MiB, dtype=torch.uint8, device="cuda"))
    except torch.cuda.OutOfMemoryError:
        pass
    filled = len(blocks)
    kept = blocks[2::3]
    del blocks
    message = ""
    try:
        torch.empty(1024 * MiB, dtype=torch.uint8, device="cuda")  # site: big
    except torch.cuda.OutOfMemoryError as error:
        message = str(error).split("\n")[0]
    figures = {"filled": filled, "kept": len(kept), "oom": message,
               "memory_reserved": torch.cuda.memory_reserved(),
               "memory_allocated": torch.cuda.memory_allocated()}
    del kept
    torch.cuda.empty_cache()
    return figures


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(1024, 4096)
        self.b = torch.nn.Linear(4096, 1024)

    def forward(self, x):
        h = torch.relu(self.a(x))  # site: hidden
        return self.b(h)  # site: output


kept = []  # to the end, as a script's globals


def evaluation():
    model = Net().cuda()
    x = torch.randn(1024, 1024, device="cuda")
    total = 0
    for _ in range(40):
        total += model(x).square().mean()  # site: loop (no no_grad: every graph is kept)
    torch.cuda.synchronize()
    kept.append(total)  # the graphs with it
    return {"steps": 40, "total": float(total), "memory_allocated": torch.cuda.memory_allocated()}


def main():
    which, path = sys.argv[1], sys.argv[2]
    figures = {"seed": seed, "fragmented": fragmented, "evaluation": evaluation}[which]()
    with open(path, "w") as out:
        json.dump(figures, out)
    print(json.dumps(figures), flush=True)
    if which == "evaluation":
        # As a job killed after its loop: the interpreter's teardown would free the kept graphs
        # (their blocks' frees recorded), and the leak is what was live when the work ended.
        os._exit(0)


if __name__ == "__main__":
    main()
