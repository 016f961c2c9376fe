# SPDX-License-Identifier: Apache-2.0
"""`gpumemtrace.load(path)`: a trace's figures as Python objects, read from the CLI's JSON
(`report`, `peak`, `leaks`, `oom`, `timeline` with `--json`), so that they are the CLI's own."""
import functools
import os

from gpumemtrace._cli import AnalyzerError, run_json
from gpumemtrace._sites import site_name
from gpumemtrace._tables import table


class Trace:
    """One trace. The tables are lists of dicts, or pandas DataFrames where pandas is installed;
    each is asked of the analyzer the first time it is read."""

    def __init__(self, path):
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            raise AnalyzerError(f"{self.path} is a directory: load() reads one trace file "
                                f"(`gpumemtrace report {self.path}` reads a job's directory)")
        # Read at once: a path that is no trace fails here, with the analyzer's reason.
        self.report = run_json("report", "--json", self.path)

    @property
    def integrity(self):
        """How the trace ends, as `report --json`'s `end`: `exited` (complete), `exec`, `running`
        (its process still runs and writes it: the figures are of now), `cut` (the process did
        not exit normally), `stopped` (recording stopped), `truncated`, `corrupt` or `failed`.
        The figures of a trace that is not complete are of what was recorded."""
        return self.report["traces"][0]["end"]

    @property
    def peak_bytes(self):
        """{device: its peak, device-resident bytes}."""
        return {d["device"]: d["peak_bytes"] for d in self.report["devices"]}

    @property
    def live_at_exit_bytes(self):
        """{device: device-resident bytes live at the end of the trace}."""
        return {d["device"]: d["live_at_exit_bytes"] for d in self.report["devices"]}

    @functools.cached_property
    def peak(self):
        """What was live at each device's peak, one row per group by call stack (`peak --json`
        with every group): device, peak_bytes, bytes, count, site, frames... `site` is the
        analyzer's one-line name: `file.py:LINE` of the first user frame, with the caller that
        tells rows apart where several share that line (`train.py:12 > train.py:6`)."""
        answer = run_json("peak", "--json", "--top", "1000000", self.path)
        return table([{"device": d["device"], "peak_bytes": d["peak_bytes"],
                       "peak_time_ns": d["peak_time_ns"], **group, "site": site_name(group)}
                      for d in answer["devices"] for group in d["groups"]])

    @functools.cached_property
    def leaks(self):
        """Allocations never freed, one row per group (`leaks --json`): bytes, count, class,
        device, site, frames..."""
        answer = run_json("leaks", "--json", self.path)
        return table([{**group, "site": site_name(group)} for group in answer["leaks"]])

    @functools.cached_property
    def failures(self):
        """Every failed allocation listed by `oom --json`: time_ns, device, requested_bytes,
        live_bytes, error_name, site, frames, holders..."""
        answer = run_json("oom", "--json", self.path)
        return table([{**oom, "site": site_name(oom)} for oom in answer["ooms"]])

    @functools.cached_property
    def timeline(self):
        """Live bytes over time (`timeline --format json`): one row per device and bucket,
        time_ns (the bucket's start), resident_bytes and one `<kind>_bytes` column per kind
        (`device_bytes`: plain cuMemAlloc memory), each the most live during the bucket."""
        answer = run_json("timeline", "--format", "json", self.path)
        step = answer["resolution_ns"]
        rows = []
        for d in answer["devices"]:
            series = {"resident": d["resident"], **d["by_kind"]}
            for name in ("framework_allocated", "framework_reserved"):
                if name in d:
                    series[name] = d[name]
            for i in range(len(d["resident"])):
                rows.append({"device": d["device"], "time_ns": i * step,
                             **{f"{name}_bytes": values[i] for name, values in series.items()}})
        return table(rows)

    @property
    def views(self):
        """The views table of each device at its peak and at the end (`report --json`'s
        `devices[].views`): one row per device and moment (`at_peak`, `at_exit`)."""
        return table([{"device": d["device"], "moment": moment, **values}
                      for d in self.report["devices"]
                      for moment, values in d.get("views", {}).items()])

    @property
    def phases(self):
        """Per phase and device: calls, peak_bytes, growth_bytes (`report --json`'s `phases`)."""
        return table(list(self.report.get("phases", [])))

    def __repr__(self):
        peaks = ", ".join(f"device {d}: {b} B" for d, b in self.peak_bytes.items())
        return f"<gpumemtrace.Trace {self.path!r} peak {peaks or 'none'}>"


def load(path):
    """The trace at `path` (a .gmt file), its figures read through the bundled analyzer."""
    return Trace(path)
