# SPDX-License-Identifier: Apache-2.0
"""The wheel's build (scripts/build-wheel.sh stages the tree beside this file and runs it with
python3 -m build): the Python package, the helper modules, and the native gpumemtrace under
gpumemtrace/_native/ as the staging left it."""
import os
import platform

from setuptools import Distribution, setup
from wheel.bdist_wheel import bdist_wheel


class NativeDistribution(Distribution):
    """Native files inside: a platform wheel, its files at the root (platlib)."""

    def has_ext_modules(self):
        return True


class NativeWheel(bdist_wheel):
    """Tagged py3-none-linux_<machine>: any Python 3 (the package is pure Python; the native
    files are programs and a preload, no extension module), this machine's architecture only."""

    def get_tag(self):
        return "py3", "none", f"linux_{platform.machine()}"


def native_files():
    root = os.path.join("gpumemtrace", "_native")
    return [os.path.relpath(os.path.join(folder, name), "gpumemtrace")
            for folder, _, names in os.walk(root) for name in names]


setup(
    name="gpumemtrace",
    version=os.environ["GPUMEMTRACE_VERSION"],
    description="Where did my GPU memory go: records every CUDA allocation with stacks",
    license="Apache-2.0",
    python_requires=">=3.8",
    packages=["gpumemtrace"],
    py_modules=["gpumemtrace_torch", "gpumemtrace_cupy", "gpumemtrace_roles"],
    package_data={"gpumemtrace": native_files()},
    entry_points={
        "console_scripts": ["gpumemtrace = gpumemtrace.__main__:main"],
        "pytest11": ["gpumemtrace = gpumemtrace.pytest_plugin"],
    },
    distclass=NativeDistribution,
    cmdclass={"bdist_wheel": NativeWheel},
    zip_safe=False,
)
