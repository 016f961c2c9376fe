# SPDX-License-Identifier: Apache-2.0
"""What the timed workloads of scripts/gpu-bench.sh (mlp_step_time.py, tensor_cost.py) share:
their command line, `[--history python|all | --tracker SHIM STUB | --midway SHIM STUB] OUT_JSON`;
what the run turns on inside the process once its model is on the GPU (or, with --midway, halfway
through its timed steps); and their result, printed and written to OUT_JSON.

--history: PyTorch's own memory history, with those stacks. --tracker: gpumemtrace's PyTorch
shim (SHIM, the library a traced run built) attached to the caching allocator as in a traced
run, but handing each trace entry to STUB (tests/gpu/noop_block.cpp), whose block entry point
does nothing: what PyTorch pays to build and hand out its trace entries, with no recorder behind.

--midway (mlp_step_time.py only): the same shim attached only after a first half of the timed
steps, so that one process times its steps before and after, and the host's differences between
processes (tens of percent for a CPU-bound step) cancel out of the ratio. STUB "-" loads no stub:
the shim hands its entries to the entry point already in the process, gpumemtrace's recorder in a
traced run (scripts/gpu-bench-paired.sh). SHIM "-" attaches nothing: the control, whose ratio is
what the host's drift within one process alone makes of two halves.
"""
import ctypes
import json
import sys

import torch


def arguments():
    """(what to turn on: None, ("history", STACKS), ("tracker", SHIM, STUB) or ("midway", SHIM,
    STUB); the result's path)."""
    args = sys.argv[1:]
    if args and args[0] == "--midway":
        return ("midway", args[1], args[2]), args[3]
    if args and args[0] == "--history":
        return ("history", args[1]), args[2]
    if args and args[0] == "--tracker":
        return ("tracker", args[1], args[2]), args[3]
    return None, args[0]


def start_instrument(instrument):
    if instrument is None or instrument[0] == "midway":
        return
    if instrument[0] == "history":
        torch.cuda.memory._record_memory_history(max_entries=100000, stacks=instrument[1])
        return
    attach_tracker(*instrument[1:])


def attach_tracker(shim, stub):
    """Attaches SHIM to the caching allocator, handing its entries to STUB's entry point, or to the
    process's own with STUB "-"; with SHIM "-", attaches nothing."""
    if shim == "-":
        return
    if stub != "-":
        # The stub first and global: the shim looks its entry point up by name in the process.
        ctypes.CDLL(stub, mode=ctypes.RTLD_GLOBAL)
    attached = ctypes.CDLL(shim).gpumemtrace_torch_attach()
    if attached != 1:
        raise SystemExit(f"the shim {shim} did not attach to the caching allocator ({attached})")


def write_result(path, result):
    print(json.dumps(result))
    with open(path, "w") as f:
        json.dump(result, f)
