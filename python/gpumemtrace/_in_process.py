# SPDX-License-Identifier: Apache-2.0
"""The preload's entry points, from inside the traced process (interpose/hooks/public_api.cpp),
found in the process's global scope as include/gpumemtrace.h finds them."""
import ctypes
import os

_process = ctypes.CDLL(None)


def _entry(name, restype, argtypes):
    try:
        function = getattr(_process, name)
    except AttributeError:
        return None
    function.restype = restype
    function.argtypes = argtypes
    return function


_trace_path = _entry("gpumemtrace_trace_path", ctypes.c_size_t,
                     [ctypes.c_char_p, ctypes.c_size_t])
_phase_push = _entry("gpumemtrace_phase_push", ctypes.c_int, [ctypes.c_char_p])
_phase_pop = _entry("gpumemtrace_phase_pop", ctypes.c_int, [])


def traced():
    """Whether this process runs under the preload (a version that can name its trace)."""
    return _trace_path is not None


def trace_path():
    """The trace this process is writing, or None before its first allocation made one."""
    if _trace_path is None:
        return None
    size = 4096
    while True:
        buffer = ctypes.create_string_buffer(size)
        length = _trace_path(buffer, size)
        if length == 0:
            return None
        if length < size:
            return os.fsdecode(buffer.value)
        size = length + 1


def phase_push(name):
    _phase_push(name.encode("utf-8", "replace"))


def phase_pop():
    _phase_pop()
