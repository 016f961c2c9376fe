# SPDX-License-Identifier: Apache-2.0
"""What the timed workloads of scripts/gpu-bench.sh (mlp_step_time.py, tensor_cost.py) share:
their command line, `[--history python|all | --tracker SHIM STUB] OUT_JSON`; what the run turns
on inside the process once its model is on the GPU; and their result, printed and written to
OUT_JSON.

--history: PyTorch's own memory history, with those stacks. --tracker: gpumemtrace's PyTorch
shim (SHIM, the library a traced run built) attached to the caching allocator as in a traced
run, but handing each trace entry to STUB (tests/gpu/noop_block.cpp), whose block entry point
does nothing: what PyTorch pays to build and hand out its trace entries, with no recorder behind.
"""
import ctypes
import json
import sys

import torch


def arguments():
    """(what to turn on: None, ("history", STACKS) or ("tracker", SHIM, STUB); the result's path)."""
    args = sys.argv[1:]
    if args and args[0] == "--history":
        return ("history", args[1]), args[2]
    if args and args[0] == "--tracker":
        return ("tracker", args[1], args[2]), args[3]
    return None, args[0]


def start_instrument(instrument):
    if instrument is None:
        return
    if instrument[0] == "history":
        torch.cuda.memory._record_memory_history(max_entries=100000, stacks=instrument[1])
        return
    _, shim, stub = instrument
    # The stub first and global: the shim looks its entry point up by name in the process.
    ctypes.CDLL(stub, mode=ctypes.RTLD_GLOBAL)
    attached = ctypes.CDLL(shim).gpumemtrace_torch_attach()
    if attached != 1:
        raise SystemExit(f"the shim {shim} did not attach to the caching allocator ({attached})")


def write_result(path, result):
    print(json.dumps(result))
    with open(path, "w") as f:
        json.dump(result, f)
