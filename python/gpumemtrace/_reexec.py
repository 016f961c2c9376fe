# SPDX-License-Identifier: Apache-2.0
"""Starting pytest again under the preload, when `pytest --gpumemtrace` was not started so."""
import os
import sys

from gpumemtrace._native import cli_path

# Set for the pytest started again: were the preload still missing there, starting again would
# loop.
REEXEC_MARK = "GPUMEMTRACE_PYTEST_REEXEC"


def reexec_under_preload(trace_dir):
    """Replaces this process with `gpumemtrace run -o TRACE_DIR/pytest.%p.gmt -- <this command>`:
    the same interpreter, options and arguments (sys.orig_argv), one trace per process (xdist's
    workers are processes of their own)."""
    if os.environ.get(REEXEC_MARK):
        raise RuntimeError(
            "pytest --gpumemtrace: started again under `gpumemtrace run`, but the preload "
            "(libgpumemtrace.so) is not in this process; is LD_PRELOAD cleared by something?")
    cli = cli_path()
    env = dict(os.environ, **{REEXEC_MARK: "1"})
    pattern = os.path.join(trace_dir, "pytest.%p.gmt")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(cli, [cli, "run", "-o", pattern, "--", sys.executable, *sys.orig_argv[1:]], env)
