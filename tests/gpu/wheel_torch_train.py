# SPDX-License-Identifier: Apache-2.0
"""A few PyTorch training steps for the wheel's GPU check (scripts/gpu-validate.sh, section 15):
a linear model, 64 MiB of activations per step, one 32 MiB tensor kept to the end. Writes
torch.cuda.max_memory_allocated() to the JSON file named by argv[1].

It ends with os._exit(0), as a job killed at the end of its run would: the interpreter's
teardown frees module globals (their blocks' frees are recorded, so a tensor kept in a global
is no leak of a script that exits normally)."""
import json
import os
import sys

import torch

model = torch.nn.Linear(4096, 4096).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(3):
    x = torch.randn(4096, 4096, device="cuda")  # 64 MiB
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
kept = torch.empty(8 << 20, dtype=torch.float32, device="cuda")  # site: kept (32 MiB, never freed)
torch.cuda.synchronize()
with open(sys.argv[1], "w") as out:
    json.dump({"max_memory_allocated": torch.cuda.max_memory_allocated()}, out)
sys.stdout.flush()
os._exit(0)
