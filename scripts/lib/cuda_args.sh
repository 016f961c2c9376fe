# SPDX-License-Identifier: Apache-2.0
# Sourced by the build scripts: sets the array `cuda_args` to the CMake arguments that find the
# CUDA toolkit's headers ($CUDAToolkit_ROOT when set, else /usr/local/cuda when nvcc is not on
# PATH but is there).
cuda_args=()
if [ -n "${CUDAToolkit_ROOT:-}" ]; then cuda_args+=("-DCUDAToolkit_ROOT=$CUDAToolkit_ROOT"); fi
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ] && [ -z "${CUDAToolkit_ROOT:-}" ]; then
  cuda_args+=("-DCUDAToolkit_ROOT=/usr/local/cuda")
fi
