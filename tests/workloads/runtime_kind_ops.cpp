// SPDX-License-Identifier: Apache-2.0
// Calls the CUDA runtime's allocation APIs named on its command line, one operation per
// argument; built against the shared and against the static runtime. The runtime reaches the
// driver through cuGetProcAddress, as the real one does, so this is how most programs allocate.
// See op_line.h for the output and for `try:`.
//
//   device:N                                        cudaSetDevice
//   cudaMalloc:S:BYTES   cudaFree:S
//   cudaMallocPitch:S:WIDTH:HEIGHT                  prints pitch=P
//   cudaMalloc3D:S:WIDTH:HEIGHT:DEPTH               prints pitch=P
//   cudaMallocManaged:S:BYTES
//   cudaMallocHost:S:BYTES   cudaHostAlloc:S:BYTES   cudaFreeHost:S
//   cudaHostRegister:S:BYTES                        registers fresh pages of that size
//   cudaHostUnregister:S
//   cudaMallocAsync[_ptsz]:S:BYTES   cudaFreeAsync[_ptsz]:S        on the NULL stream
//   cudaMemPoolCreate:P
//   cudaMallocFromPoolAsync:S:P:BYTES
//   cudaMallocArray:A:WIDTH:HEIGHT:CHANNELS         CHANNELS floats of 32 bits per element
//   cudaFreeArray:A
//   cudaDeviceReset
#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <map>
#include <string>

#include "op_line.h"

// The per-thread-default-stream flavours, which cuda_runtime_api.h declares only for code built
// with --default-stream per-thread (then under the plain names).
extern "C" {
cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream);
cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream);
}

namespace {

using workload::die;
using workload::Op;

template <class T>
T& slot(std::map<std::string, T>& slots, const std::string& name) {
  auto it = slots.find(name);
  if (it == slots.end()) die("no slot " + name);
  return it->second;
}

struct HostRange {
  void* base = nullptr;
  size_t bytes = 0;
};

cudaChannelFormatDesc float_channels(unsigned channels) {
  const int bits = 32;
  return cudaCreateChannelDesc(bits, channels > 1 ? bits : 0, channels > 2 ? bits : 0,
                               channels > 3 ? bits : 0, cudaChannelFormatKindFloat);
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, void*> pointers;
  std::map<std::string, HostRange> registered;
  std::map<std::string, cudaMemPool_t> pools;
  std::map<std::string, cudaArray_t> arrays;

  if (cudaSetDevice(0) != cudaSuccess) die("cudaSetDevice(0) failed");
  for (int i = 1; i < argc; ++i) {
    const Op op(argv[i]);
    const std::string& name = op.name();
    if (name == "device") {
      op.report(cudaSetDevice(static_cast<int>(op.num(1))));
    } else if (name == "cudaMalloc") {
      op.report(cudaMalloc(&pointers[op.str(1)], op.num(2)));
    } else if (name == "cudaFree") {
      op.report(cudaFree(slot(pointers, op.str(1))));
    } else if (name == "cudaMallocPitch") {
      size_t pitch = 0;
      const cudaError_t e = cudaMallocPitch(&pointers[op.str(1)], &pitch, op.num(2), op.num(3));
      op.report(e, "pitch=" + std::to_string(pitch));
    } else if (name == "cudaMalloc3D") {
      cudaPitchedPtr pitched{};
      const cudaError_t e = cudaMalloc3D(&pitched, cudaExtent{op.num(2), op.num(3), op.num(4)});
      pointers[op.str(1)] = pitched.ptr;
      op.report(e, "pitch=" + std::to_string(pitched.pitch));
    } else if (name == "cudaMallocManaged") {
      op.report(cudaMallocManaged(&pointers[op.str(1)], op.num(2), cudaMemAttachGlobal));
    } else if (name == "cudaMallocHost") {
      op.report(cudaMallocHost(&pointers[op.str(1)], op.num(2)));
    } else if (name == "cudaHostAlloc") {
      op.report(cudaHostAlloc(&pointers[op.str(1)], op.num(2), cudaHostAllocDefault));
    } else if (name == "cudaFreeHost") {
      op.report(cudaFreeHost(slot(pointers, op.str(1))));
    } else if (name == "cudaHostRegister") {
      HostRange range{nullptr, op.num(2)};
      range.base =
          mmap(nullptr, range.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (range.base == MAP_FAILED) die("mmap failed");
      registered[op.str(1)] = range;
      op.report(cudaHostRegister(range.base, range.bytes, cudaHostRegisterDefault));
    } else if (name == "cudaHostUnregister") {
      const HostRange range = slot(registered, op.str(1));
      op.report(cudaHostUnregister(range.base));
      munmap(range.base, range.bytes);
    } else if (name == "cudaMallocAsync") {
      op.report(cudaMallocAsync(&pointers[op.str(1)], op.num(2), nullptr));
    } else if (name == "cudaMallocAsync_ptsz") {
      op.report(cudaMallocAsync_ptsz(&pointers[op.str(1)], op.num(2), nullptr));
    } else if (name == "cudaFreeAsync") {
      op.report(cudaFreeAsync(slot(pointers, op.str(1)), nullptr));
    } else if (name == "cudaFreeAsync_ptsz") {
      op.report(cudaFreeAsync_ptsz(slot(pointers, op.str(1)), nullptr));
    } else if (name == "cudaMemPoolCreate") {
      int device = 0;
      if (cudaGetDevice(&device) != cudaSuccess) die("cudaGetDevice failed");
      cudaMemPoolProps props{};
      props.allocType = cudaMemAllocationTypePinned;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = device;
      op.report(cudaMemPoolCreate(&pools[op.str(1)], &props));
    } else if (name == "cudaMallocFromPoolAsync") {
      op.report(cudaMallocFromPoolAsync(&pointers[op.str(1)], op.num(3), slot(pools, op.str(2)),
                                        nullptr));
    } else if (name == "cudaMallocArray") {
      const cudaChannelFormatDesc desc = float_channels(static_cast<unsigned>(op.num(4)));
      op.report(cudaMallocArray(&arrays[op.str(1)], &desc, op.num(2), op.num(3), 0));
    } else if (name == "cudaFreeArray") {
      op.report(cudaFreeArray(slot(arrays, op.str(1))));
    } else if (name == "cudaDeviceReset") {
      op.report(cudaDeviceReset());
    } else {
      die("unknown operation " + op.text());
    }
  }
  return 0;
}
