# SPDX-License-Identifier: Apache-2.0
"""Allocates known tensors with PyTorch's default caching allocator and writes what PyTorch
itself says, so that scripts/gpu-validate.sh can compare it with gpumemtrace's report.

Usage: python3 torch_allocations.py [--matmul] [EXPECTED_JSON]

Without --matmul every byte comes from PyTorch's caching allocator, so gpumemtrace's peak must
equal torch.cuda.max_memory_reserved(). With --matmul, cuBLAS also runs, and whatever it
allocates outside the caching allocator shows up as the difference.
"""
import json
import sys

import torch

MiB = 1024 * 1024


def main() -> None:
    args = sys.argv[1:]
    matmul = "--matmul" in args
    args = [a for a in args if a != "--matmul"]
    device = torch.device("cuda:0")
    x = torch.empty(256 * MiB, dtype=torch.uint8, device=device)
    y = torch.empty(512 * MiB, dtype=torch.uint8, device=device)
    del x  # cached by the allocator, not returned to the driver
    z = torch.empty(1024 * MiB, dtype=torch.uint8, device=device)
    b = None
    if matmul:
        a = torch.randn(2048, 2048, device=device)
        b = a @ a
    torch.cuda.synchronize()
    figures = {
        "max_memory_reserved": torch.cuda.max_memory_reserved(device),
        "memory_reserved": torch.cuda.memory_reserved(device),
        "max_memory_allocated": torch.cuda.max_memory_allocated(device),
        "memory_allocated": torch.cuda.memory_allocated(device),
    }
    del y, z, b
    print(json.dumps(figures))
    if args:
        with open(args[0], "w") as f:
            json.dump(figures, f)


if __name__ == "__main__":
    main()
