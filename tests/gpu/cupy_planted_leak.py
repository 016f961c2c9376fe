# SPDX-License-Identifier: Apache-2.0
"""A CuPy loop with a planted leak in a helper (keep(), the line marked PLANTED LEAK), with
CuPy's pool blocks recorded by python/gpumemtrace_cupy.py. Prints leak_line=N, and the pool's
used bytes before exiting with os._exit(0), so that the trace ends in the state it describes.

Usage: python3 cupy_planted_leak.py
"""
import inspect
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import cupy  # noqa: E402
import gpumemtrace_cupy  # noqa: E402

kept = []


def keep(a):
    kept.append(a.copy())  # PLANTED LEAK
    return inspect.currentframe().f_lineno - 1


def main():
    gpumemtrace_cupy.install()
    line = None
    w = cupy.random.rand(1024, 1024, dtype=cupy.float32)
    for step in range(40):
        x = cupy.random.rand(2048, 1024, dtype=cupy.float32)
        y = x @ w
        if step % 5 == 0:
            line = keep(y)
        del x, y
    cupy.cuda.Device().synchronize()
    pool = cupy.get_default_memory_pool()
    print(f"leak_line={line} kept={len(kept)} used_bytes={pool.used_bytes()} "
          f"total_bytes={pool.total_bytes()}", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
