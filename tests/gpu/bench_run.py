# SPDX-License-Identifier: Apache-2.0
"""What the timed workloads of scripts/gpu-bench.sh (mlp_step_time.py, tensor_cost.py) share:
their command line, `[--history python|all] OUT_JSON`; PyTorch's own memory history when asked
for; and their result, printed and written to OUT_JSON.
"""
import json
import sys

import torch


def arguments():
    """(the stacks of PyTorch's history, None for none; the result's path)."""
    args = sys.argv[1:]
    if args and args[0] == "--history":
        return args[1], args[2]
    return None, args[0]


def start_history(history):
    if history is not None:
        torch.cuda.memory._record_memory_history(max_entries=100000, stacks=history)


def write_result(path, result):
    print(json.dumps(result))
    with open(path, "w") as f:
        json.dump(result, f)
