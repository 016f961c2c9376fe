# SPDX-License-Identifier: Apache-2.0
"""Added time per event with Python frames: a Python program allocating through the simulated
cudart from 10 nested Python calls, through ctypes.PyDLL (the GIL held) or ctypes.CDLL (the GIL
released, as PyTorch does); on Python 3.11 and 3.12 the recorder reads the frames in place either
way. scripts/bench.sh runs it untraced and traced with each stack mode, side by side.

With `long`, the allocating call is 400 lines into its function, as in PyTorch's
Module._call_impl: CPython finds a frame's line by reading its code's line table from the start.

Usage: python3 python_overhead.py LIBCUDART PAIRS [PyDLL|CDLL] [long]
Prints one JSON object: {"ns_per_pair": median over 5 rounds}.
"""
import ctypes
import inspect
import json
import statistics
import sys
import time

loader = {"PyDLL": ctypes.PyDLL, "CDLL": ctypes.CDLL}[sys.argv[3] if len(sys.argv) > 3 else "PyDLL"]
cudart = loader(sys.argv[1])
pairs = int(sys.argv[2])
malloc, free = cudart.cudaMalloc, cudart.cudaFree
malloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
free.argtypes = [ctypes.c_void_p]


def loop(n):
    p = ctypes.c_void_p()
    ref = ctypes.byref(p)
    for _ in range(n):
        malloc(ref, 1 << 20)
        free(p)


if len(sys.argv) > 4 and sys.argv[4] == "long":
    body = "".join(f"    v{i} = {i}\n" for i in range(400))
    exec("def loop(n):\n" + body + "\n".join(inspect.getsource(loop).splitlines()[1:]), globals())


def nested(depth, n):
    # Ten Python frames above the allocating call, as in a real program.
    return loop(n) if depth == 0 else nested(depth - 1, n)


nested(10, 1000)  # warm-up: the first stacks and code objects are recorded here
rounds = []
for _ in range(5):
    start = time.perf_counter_ns()
    nested(10, pairs)
    rounds.append((time.perf_counter_ns() - start) / pairs)
print(json.dumps({"ns_per_pair": statistics.median(rounds)}))
