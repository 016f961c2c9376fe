# SPDX-License-Identifier: Apache-2.0
"""The simulated cudart as the workloads' Python scripts call it: through ctypes.PyDLL (the GIL
held during the call) or ctypes.CDLL (released, as PyTorch releases it around its operators)."""
import ctypes


def allocator(path, loader):
    """allocate(n): cudaMalloc of n bytes from the library at `path`, loaded by `loader`
    ("PyDLL" or "CDLL"); every pointer is kept, never freed."""
    cudart = {"PyDLL": ctypes.PyDLL, "CDLL": ctypes.CDLL}[loader](path)
    kept = []

    def allocate(n):
        p = ctypes.c_void_p()
        rc = cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))
        assert rc == 0, rc
        kept.append(p)

    return allocate
