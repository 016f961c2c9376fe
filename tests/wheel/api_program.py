# SPDX-License-Identifier: Apache-2.0
"""A program for the Python API's test (wheel_test.sh): through the simulated cudart, 1 MiB kept
to the end, 8 MiB freed (the peak is 9 MiB), and one request the device cannot satisfy, all from
one helper (its line is every row's first user frame: its callers tell the peak's rows apart)."""
import ctypes

cudart = ctypes.CDLL("libcudart.so.13")
MiB = 1 << 20


def allocate(size):
    pointer = ctypes.c_void_p()
    rc = cudart.cudaMalloc(ctypes.byref(pointer), ctypes.c_size_t(size))  # site: allocate
    return pointer if rc == 0 else None


kept = allocate(1 * MiB)  # site: kept
temporary = allocate(8 * MiB)  # site: temporary
cudart.cudaFree(temporary)
assert allocate(1 << 50) is None  # 1 PiB: out of memory
