// SPDX-License-Identifier: Apache-2.0
// gpumemtrace's block entry point, doing nothing: loaded into an untraced process before our
// PyTorch shim (tests/gpu/bench_run.py, --tracker), it takes the shim's calls in place of the
// recorder, so that a step's time shows what PyTorch's trace tracker path costs on its own.
// Built by scripts/gpu-bench.sh on the GPU host.
#include <cstdint>

extern "C" __attribute__((visibility("default"))) void gpumemtrace_framework_block(
    uint32_t, uint32_t, int32_t, uint64_t, uint64_t, uint64_t) {}
