# SPDX-License-Identifier: Apache-2.0
"""Allocates through the simulated cudart from nested Python functions and prints the line of
each call (`<site>_line=N`) for the test to compare with the report. Through ctypes.PyDLL the
GIL is held during the call; through ctypes.CDLL it is released, as PyTorch releases it around
its operators: the Python stack must be recorded either way.

With `fork`, the process then forks, and the child (whose own trace numbers Python functions
anew) allocates one more layer at the same line and exits; `child=PID` is printed.

Usage: python3 python_allocations.py PATH_TO_LIBCUDART [PyDLL|CDLL] [fork]
"""
import ctypes
import inspect
import os
import sys

loader = sys.argv[2] if len(sys.argv) > 2 else "PyDLL"
cudart = {"PyDLL": ctypes.PyDLL, "CDLL": ctypes.CDLL}[loader](sys.argv[1])
MiB = 1 << 20
printed = set()


def allocate(n):
    p = ctypes.c_void_p()
    line = inspect.currentframe().f_lineno + 1
    rc = cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))
    assert rc == 0, rc
    report("allocate_line", line)
    return p


def report(key, line):
    if key not in printed:
        printed.add(key)
        print(f"{key}={line}")


class Model:
    def build_layer(self):
        report("build_layer_line", inspect.currentframe().f_lineno + 1)
        return allocate(64 * MiB)


def main():
    model = Model()
    report("main_line", inspect.currentframe().f_lineno + 1)
    layers = [model.build_layer() for _ in range(3)]
    return layers


kept = main()
if len(sys.argv) > 3 and sys.argv[3] == "fork":
    sys.stdout.flush()
    child = os.fork()
    if child == 0:
        kept.append(Model().build_layer())
        os._exit(0)
    print(f"child={child}")
    os.waitpid(child, 0)
