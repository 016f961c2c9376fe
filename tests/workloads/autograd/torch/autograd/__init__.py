# SPDX-License-Identifier: Apache-2.0
"""A stand-in for torch.autograd: backward() runs the engine of libgmt_autograd_engine.so, whose
device thread allocates the gradients, as PyTorch's does."""


def backward(engine, library, gradients, keep, fail=0):
    _engine_run_backward(engine, library, gradients, keep, fail)


def _engine_run_backward(engine, library, gradients, keep, fail):
    library.gmt_engine_backward(engine, gradients, keep, fail)
