# SPDX-License-Identifier: Apache-2.0
"""Where the wheel keeps the native gpumemtrace: the CLI and the preload, in the layout of
`cmake --install` (bin/, lib/gpumemtrace/), so that `gpumemtrace run` finds the preload from the
binary's own place as an installed one does."""
import os

NATIVE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native")


def cli_path():
    """The bundled `gpumemtrace` binary; GPUMEMTRACE_CLI names another (a build tree's)."""
    path = os.environ.get("GPUMEMTRACE_CLI") or os.path.join(NATIVE_DIR, "bin", "gpumemtrace")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"the gpumemtrace binary is missing or not executable: {path} (this package is "
            "meant to be installed from its wheel, which carries it; or set GPUMEMTRACE_CLI)")
    return path
