# SPDX-License-Identifier: Apache-2.0
"""`python -m gpumemtrace install-kernel`: a Jupyter kernel spec whose kernel runs under the
preload (`gpumemtrace run`), so that `%%gpumemtrace` cells can read the kernel's own trace."""
import argparse
import json
import os
import sys
import tempfile

from gpumemtrace._native import cli_path


def kernel_spec(trace_dir):
    return {
        "argv": [cli_path(), "run", "-o", os.path.join(trace_dir, "kernel.%p.gmt"), "--",
                 sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python {sys.version_info.major} (gpumemtrace)",
        "language": "python",
        "metadata": {"debugger": False},
    }


def _kernels_dir(args):
    if args.prefix:
        return os.path.join(args.prefix, "share", "jupyter", "kernels")
    if args.sys_prefix:
        return os.path.join(sys.prefix, "share", "jupyter", "kernels")
    data = os.environ.get("JUPYTER_DATA_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "jupyter")
    return os.path.join(data, "kernels")


def install_kernel(argv):
    parser = argparse.ArgumentParser(
        prog="python -m gpumemtrace install-kernel",
        description="Write a Jupyter kernel spec that starts this Python under gpumemtrace.")
    parser.add_argument("--name", default="gpumemtrace", help="the kernel's name")
    parser.add_argument("--trace-dir", default=os.path.join(tempfile.gettempdir(),
                                                             "gpumemtrace-kernels"),
                        help="where the kernels' traces go (default: %(default)s)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for this user (the default)")
    where.add_argument("--sys-prefix", action="store_true", help="in this Python's prefix (a venv)")
    where.add_argument("--prefix", help="under PREFIX/share/jupyter/kernels")
    args = parser.parse_args(argv)
    trace_dir = os.path.abspath(args.trace_dir)
    os.makedirs(trace_dir, exist_ok=True)
    folder = os.path.join(_kernels_dir(args), args.name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "kernel.json"), "w") as out:
        json.dump(kernel_spec(trace_dir), out, indent=1)
    print(f"gpumemtrace: kernel spec {args.name!r} written to {folder} (traces in {trace_dir})")
    return 0
