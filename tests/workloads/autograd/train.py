# SPDX-License-Identifier: Apache-2.0
"""A training loop whose gradients are allocated on a native thread of the autograd engine's,
which has no Python frames (tests/workloads/autograd_engine.cpp); each step keeps one of them,
and the thread's own workspace, allocated through cudaMalloc.
Prints the line of the backward() call (`backward_line=N`) and how many gradients were kept.

With `fail`, the thread also asks for 1 PiB in each step, which fails.

Usage: python3 train.py PATH_TO_LIBGMT_AUTOGRAD_ENGINE STEPS [fail]
"""
import ctypes
import inspect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch.autograd  # noqa: E402  (the stand-in beside this file)

engine_library = ctypes.CDLL(sys.argv[1])
engine_library.gmt_engine_new.restype = ctypes.c_void_p
engine_library.gmt_engine_backward.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                               ctypes.c_int]
fail = 1 if len(sys.argv) > 3 and sys.argv[3] == "fail" else 0
engine = engine_library.gmt_engine_new()


def train_step():
    line = inspect.currentframe().f_lineno + 1
    torch.autograd.backward(engine, engine_library, 4, 1, fail)
    return line


steps = int(sys.argv[2])
for _ in range(steps):
    backward_line = train_step()
print(f"backward_line={backward_line}")
print(f"kept={steps}")
