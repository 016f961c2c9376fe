# SPDX-License-Identifier: Apache-2.0
"""Times a small PyTorch MLP training loop, for scripts/gpu-bench.sh.

Usage: python3 mlp_step_time.py [--history python|all | --tracker SHIM STUB | --midway SHIM STUB]
       OUT_JSON
Prints and writes the median time per step (ms) over the timed steps; beside it the median CPU
time of all the process's threads per step ("cpu_ms_per_step"), which leaves out the time the
process waited for a core another tenant of the host had; and how many steps the process ran,
warm-up included ("steps_run"). With --history, PyTorch's
own torch.cuda.memory._record_memory_history(stacks=...) is on during the loop, for comparison;
with --tracker, PyTorch hands its trace entries to a tracker that does nothing (bench_run.py).
With --midway, the tracker is attached halfway (bench_run.py): "ms_per_step" is then the second
half's, "before_ms_per_step" the first half's, and "ratio" the second over the first.
GMT_BENCH_MODEL=small trains 16 layers of 64 features on 32 rows instead: a step of tiny kernels
whose time is the CPU's (launches, autograd, the allocator and whatever records it), where a
tracer's cost per allocation shows instead of hiding behind the GPU's work.
"""
import os
import statistics
import time

import torch

from bench_run import arguments, attach_tracker, start_instrument, write_result


def timed(step, steps, samples):
    """The median wall and CPU ms per step over SAMPLES runs of STEPS steps, and the samples."""
    times = []
    cpu_times = []
    for _ in range(samples):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / steps * 1e3)
        cpu_times.append((time.process_time() - c0) / steps * 1e3)
    return {"ms_per_step": statistics.median(times), "samples": times,
            "cpu_ms_per_step": statistics.median(cpu_times), "cpu_samples": cpu_times}


def main():
    instrument, out_path = arguments()
    torch.manual_seed(0)
    device = torch.device("cuda:0")
    small = os.environ.get("GMT_BENCH_MODEL") == "small"
    if small:
        features, rows = 64, 32
        model = torch.nn.Sequential(
            *[m for _ in range(16) for m in (torch.nn.Linear(features, features), torch.nn.ReLU())]
        ).to(device)
    else:
        features, rows = 1024, 512
        model = torch.nn.Sequential(
            torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
            torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(rows, features, device=device)
    y = torch.randn(rows, features, device=device)
    start_instrument(instrument)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    steps = 400 if small else 40
    if instrument is not None and instrument[0] == "midway":
        # Two halves of five samples each, of half an unpaired run's steps.
        before = timed(step, steps // 2, 5)
        attach_tracker(*instrument[1:])
        # Untimed, as the warm-up was: the first steps after attaching load what the tracker runs,
        # and a recorder meets its stacks for the first time.
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        result = timed(step, steps // 2, 5)
        result.update({"before_ms_per_step": before["ms_per_step"],
                       "before_samples": before["samples"],
                       "before_cpu_ms_per_step": before["cpu_ms_per_step"],
                       "ratio": result["ms_per_step"] / before["ms_per_step"],
                       "cpu_ratio": result["cpu_ms_per_step"] / before["cpu_ms_per_step"]})
        steps_run = 20 + 5 * steps + 5
    else:
        result = timed(step, steps, 5)
        steps_run = 20 + 5 * steps
    # "native" (the caching allocator, or none with PYTORCH_NO_CUDA_MEMORY_CACHING=1) or
    # "cudaMallocAsync": which one the run measured.
    result.update({"allocator_backend": torch.cuda.get_allocator_backend(),
                   "model": "small" if small else "large", "steps_run": steps_run})
    write_result(out_path, result)


if __name__ == "__main__":
    main()
