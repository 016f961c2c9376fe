// SPDX-License-Identifier: Apache-2.0
// The shared runtime (libcudart.so.13) in this process: its calls land in the fake driver.
// cudaGetDriverEntryPoint is deprecated in CUDA 13 but still what many libraries call.
#define CUDA_ENABLE_DEPRECATED
#include <dlfcn.h>

#include <cstring>
#include <thread>

#include "common/fakecuda_introspection.h"
#include "runtime/runtime_api.h"  // also declares the _ptsz/_ptds exports
#include "selftest/scenario.h"

namespace fakecuda_test {
namespace {

void* driver_symbol(const char* name) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  void* symbol = driver != nullptr ? dlsym(driver, name) : nullptr;
  if (driver != nullptr) dlclose(driver);
  return symbol;
}

const Env kSmallDevice = {{"FAKECUDA_DEVICE_MEMORY", "1G"}, {"FAKECUDA_CONTEXT_OVERHEAD", "256M"}};

TEST(Runtime, CallsLandInTheDriver) {
  run_scenario(kSmallDevice, [] {
    void* p = nullptr;
    ASSERT_EQ(cudaMalloc(&p, 10 * kMiB), cudaSuccess);
    EXPECT_EQ(fakecuda_live_context_count(0), 1);  // primary context retained lazily
    EXPECT_EQ(fakecuda_process_used_bytes(0), 256 * kMiB + 10 * kMiB);
    size_t free = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
    EXPECT_EQ(total, kGiB);
    EXPECT_EQ(free, kGiB - 266 * kMiB);
    EXPECT_EQ(cudaFree(p), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 256 * kMiB);
    void* zero = reinterpret_cast<void*>(1);
    EXPECT_EQ(cudaMalloc(&zero, 0), cudaSuccess);
    EXPECT_EQ(zero, nullptr);
  });
}

TEST(Runtime, OutOfMemoryBecomesMemoryAllocationAndLastError) {
  run_scenario(kSmallDevice, [] {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, kGiB), cudaErrorMemoryAllocation);
    EXPECT_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_STREQ(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
    EXPECT_STREQ(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
    EXPECT_EQ(cudaFree(reinterpret_cast<void*>(0x1000)), cudaErrorInvalidValue);
    std::thread([] { EXPECT_EQ(cudaGetLastError(), cudaSuccess); }).join();  // per thread
  });
}

TEST(Runtime, DeviceResetFreesAndTheNextCallStartsAgain) {
  run_scenario(kSmallDevice, [] {
    void* p = nullptr;
    ASSERT_EQ(cudaMalloc(&p, 5 * kMiB), cudaSuccess);
    ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    EXPECT_EQ(fakecuda_live_context_count(0), 0);
    ASSERT_EQ(cudaMalloc(&p, 7 * kMiB), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 256 * kMiB + 7 * kMiB);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  });
}

TEST(Runtime, DevicesAndVersions) {
  run_scenario({{"FAKECUDA_DEVICE_COUNT", "3"}, {"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    int count = 0;
    ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
    EXPECT_EQ(count, 3);
    EXPECT_EQ(cudaSetDevice(3), cudaErrorInvalidDevice);
    ASSERT_EQ(cudaSetDevice(2), cudaSuccess);
    EXPECT_EQ(fakecuda_live_context_count(2), 1);  // cudaSetDevice initializes the device
    int device = -1;
    ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
    EXPECT_EQ(device, 2);
    void* p = nullptr;
    ASSERT_EQ(cudaMalloc(&p, kMiB), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(2), kMiB);
    std::thread([] {
      int other = -1;
      EXPECT_EQ(cudaGetDevice(&other), cudaSuccess);
      EXPECT_EQ(other, 0);  // the current device is per thread
    }).join();
    int version = 0;
    ASSERT_EQ(cudaDriverGetVersion(&version), cudaSuccess);
    EXPECT_EQ(version, 13000);
    ASSERT_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
    EXPECT_EQ(version, 13000);
  });
}

TEST(Runtime, EveryAllocationKind) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    void* pitched = nullptr;
    size_t pitch = 0;
    ASSERT_EQ(cudaMallocPitch(&pitched, &pitch, 1000, 100), cudaSuccess);
    EXPECT_EQ(pitch, 1024u);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 1024u * 100);
    cudaPitchedPtr volume{};
    ASSERT_EQ(cudaMalloc3D(&volume, cudaExtent{100, 10, 10}), cudaSuccess);
    EXPECT_EQ(volume.pitch, 512u);
    EXPECT_EQ(volume.ysize, 10u);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 1024u * 100 + 512 * 100);
    ASSERT_EQ(cudaFree(pitched), cudaSuccess);
    ASSERT_EQ(cudaFree(volume.ptr), cudaSuccess);

    void* managed = nullptr;
    ASSERT_EQ(cudaMallocManaged(&managed, kMiB, cudaMemAttachGlobal), cudaSuccess);
    std::memset(managed, 1, kMiB);
    EXPECT_EQ(fakecuda_process_used_bytes(0), kMiB);
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, managed), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeManaged);
    ASSERT_EQ(cudaFree(managed), cudaSuccess);

    void* pinned = nullptr;
    void* portable = nullptr;
    ASSERT_EQ(cudaMallocHost(&pinned, kMiB), cudaSuccess);
    ASSERT_EQ(cudaHostAlloc(&portable, kMiB, cudaHostAllocPortable), cudaSuccess);
    std::memset(pinned, 2, kMiB);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);  // host memory
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, pinned), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
    ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
    ASSERT_EQ(cudaFreeHost(portable), cudaSuccess);
    char buffer[8192];
    ASSERT_EQ(cudaHostRegister(buffer, sizeof buffer, cudaHostRegisterDefault), cudaSuccess);
    EXPECT_EQ(cudaHostRegister(buffer, sizeof buffer, 0), cudaErrorHostMemoryAlreadyRegistered);
    ASSERT_EQ(cudaHostUnregister(buffer), cudaSuccess);

    cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
    cudaArray_t array = nullptr;
    ASSERT_EQ(cudaMallocArray(&array, &desc, 100, 50), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 100u * 50 * 4);
    ASSERT_EQ(cudaFreeArray(array), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
  });
}

