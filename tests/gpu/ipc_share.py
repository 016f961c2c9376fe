# SPDX-License-Identifier: Apache-2.0
"""A CUDA tensor shared with another process through torch.multiprocessing (cudaIpcGetMemHandle
in the parent, cudaIpcOpenMemHandle in the child), for scripts/gpu-validate-multi.sh.

Usage: python3 ipc_share.py
The parent allocates 512 MiB on cuda:0 and sends it; the child, which allocates 64 MiB of its own
on cuda:1, opens it, checks a value and answers. The importing child must record the import and
not count it as its own usage.
"""
import torch
import torch.multiprocessing as mp

MiB = 1 << 20


def child(queue, answers):
    own = torch.ones(64 * MiB, dtype=torch.uint8, device="cuda:1")
    shared = queue.get()
    answers.put((int(shared[0].item()), int(own.sum().item() > 0)))
    del shared


def main():
    mp.set_start_method("spawn")
    queue, answers = mp.Queue(), mp.Queue()
    p = mp.Process(target=child, args=(queue, answers))
    p.start()
    t = torch.full((512 * MiB,), 7, dtype=torch.uint8, device="cuda:0")
    queue.put(t)
    print("child saw", answers.get(timeout=120))
    p.join(timeout=120)
    print("child exit code", p.exitcode)


if __name__ == "__main__":
    main()
