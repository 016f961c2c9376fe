# SPDX-License-Identifier: Apache-2.0
"""The analyzer's JSON, asked of the bundled CLI: every figure in Python comes from it, so that
the API and the plugin say what `gpumemtrace ... --json` says."""
import json
import os
import subprocess

from gpumemtrace._native import cli_path


class AnalyzerError(RuntimeError):
    """The CLI could not answer (an unreadable trace, a bad argument): its own message."""


def run_json(*args):
    """Runs `gpumemtrace ARGS` and returns its parsed JSON output."""
    # Not under the preload, even from a traced process: the analyzer is no part of the program.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    command = [cli_path(), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AnalyzerError(
            f"`gpumemtrace {' '.join(args)}` failed (exit status {done.returncode}): "
            f"{done.stderr.strip() or done.stdout.strip()}")
    return json.loads(done.stdout)
