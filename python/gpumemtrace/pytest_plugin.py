# SPDX-License-Identifier: Apache-2.0
"""The pytest plugin (entry point `pytest11`): `pytest --gpumemtrace` traces the session and
holds tests to their markers:

    @pytest.mark.limit_gpu_memory("2 GiB")   # the test's own peak, above what was live before it
    @pytest.mark.limit_gpu_leaks("1 MiB")    # what it allocated and left live

How the figures are made: gpumemtrace._measurement; the options: docs/python.md."""
import json
import os
import re
import tempfile

import pytest

from gpumemtrace import _in_process
from gpumemtrace._reexec import reexec_under_preload
from gpumemtrace._sizes import format_size, parse_size
from gpumemtrace._measurement import Measurement

_FIGURES_KEY = "gpumemtrace"  # in a report's user_properties: what xdist's workers send back
_MARKERS = ("limit_gpu_memory", "limit_gpu_leaks")
_figures_stash = pytest.StashKey()  # on a measured item: (figures, problems), for its report


def pytest_addoption(parser):
    group = parser.getgroup("gpumemtrace", "GPU memory (gpumemtrace)")
    group.addoption("--gpumemtrace", action="store_true",
                    help="trace the session's GPU memory and enforce the limit_gpu_* markers")
    group.addoption("--gpumemtrace-dir", metavar="DIR",
                    help="keep the traces and each test's figures (TEST.json) in DIR")
    parser.addini("gpumemtrace", type="bool", default=False,
                  help="as --gpumemtrace: trace the session and enforce the limit_gpu_* markers")


def _enabled(config):
    return bool(config.getoption("gpumemtrace") or config.getoption("gpumemtrace_dir")
                or config.getini("gpumemtrace"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "limit_gpu_memory(size): fail when the test's own GPU memory peak (above "
        "what was live when it started) is over size (\"2 GiB\"); with --gpumemtrace")
    config.addinivalue_line(
        "markers", "limit_gpu_leaks(size): fail when the GPU memory the test allocated and left "
        "live is over size (\"1 MiB\"); with --gpumemtrace")
    if _enabled(config):
        config.pluginmanager.register(GpuMemoryPlugin(config), "gpumemtrace-session")


def _figures_dir(config):
    folder = config.getoption("gpumemtrace_dir")
    return os.path.abspath(folder) if folder else None


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Starts pytest again under the preload when it is not there yet (before anything ran)."""
    if not _enabled(config):
        return None
    if _in_process.traced():
        return None
    folder = _figures_dir(config) or tempfile.mkdtemp(prefix="gpumemtrace-pytest-")
    os.makedirs(folder, exist_ok=True)
    reexec_under_preload(folder)
    return None  # not reached: the process is replaced


def _limits(item):
    limits = {}
    for name in _MARKERS:
        marker = item.get_closest_marker(name)
        if marker is None:
            continue
        if len(marker.args) != 1 or marker.kwargs:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name} takes one size, "
                                    f"as in @pytest.mark.{name}(\"1 MiB\")")
        try:
            limits[name] = parse_size(marker.args[0])
        except ValueError as error:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name}: {error}") from None
    return limits


def pytest_collection_modifyitems(session, config, items):
    """A marker that cannot be read stops the session with one line, before any test runs; limits
    that nothing will enforce are said once."""
    limited = [item for item in items if _limits(item)]
    if limited and not _enabled(config):
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"gpumemtrace: {len(limited)} test(s) have limit_gpu_memory or limit_gpu_leaks "
            "markers, not enforced without --gpumemtrace (or `gpumemtrace = true` in the ini "
            "file)"), stacklevel=2)


def _over_limits(item, figures, limits):
    """Why the test fails its markers: per limit passed, its message (naming the figures and the
    site) and its line in the session's summary."""
    name = item.name
    problems = []
    limit = limits.get("limit_gpu_memory")
    if limit is not None and figures["peak_bytes"] > limit:
        site = figures["peak_site"] or "not known (no allocation with a stack grew)"
        peak = figures["peak_bytes"]
        problems.append({
            "message": f"{name} used {format_size(peak)} ({peak} bytes) of GPU memory above "
                       f"what was live when it started, over its limit "
                       f"limit_gpu_memory({format_size(limit)}); top site: {site}",
            "summary": f"peak {format_size(peak)} > {format_size(limit)}, at {site}"})
    limit = limits.get("limit_gpu_leaks")
    if limit is not None and figures["leaked_bytes"] > limit:
        top = figures["leaks"][0]
        left = figures["leaked_bytes"]
        problems.append({
            "message": f"{name} left {format_size(left)} ({left} bytes) of GPU memory in "
                       f"{figures['leaked_count']} allocation(s) live after it, over its limit "
                       f"limit_gpu_leaks({format_size(limit)}); top site: {top['site']} "
                       f"({format_size(top['bytes'])} in {top['count']})",
            "summary": f"left live {format_size(left)} > {format_size(limit)}, "
                       f"at {top['site']}"})
    return problems


def _file_name(nodeid):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:200] + ".json"


class GpuMemoryPlugin:
    """The session's state: each measured test's figures and failures."""

    def __init__(self, config):
        self.config = config
        self.folder = _figures_dir(config)
        self.measured = []  # (nodeid, figures, problems), from this process or xdist's workers
        self.worker = hasattr(config, "workerinput")

    def _measures(self, item):
        return bool(self.folder) or any(item.get_closest_marker(m) for m in _MARKERS)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        if not self._measures(item):
            yield
            return
        limits = _limits(item)
        function = getattr(item, "originalname", None) or item.name
        measure = Measurement(f"pytest {item.nodeid}", str(item.path), function)
        measure.start()
        try:
            yield
        finally:
            figures = measure.finish()
            item.stash[_figures_stash] = (figures, _over_limits(item, figures, limits))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if call.when != "call" or _figures_stash not in item.stash:
            return
        figures, problems = item.stash[_figures_stash]
        report.user_properties.append((_FIGURES_KEY, {"figures": figures,
                                                      "problems": problems}))
        if self.folder:
            with open(os.path.join(self.folder, _file_name(item.nodeid)), "w") as out:
                json.dump({"test": item.nodeid, **figures, "problems": problems}, out, indent=1)
        if problems and report.passed:
            report.outcome = "failed"
            report.longrepr = "\n".join(f"gpumemtrace: {p['message']}" for p in problems)

    def pytest_runtest_logreport(self, report):
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == _FIGURES_KEY:
                self.measured.append((report.nodeid, value["figures"], value["problems"]))

    def pytest_terminal_summary(self, terminalreporter):
        if self.worker:
            return
        failed = sorted(((nodeid, problems) for nodeid, _, problems in self.measured if problems),
                        key=lambda failure: failure[0])
        terminalreporter.section("gpumemtrace")
        terminalreporter.write_line(
            f"{len(self.measured)} test(s) measured, {len(failed)} over their GPU memory limits")
        for nodeid, problems in failed:
            for problem in problems:
                terminalreporter.write_line(f"{nodeid}: {problem['summary']}")
        traces = sorted({f["trace"] for _, f, _ in self.measured if f["trace"]})
        if traces:
            where = self.folder or os.path.dirname(traces[0])
            terminalreporter.write_line(f"traces: {where} ({len(traces)} process(es))")

