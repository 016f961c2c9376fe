# SPDX-License-Identifier: Apache-2.0
"""`python -m gpumemtrace ARGS` and the `gpumemtrace` console script: the bundled CLI itself,
and `install-kernel` (a Jupyter kernel spec under the preload: gpumemtrace._kernel_spec).

The process becomes the binary (exec), so that its exit status, signals and terminal are the
CLI's, and `run` finds the preload beside the binary's real path."""
import os
import sys

from gpumemtrace._native import cli_path


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["install-kernel"]:
        from gpumemtrace._kernel_spec import install_kernel

        return install_kernel(args[1:])
    try:
        path = cli_path()
    except FileNotFoundError as error:
        print(f"gpumemtrace: {error}", file=sys.stderr)
        return 2
    os.execv(path, [path] + list(args))


if __name__ == "__main__":
    sys.exit(main())