TEST(Runtime, StreamOrderedAndPools) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    void* a = nullptr;
    void* b = nullptr;
    ASSERT_EQ(cudaMallocAsync(&a, 2 * kMiB, stream), cudaSuccess);
    ASSERT_EQ(cudaMallocAsync_ptsz(&b, kMiB, cudaStreamPerThread), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 3 * kMiB);
    ASSERT_EQ(cudaFreeAsync(a, stream), cudaSuccess);
    ASSERT_EQ(cudaFreeAsync_ptsz(b, cudaStreamPerThread), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);

    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location = {cudaMemLocationTypeDevice, 0};
    cudaMemPool_t pool = nullptr;
    ASSERT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
    cuuint64_t threshold = ~0ull;
    ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
              cudaSuccess);
    ASSERT_EQ(cudaMallocFromPoolAsync(&a, 4 * kMiB, pool, stream), cudaSuccess);
    ASSERT_EQ(cudaFreeAsync(a, stream), cudaSuccess);
    cuuint64_t reserved = 0;
    ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
              cudaSuccess);
    EXPECT_EQ(reserved, 4 * kMiB);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 4 * kMiB);
    ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    ASSERT_EQ(cudaMemPoolDestroy(pool), cudaSuccess);
    ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  });
}

TEST(Runtime, GraphsIpcAndCopies) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaGraphCreate(&graph, 0), cudaSuccess);
    cudaMemAllocNodeParams params{};
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location = {cudaMemLocationTypeDevice, 0};
    params.bytesize = kMiB;
    cudaGraphNode_t node = nullptr;
    ASSERT_EQ(cudaGraphAddMemAllocNode(&node, graph, nullptr, 0, &params), cudaSuccess);
    EXPECT_NE(params.dptr, nullptr);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(0), kMiB);
    ASSERT_EQ(cudaFree(params.dptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceGraphMemTrim(0), cudaSuccess);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
    ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);

    void* p = nullptr;
    ASSERT_EQ(cudaMalloc(&p, kMiB), cudaSuccess);
    cudaIpcMemHandle_t handle;
    ASSERT_EQ(cudaIpcGetMemHandle(&handle, p), cudaSuccess);
    void* imported = nullptr;
    ASSERT_EQ(cudaIpcOpenMemHandle(&imported, handle, cudaIpcMemLazyEnablePeerAccess), cudaSuccess);
    EXPECT_NE(imported, p);
    EXPECT_EQ(fakecuda_process_used_bytes(0), kMiB);
    ASSERT_EQ(cudaIpcCloseMemHandle(imported), cudaSuccess);

    char host[64] = "hello";
    ASSERT_EQ(cudaMemcpy(p, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(p, 0, sizeof host), cudaSuccess);
    void* managed = nullptr;
    ASSERT_EQ(cudaMallocManaged(&managed, 64, cudaMemAttachGlobal), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(managed, host, sizeof host, cudaMemcpyDefault), cudaSuccess);
    EXPECT_STREQ(static_cast<char*>(managed), "hello");
    EXPECT_EQ(
        cudaMemcpy(host, static_cast<char*>(p) + kMiB - 10, sizeof host, cudaMemcpyDeviceToHost),
        cudaErrorInvalidValue);  // past the end of the allocation
  });
}

TEST(Runtime, DriverEntryPointsForwardToCuGetProcAddress) {
  run_scenario({}, [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    ASSERT_EQ(cudaGetDriverEntryPoint("cuMemAlloc", &function, cudaEnableDefault, &status),
              cudaSuccess);
    EXPECT_EQ(status, cudaDriverEntryPointSuccess);
    EXPECT_EQ(function, driver_symbol("cuMemAlloc_v2"));
    ASSERT_EQ(
        cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 2000, cudaEnableDefault, &status),
        cudaSuccess);
    EXPECT_EQ(function, driver_symbol("cuMemAlloc"));
    ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuMemCreate", &function, 12000, cudaEnableDefault,
                                               &status),
              cudaSuccess);
    EXPECT_EQ(function, driver_symbol("cuMemCreate"));
    ASSERT_EQ(cudaGetDriverEntryPoint("cuMemAllocAsync", &function,
                                      cudaEnablePerThreadDefaultStream, &status),
              cudaSuccess);
    EXPECT_EQ(function, driver_symbol("cuMemAllocAsync_ptsz"));
    ASSERT_EQ(
        cudaGetDriverEntryPoint_ptsz("cuMemAllocAsync", &function, cudaEnableDefault, &status),
        cudaSuccess);
    EXPECT_EQ(function, driver_symbol("cuMemAllocAsync_ptsz"));
    ASSERT_EQ(cudaGetDriverEntryPoint("cuNoSuchThing", &function, cudaEnableDefault, &status),
              cudaSuccess);
    EXPECT_EQ(function, nullptr);
    EXPECT_EQ(status, cudaDriverEntryPointSymbolNotFound);
    EXPECT_EQ(cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 13010, 0, &status),
              cudaErrorInvalidValue);
  });
}

}  // namespace
}  // namespace fakecuda_test
