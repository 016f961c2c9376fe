# SPDX-License-Identifier: Apache-2.0
"""A PyTorch training loop that leaks: a list keeps a 16 MiB tensor every 3 steps, at the line
marked PLANTED LEAK. For scripts/gpu-validate.sh, run with PYTORCH_NO_CUDA_MEMORY_CACHING=1 so
that every tensor is a driver allocation with its own Python stack (with the caching allocator
on, a trace sees the allocator's segments, which any line may have asked for). Prints the
leak's line as leak_line=N.

Usage: python3 planted_leak.py
"""
import inspect

import torch

MiB = 1024 * 1024


def main():
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)
    ).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []
    for step in range(30):
        x = torch.randn(256, 1024, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 3 == 0:
            line = inspect.currentframe().f_lineno + 1
            kept.append(torch.empty(16 * MiB, dtype=torch.uint8, device="cuda"))  # PLANTED LEAK
    torch.cuda.synchronize()
    print(f"leak_line={line}")
    print(f"kept={len(kept)}")


if __name__ == "__main__":
    main()
