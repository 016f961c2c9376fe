# SPDX-License-Identifier: Apache-2.0
"""gpumemtrace: where did my GPU memory go.

    gpumemtrace.load("train.gmt").leaks      # figures of a trace (pandas when installed)
    python -m gpumemtrace run -- python train.py
    pytest --gpumemtrace                     # with @pytest.mark.limit_gpu_memory("2 GiB")
    python -m gpumemtrace install-kernel     # then %load_ext gpumemtrace, %%gpumemtrace

docs/python.md in the source tree says more."""
from gpumemtrace._cli import AnalyzerError
from gpumemtrace._sizes import parse_size
from gpumemtrace.trace import Trace, load


def _version():
    """The installed wheel's version (the project's, as CMakeLists.txt gives it); None when the
    package runs from a source tree, not installed."""
    from importlib import metadata

    try:
        return metadata.version("gpumemtrace")
    except metadata.PackageNotFoundError:
        return None


__version__ = _version()
__all__ = ["AnalyzerError", "Trace", "load", "parse_size", "__version__"]


def load_ipython_extension(ipython):
    """`%load_ext gpumemtrace`: the %%gpumemtrace cell magic (gpumemtrace._ipython)."""
    from gpumemtrace._ipython import load_ipython_extension as load

    load(ipython)
