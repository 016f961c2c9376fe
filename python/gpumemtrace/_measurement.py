# SPDX-License-Identifier: Apache-2.0
"""The GPU memory of one stretch of a traced process (a test, a notebook cell), from the trace
the process is writing.

The stretch runs inside a phase of its own (the preload's gpumemtrace_phase_push/pop), and the
analyzer is asked about the trace as it stands before and after it: the records are in the file
the moment they are made, so the figures are exact, and they are the analyzer's.

- its own peak: `peak --phase`'s peak (the most live while it ran) minus what was live when it
  started, on the device where that is largest, and the group that grew most up to that moment;
- what it left: per call stack, the bytes live after it minus those live before it, of the
  groups `check --max-leak` counts (not a caching allocator's free cache, nor what cuBLAS, cuDNN,
  NCCL or JAX keep on purpose).
"""
import itertools

from gpumemtrace._cli import run_json
from gpumemtrace._in_process import phase_pop, phase_push, trace_path
from gpumemtrace._sites import site_in, site_name

# Not leaks (leak classes in docs/python.md).
_KEPT_ON_PURPOSE = {"cached", "library_cache", "teardown"}
_serial = itertools.count(1)


def _site_key(group):
    frames = tuple((f.get("function"), f.get("file"), f.get("line"))
                   for f in group.get("frames") or [])
    return group.get("device"), group.get("level"), frames


def _live_by_site(path):
    """{site key: (bytes, count, group)} of what is live in the trace at `path` now."""
    if path is None:
        return {}
    answer = run_json("leaks", "--json", path)
    return {_site_key(g): (g["bytes"], g["count"], g) for g in answer["leaks"]
            if g.get("class") not in _KEPT_ON_PURPOSE and g.get("level") != "cache"}


class Measurement:
    """Measures one stretch: start() before it, finish() after it. Its sites are named from
    `function` in `file` (a test's) where their stacks pass through it."""

    def __init__(self, label, file=None, function=None):
        self.phase = f"{label} #{next(_serial)}"
        self.file = file
        self.function = function
        self.before = {}

    def start(self):
        self.before = _live_by_site(trace_path())
        phase_push(self.phase)

    def finish(self):
        """The figures: a dict (docs/python.md, "The plugin's figures")."""
        phase_pop()
        path = trace_path()
        figures = {"phase": self.phase, "trace": path, "peak_bytes": 0, "peak_device": None,
                   "peak_site": "", "leaked_bytes": 0, "leaked_count": 0, "leaks": []}
        if path is None:
            return figures  # nothing was ever allocated
        self._own_peak(path, figures)
        self._left_live(figures)
        return figures

    def _own_peak(self, path, figures):
        """The most the stretch held above what was live as it started (`peak --phase`), on the
        device where that is largest, and its site: the group that grew most from the start to
        that moment."""
        answer = run_json("peak", "--json", "--top", "1000000", "--phase", self.phase, path)
        best_device = None
        for d in answer["devices"]:
            own = d["peak_bytes"] - d["live_at_phase_start_bytes"]
            if own > figures["peak_bytes"]:
                figures["peak_bytes"] = own
                figures["peak_device"] = d["device"]
                best_device = d
        if best_device is None:
            return
        best, best_growth = None, 0
        for group in best_device["groups"]:
            if group.get("other") or group.get("level") == "cache":
                continue
            growth = group["bytes"] - self.before.get(_site_key(group), (0, 0, None))[0]
            if growth > best_growth:
                best, best_growth = group, growth
        figures["peak_site"] = self._name(best) if best else ""

    def _left_live(self, figures):
        after = _live_by_site(figures["trace"])
        rows = []
        for key, (size, count, group) in after.items():
            old_size, old_count, _ = self.before.get(key, (0, 0, None))
            if size > old_size:
                rows.append({"site": self._name(group), "device": group["device"],
                             "bytes": size - old_size, "count": max(count - old_count, 0),
                             "class": group["class"]})
        rows.sort(key=lambda row: -row["bytes"])
        figures["leaks"] = rows
        figures["leaked_bytes"] = sum(row["bytes"] for row in rows)
        figures["leaked_count"] = sum(row["count"] for row in rows)

    def _name(self, group):
        """The group's site: the analyzer's label, or seen from the test's function."""
        if self.file is None:
            return site_name(group)
        return site_in(group, self.file, self.function)
