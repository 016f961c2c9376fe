#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds build-gpu/ here (no tests) for a GPU machine that cannot install the build's
# dependencies (libdw, libelf, zstd...): the binaries, stripped, and the shared libraries they
# need beyond glibc and libstdc++ (and libunwind, which the preload opens) in build-gpu/lib/deps,
# which scripts/lib/gpu_build.sh puts on the loader's path there; and the wheel in build-gpu/dist
# (that machine may lack patchelf). Carry build-gpu/bin, lib and dist to that machine and run
# scripts/gpu-validate.sh.
# Usage: scripts/gpu-carry-build.sh [SOURCE_DIR]   (default: this checkout)
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
source scripts/lib/cuda_args.sh
cmake -S . -B build-gpu -DGMT_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda_args[@]}" >/dev/null
cmake --build build-gpu -j "$(nproc)"
mkdir -p build-gpu/lib/deps
# libunwind is opened at run time by the preload (native stacks), so ldd does not list it.
# (awk reads to the end: leaving early would kill ldconfig with SIGPIPE, which pipefail reports.)
unwind=$(ldconfig -p | awk '/libunwind\.so\.8 .*x86-64/ && !found { print $NF; found = 1 }')
[ -n "$unwind" ] && cp -L "$unwind" build-gpu/lib/deps/
for binary in build-gpu/bin/gpumemtrace build-gpu/lib/libgpumemtrace.so ${unwind:+"$unwind"}; do
  ldd "$binary" | awk '$3 ~ /^\// { print $3 }' |
    grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" build-gpu/lib/deps/; done
done
rm -rf build-gpu/dist
scripts/build-wheel.sh build-gpu build-gpu/dist >/dev/null
# Stripped last: the wheel's build links the binaries again (the carry holds 64 MiB at most).
strip --strip-debug build-gpu/bin/gpumemtrace build-gpu/lib/libgpumemtrace.so
du -sh build-gpu/bin build-gpu/lib build-gpu/dist
