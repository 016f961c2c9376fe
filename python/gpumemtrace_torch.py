# SPDX-License-Identifier: Apache-2.0
"""PyTorch's own view of GPU memory, for gpumemtrace's views table.

gpumemtrace reconciles what PyTorch says (torch.cuda.memory_allocated / memory_reserved) with what
was really allocated, NVML and the driver. The preload library cannot ask PyTorch itself: that
needs the GIL from a thread of ours (a deadlock waiting to happen at fork, at interpreter shutdown,
or against a thread that holds the GIL while it waits on the caching allocator's lock), and
PyTorch's C++ allocator statistics have no stable ABI. So the program reports, opt-in:

    import gpumemtrace_torch
    gpumemtrace_torch.report()          # now, e.g. after backward: where the peak usually is
    gpumemtrace_torch.start(0.05)       # or every 50 ms from a daemon thread

Without gpumemtrace (no LD_PRELOAD), every call does nothing. The module is python/ in the
source tree: put that folder on PYTHONPATH, or copy the file next to your script.
"""
import ctypes
import threading

_view = None
_looked = False


def _entry_point():
    global _view, _looked
    if not _looked:
        _looked = True
        try:
            fn = ctypes.CDLL(None).gpumemtrace_framework_view
        except (AttributeError, OSError):
            fn = None
        if fn is not None:
            fn.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
            fn.restype = None
        _view = fn
    return _view


def active():
    """Whether the process runs under gpumemtrace."""
    return _entry_point() is not None


def report(device=None):
    """Records torch.cuda.memory_allocated and memory_reserved of `device` (default: every
    device PyTorch has initialized) in the trace."""
    fn = _entry_point()
    if fn is None:
        return
    import torch

    if not torch.cuda.is_initialized():
        return
    devices = [device] if device is not None else range(torch.cuda.device_count())
    for d in devices:
        index = torch.device("cuda", d).index if not isinstance(d, int) else d
        reserved = torch.cuda.memory_reserved(index)
        if reserved == 0 and device is None:
            continue  # a device this process never used
        fn(index, torch.cuda.memory_allocated(index), reserved)


_stop = threading.Event()


def start(interval=0.05):
    """Reports every `interval` seconds from a daemon thread until stop() or exit."""
    if _entry_point() is None:
        return

    def loop():
        while not _stop.wait(interval):
            report()

    _stop.clear()
    threading.Thread(target=loop, name="gpumemtrace-torch", daemon=True).start()


def stop():
    _stop.set()
