# SPDX-License-Identifier: Apache-2.0
# Sourced by the GPU scripts, from the repository root, with $out set: makes sure build-gpu/
# holds a build (carried from elsewhere, or built here without tests), puts the libraries a
# carried build brings on the loader's path, and sets $gmt to the gpumemtrace command.
if [ ! -x build-gpu/bin/gpumemtrace ]; then
  . scripts/lib/cuda_args.sh
  cmake -S . -B build-gpu -DGMT_BUILD_TESTS=OFF "${cuda_args[@]}" >"$out/build.log" 2>&1 &&
    cmake --build build-gpu -j "$(nproc)" >>"$out/build.log" 2>&1 || { echo "FAIL build (see build.log)"; exit 1; }
fi
if [ -d build-gpu/lib/deps ]; then export LD_LIBRARY_PATH="$PWD/build-gpu/lib/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
gmt="$PWD/build-gpu/bin/gpumemtrace"
