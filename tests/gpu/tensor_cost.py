# SPDX-License-Identifier: Apache-2.0
"""Times what one tensor costs from PyTorch's caching allocator, for scripts/gpu-bench.sh
(GMT_BENCH_MODEL=tensors).

Usage: python3 tensor_cost.py [--history python|all | --tracker SHIM STUB] OUT_JSON
A loop makes and drops a small CUDA tensor 12 Python calls deep, as a model's layer would: each
tensor is one block allocation and its free, served from the allocator's cache (no driver call,
no kernel), so the time is the CPU's alone and a tracer's cost per block event is the difference
between runs. "ms_per_step" is the time for 1000 tensors; "ns_per_tensor" the same per tensor;
"steps_run" how many such steps the process ran, warm-up included.
With --history, PyTorch's own torch.cuda.memory._record_memory_history(stacks=...) is on; with
--tracker, PyTorch hands its trace entries to a tracker that does nothing (bench_run.py).
"""
import statistics
import time

import torch

from bench_run import arguments, start_instrument, write_result

TENSORS = 1000
DEPTH = 12


def make_and_drop(device, depth):
    if depth > 0:
        return make_and_drop(device, depth - 1)
    for _ in range(TENSORS):
        t = torch.empty(256, device=device)
        del t
    return None


def main():
    instrument, out_path = arguments()
    device = torch.device("cuda:0")
    torch.empty(1, device=device)  # the context and the allocator's first segment
    start_instrument(instrument)
    for _ in range(20):
        make_and_drop(device, DEPTH)
    samples = []
    for _ in range(9):
        t0 = time.perf_counter()
        for _ in range(20):
            make_and_drop(device, DEPTH)
        samples.append((time.perf_counter() - t0) / 20 * 1e3)
    ms = statistics.median(samples)
    # Steps of 1000 tensors, warm-up included: what the trace's events are divided by.
    result = {"ms_per_step": ms, "samples": samples, "ns_per_tensor": ms * 1e6 / TENSORS,
              "model": "tensors", "steps_run": 20 + 9 * 20}
    write_result(out_path, result)


if __name__ == "__main__":
    main()
