# SPDX-License-Identifier: Apache-2.0
"""CPU cycles and instructions spent over a stretch of a benchmark, from the kernel's hardware
counters (perf_event_open), for tests/gpu/mlp_step_time.py and tests/gpu/tensor_cost.py.

Wall time of a CPU-bound loop on a shared host moves by tens of percent from one process to the
next (the clock of the cores, other tenants); the cycles and instructions the loop takes do not,
so a tracer's cost shows in them where wall time cannot resolve it.

With GMT_BENCH_CPUS set (the benchmark pinned with taskset), every event on those CPUs is counted,
whichever thread of the process runs it (PyTorch's autograd threads, our sampler), in user and
kernel mode: this needs root, or perf_event_paranoid <= 0. Otherwise the calling thread is counted,
with the threads it starts afterwards once they exit. Counters() is None-valued where the
kernel refuses (no PMU in a virtual machine, no permission): the benchmark then reports time only.
"""
import ctypes
import os
import struct

_SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(os.uname().machine)
_PERF_TYPE_HARDWARE = 0
_CYCLES, _INSTRUCTIONS = 0, 1
_DISABLED, _INHERIT = 1 << 0, 1 << 1
_IOC_ENABLE, _IOC_DISABLE, _IOC_RESET = 0x2400, 0x2401, 0x2403


def _cpu_list(spec):
    cpus = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


class Counters:
    def __init__(self):
        self.error = None
        self._fds = {"cycles": [], "instructions": []}
        if _SYS_PERF_EVENT_OPEN is None:
            self.error = f"no perf_event_open number for {os.uname().machine}"
            return
        libc = ctypes.CDLL(None, use_errno=True)
        self._syscall, self._ioctl = libc.syscall, libc.ioctl
        spec = os.environ.get("GMT_BENCH_CPUS")
        targets = [(-1, cpu) for cpu in _cpu_list(spec)] if spec else [(0, -1)]
        try:
            for name, config in (("cycles", _CYCLES), ("instructions", _INSTRUCTIONS)):
                for pid, cpu in targets:
                    self._fds[name].append(self._open(config, pid, cpu, inherit=not spec))
        except OSError as e:
            self.close()
            self.error = str(e)

    def _open(self, config, pid, cpu, inherit):
        # struct perf_event_attr, its first version (64 bytes): type, size, config,
        # sample_period, sample_type, read_format, flags, wakeup_events, bp_type, bp_addr.
        flags = _DISABLED | (_INHERIT if inherit else 0)
        attr = struct.pack("IIQQQQQIIQ", _PERF_TYPE_HARDWARE, 64, config, 0, 0, 0, flags, 0, 0, 0)
        buf = ctypes.create_string_buffer(attr, len(attr))
        fd = self._syscall(_SYS_PERF_EVENT_OPEN, buf, pid, cpu, -1, 0)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"perf_event_open: {os.strerror(err)}")
        return fd

    def available(self):
        return self.error is None

    def start(self):
        for fds in self._fds.values():
            for fd in fds:
                self._ioctl(fd, _IOC_ENABLE, 0)

    def stop(self):
        """Stops counting and starts the next stretch at zero; returns {"cycles": n,
        "instructions": n} for the stretch, or None when the counters are unavailable."""
        if not self.available():
            return None
        totals = {}
        for name, fds in self._fds.items():
            for fd in fds:
                self._ioctl(fd, _IOC_DISABLE, 0)
            totals[name] = sum(struct.unpack("Q", os.read(fd, 8))[0] for fd in fds)
            for fd in fds:
                self._ioctl(fd, _IOC_RESET, 0)
        return totals

    def close(self):
        for fds in self._fds.values():
            for fd in fds:
                os.close(fd)
            fds.clear()
