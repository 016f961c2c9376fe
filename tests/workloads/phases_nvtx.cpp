// SPDX-License-Identifier: Apache-2.0
// A training loop marked with NVTX v3 (the toolkit's header-only NVTX, as PyTorch uses it) and
// with gpumemtrace.h, allocating known sizes in each phase, for the phase and view tests:
//
//   init (before any CUDA call)   weights 64 MiB
//   3 x trainer::step             forward: +100 MiB activations, +20 MiB scratch freed
//                                 backward: +50 MiB gradients, activations freed
//                                 gradients freed, +2 MiB kept (the leak)
//   trainer::checkpoint           +16 MiB, popped with a payload (as NCCL does), then freed
//   optimizer (gpumemtrace.h)     +8 MiB freed
//   shutdown (start/end range)    nothing
//
// At the peak (backward of the last step: 218 MiB) it reports a framework view and waits, so
// that the sampler reads the other views there.
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "include/gpumemtrace.h"

namespace {

constexpr size_t kMiB = 1024 * 1024;

void* must_alloc(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc of %zu bytes failed\n", bytes);
    std::exit(1);
  }
  return p;
}

void must_free(void* p) {
  if (cudaFree(p) != cudaSuccess) std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  // "nvtx-only": phases and no CUDA at all, which must leave no trace.
  if (argc > 1 && std::string(argv[1]) == "nvtx-only") {
    nvtxRangePushA("setup");
    nvtxMarkA("nothing on the GPU");
    gpumemtrace_push("header phase");
    gpumemtrace_pop();
    nvtxRangePop();
    std::printf("ok\n");
    return 0;
  }
  const int pause_ms = argc > 1 ? std::atoi(argv[1]) : 300;
  nvtxRangePushA("init");
  void* weights = must_alloc(64 * kMiB);
  nvtxRangePop();

  nvtxDomainHandle_t trainer = nvtxDomainCreateA("trainer");
  nvtxStringHandle_t step_name = nvtxDomainRegisterStringA(trainer, "step");
  nvtxEventAttributes_t step{};
  step.version = NVTX_VERSION;
  step.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  step.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  step.message.registered = step_name;
  for (int i = 0; i < 3; ++i) {
    nvtxDomainRangePushEx(trainer, &step);
    nvtxRangePushA("forward");
    void* activations = must_alloc(100 * kMiB);
    must_free(must_alloc(20 * kMiB));
    nvtxRangePop();
    nvtxRangePushA("backward");
    void* gradients = must_alloc(50 * kMiB);
    if (i == 2) {
      gpumemtrace_framework_view(0, 150 * kMiB, 218 * kMiB);
      usleep(static_cast<useconds_t>(pause_ms) * 1000);
    }
    must_free(activations);
    nvtxRangePop();
    must_free(gradients);
    (void)must_alloc(2 * kMiB);
    nvtxDomainRangePop(trainer);
  }

  // NCCL's pattern: a range pushed with attributes, popped with a payload (nvtxRangePopPayload).
  nvtxEventAttributes_t checkpoint{};
  checkpoint.version = NVTX_VERSION;
  checkpoint.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  checkpoint.messageType = NVTX_MESSAGE_TYPE_ASCII;
  checkpoint.message.ascii = "checkpoint";
  nvtxDomainRangePushEx(trainer, &checkpoint);
  void* staging = must_alloc(16 * kMiB);
  const uint64_t bytes = 16 * kMiB;
  nvtxPayloadData_t payload{NVTX_PAYLOAD_ENTRY_TYPE_UINT64, sizeof bytes, &bytes};
  nvtxRangePopPayload(trainer, &payload, 1);
  must_free(staging);

  gpumemtrace_push("optimizer");
  must_free(must_alloc(8 * kMiB));
  gpumemtrace_pop();
  nvtxMarkA("done");
  const nvtxRangeId_t shutdown = nvtxRangeStartA("shutdown");
  nvtxRangeEnd(shutdown);
  (void)weights;  // kept until exit
  std::printf("ok\n");
  return 0;
}
