# SPDX-License-Identifier: Apache-2.0
"""Data-parallel training under torchrun, for the multi-process checks of the GPU scripts.

Usage: torchrun --nproc_per_node=N ranks.py BACKEND DEVICE_MODE
BACKEND is nccl or gloo. DEVICE_MODE "own" puts rank r on cuda:r (one GPU per rank); "shared"
puts every rank on cuda:0 (one GPU for all). Each rank allocates 256 MiB * (rank + 1) of its own
besides the model, so that the ranks' peaks differ by a known amount.
"""
import os
import sys

import torch
import torch.distributed as dist

MiB = 1024 * 1024


def main():
    backend, mode = sys.argv[1], sys.argv[2]
    rank = int(os.environ["RANK"])
    local = int(os.environ["LOCAL_RANK"])
    dev = torch.device("cuda", local if mode == "own" else 0)
    torch.cuda.set_device(dev)
    dist.init_process_group(backend)
    model = torch.nn.Linear(2048, 2048).to(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    own = torch.empty(256 * MiB * (rank + 1), dtype=torch.uint8, device=dev)
    for _ in range(5):
        loss = ddp(torch.randn(1024, 2048, device=dev)).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    torch.cuda.synchronize()
    dist.barrier()
    print(f"rank {rank} on {dev}: reserved {torch.cuda.memory_reserved(dev)} own {own.numel()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
