# SPDX-License-Identifier: Apache-2.0
"""PyTorch tests for the wheel's pytest plugin on a GPU (scripts/gpu-validate.sh, section 15):
one keeps a 16 MiB tensor past its limit, one frees what it made (its blocks go back to the
cache, which is no leak)."""
import pytest
import torch

kept = []


@pytest.mark.limit_gpu_leaks("1 MiB")
def test_frees_its_tensors():
    x = torch.ones(4 << 20, device="cuda")
    assert float(x.sum()) == 4 << 20


@pytest.mark.limit_gpu_leaks("1 MiB")
def test_keeps_a_tensor():
    kept.append(torch.zeros(4 << 20, device="cuda"))  # site: leak
