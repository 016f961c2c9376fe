# SPDX-License-Identifier: Apache-2.0
"""`%load_ext gpumemtrace`: in a kernel under the preload (`python -m gpumemtrace
install-kernel`),

    %%gpumemtrace          the cell's own peak and what it left live, by site
    %gpumemtrace top       `gpumemtrace top --once` on the kernel's trace
    %gpumemtrace report    `gpumemtrace report` on it
"""
import os
import subprocess

from gpumemtrace import _in_process
from gpumemtrace._measurement import Measurement
from gpumemtrace._native import cli_path
from gpumemtrace._sizes import format_size

_NOT_TRACED = ("gpumemtrace: this kernel is not traced; start it from the kernel spec that "
               "`python -m gpumemtrace install-kernel` writes")
_CELL_NOT_TRACED = ("gpumemtrace: this kernel is not traced, so the cell ran without figures; "
                    "start the kernel from the kernel spec that `python -m gpumemtrace "
                    "install-kernel` writes")


def cell_summary(figures, top=5):
    """The text %%gpumemtrace prints after its cell."""
    lines = [f"gpumemtrace: peak {format_size(figures['peak_bytes'])} above what was live "
             f"before the cell; left live {format_size(figures['leaked_bytes'])} in "
             f"{figures['leaked_count']} allocation(s)"]
    for row in figures["leaks"][:top]:
        lines.append(f"  {format_size(row['bytes']):>10}  {row['count']:>4}  {row['site']}")
    if figures["peak_site"]:
        lines.append(f"  peak's top site: {figures['peak_site']}")
    return "\n".join(lines)


def _cli_text(*args):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    done = subprocess.run([cli_path(), *args], env=env, capture_output=True, text=True,
                          check=False)
    return (done.stdout + done.stderr).rstrip()


def gpumemtrace_magic(line, cell=None):
    if not _in_process.traced():
        if cell is None:
            print(_NOT_TRACED)
            return
        # The cell is the user's code: it runs whatever the profiler can say of it.
        from IPython import get_ipython
        try:
            get_ipython().run_cell(cell)
        finally:
            print(_CELL_NOT_TRACED)
        return
    if cell is None:
        path = _in_process.trace_path()
        if path is None:
            print("gpumemtrace: nothing allocated yet, so no trace")
        elif line.strip() in ("top", ""):
            print(_cli_text("top", "--once", path))
        elif line.strip() == "report":
            print(_cli_text("report", path))
        else:
            print(f"gpumemtrace: %gpumemtrace takes top or report, not {line.strip()!r}")
        return
    from IPython import get_ipython
    measurement = Measurement("cell")
    measurement.start()
    try:
        get_ipython().run_cell(cell)
    finally:
        print(cell_summary(measurement.finish()))


def load_ipython_extension(ipython):
    ipython.register_magic_function(gpumemtrace_magic, "line_cell", "gpumemtrace")
