# SPDX-License-Identifier: Apache-2.0
"""The pytest plugin's cases (wheel_test.sh runs them under `pytest --gpumemtrace`), allocating
through the simulated cudart: one test leaks past its limit, one peaks past its limit, three stay
within theirs (two exactly at the limit, which is allowed; the first reaches the session's highest
peak, so the one over its limit is named from its own phase's peak). Lines marked `# site:` are
the ones the failures must name."""
import ctypes

import pytest

cudart = ctypes.CDLL("libcudart.so.13")
MiB = 1 << 20
kept = []


def allocate(size):
    pointer = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(pointer), ctypes.c_size_t(size)) == 0  # site: allocate
    return pointer


def free(pointer):
    assert cudart.cudaFree(pointer) == 0


@pytest.mark.limit_gpu_memory("64 MiB")
def test_highest_peak_within_limit():
    free(allocate(32 * MiB))


@pytest.mark.limit_gpu_leaks("1 MiB")
def test_leak_within_limit():
    kept.append(allocate(1 * MiB))
    free(allocate(4 * MiB))


@pytest.mark.limit_gpu_leaks("1 MiB")
def test_leak_over_limit():
    kept.append(allocate(3 * MiB))  # site: leak


@pytest.mark.limit_gpu_memory("8 MiB")
def test_peak_within_limit():
    free(allocate(8 * MiB))


@pytest.mark.limit_gpu_memory("8 MiB")
def test_peak_over_limit():
    big = allocate(8 * MiB)  # site: peak
    small = allocate(2 * MiB)
    free(big)
    free(small)
