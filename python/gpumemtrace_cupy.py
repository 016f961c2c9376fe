# SPDX-License-Identifier: Apache-2.0
"""CuPy's memory pool, block by block, for gpumemtrace.

The trace sees the segments CuPy's pool takes from CUDA; which line asked for a new segment is an
accident of the pool. With this hook each array's block is recorded too, with the stacks of the
thread that allocates it, so that `gpumemtrace leaks` and `peak` name the line that holds the
memory:

    import gpumemtrace_cupy
    gpumemtrace_cupy.install()          # on every thread that allocates CuPy arrays

CuPy's memory hooks are per thread (cupy.cuda.MemoryHook). Without gpumemtrace (no LD_PRELOAD),
install() does nothing. The module is python/ in the source tree: put that folder on PYTHONPATH,
or copy the file next to your script.
"""
import ctypes

# include/gpumemtrace.h
_CUPY = 2
_ALLOC, _FREE_REQUESTED, _FREE_COMPLETED, _SEGMENT_ALLOC = 0, 1, 2, 3

_block = None
_looked = False


def _entry_point():
    global _block, _looked
    if not _looked:
        _looked = True
        try:
            fn = ctypes.CDLL(None).gpumemtrace_framework_block
        except (AttributeError, OSError):
            fn = None
        if fn is not None:
            fn.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64,
                           ctypes.c_uint64, ctypes.c_uint64]
            fn.restype = None
        _block = fn
    return _block


def active():
    """Whether the process runs under gpumemtrace."""
    return _entry_point() is not None


def _make_hook():
    import cupy

    block = _entry_point()

    class BlockHook(cupy.cuda.MemoryHook):
        name = "gpumemtrace"

        # A block handed out by the pool.
        def malloc_postprocess(self, device_id, size, mem_size, mem_ptr, pmem_id):
            block(_CUPY, _ALLOC, device_id, mem_ptr, mem_size, 0)

        # Back in the pool: CuPy's pool reuses it at once (on the same stream), so the request
        # and its completion are one moment.
        def free_preprocess(self, device_id, mem_size, mem_ptr, pmem_id):
            block(_CUPY, _FREE_REQUESTED, device_id, mem_ptr, mem_size, 0)
            block(_CUPY, _FREE_COMPLETED, device_id, mem_ptr, mem_size, 0)

        # A new segment from CUDA (the driver-level record has it too).
        def alloc_postprocess(self, device_id, mem_size, mem_ptr):
            block(_CUPY, _SEGMENT_ALLOC, device_id, mem_ptr, mem_size, 0)

    return BlockHook()


_hooks = {}


def install():
    """Records CuPy's pool blocks allocated and freed on the calling thread. Idempotent."""
    if _entry_point() is None:
        return
    import threading

    tid = threading.get_ident()
    if tid in _hooks:
        return
    hook = _make_hook()
    hook.__enter__()
    _hooks[tid] = hook
