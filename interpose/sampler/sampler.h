// SPDX-License-Identifier: Apache-2.0
// The sampler: a thread, started at the process's first CUDA use, that records what NVML and the
// driver say about each device the process uses, every GPUMEMTRACE_SAMPLE_MS and right after a
// new high-water mark or a failed allocation. Those views are what the analyzer reconciles with
// the tracked allocations.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "format/records.h"
#include "interpose/config.h"
#include "interpose/record/trace_writer.h"
#include "interpose/sampler/driver_views.h"
#include "interpose/sampler/nvml_view.h"

namespace gmt::interpose {

class Sampler {
 public:
  static constexpr int kMaxDevices = 64;

  Sampler(TraceWriter& writer, const Config& config, DriverViews& driver)
      : writer_(writer), config_(config), driver_(driver) {}

  // The process uses `device` (a context there was seen): start sampling, and sample it.
  void device_in_use(int device);
  // The device has stream-ordered or graph memory, whose pools are worth reading.
  void uses_pools(int device);
  void uses_graphs(int device);
  // Sample as soon as possible.
  void request(format::SampleReason reason);
  // Sample now and wait (at most kWaitMs) until it is taken: for the moment of a new high or a
  // failed allocation, which the next allocation would change.
  void sample_now(format::SampleReason reason);
  static constexpr int kWaitMs = 5;
  // The framework's own view, pushed by the program (see gpumemtrace.h): written at once.
  void framework_view(int device, uint64_t allocated, uint64_t reserved);
  // Normal exit: one last sample, then the thread ends. Runs before the driver's own exit
  // handlers, which is why it is registered with atexit when the thread starts.
  void stop();

  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

 private:
  void start_locked();
  static void* thread_main(void* self);
  void run();
  void sample_all(format::SampleReason reason);
  void sample_device(int device, format::SampleReason reason);
  void describe_device(int device);
  void note(const std::string& text);

  TraceWriter& writer_;
  const Config& config_;
  DriverViews& driver_;
  // Written under mutex_ by the thread that first uses a device, before its bit in devices_;
  // read by the sampler thread after it.
  NvmlView nvml_;
  bool nvml_opened_ = false;
  NvmlView::Device nvml_devices_[kMaxDevices];
  std::string pci_bus_ids_[kMaxDevices];

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;  // a sample was written
  uint64_t samples_done_ = 0;
  bool sampling_ = false;  // the thread is reading the views now
  bool started_ = false;
  bool stopping_ = false;
  bool stopped_ = false;
  uint32_t pending_ = 0;  // bit per SampleReason requested
  pthread_t thread_{};
  std::atomic<uint64_t> devices_{0};  // bit per CUDA ordinal in use
  std::atomic<uint64_t> pool_devices_{0};
  std::atomic<uint64_t> graph_devices_{0};
  uint64_t described_ = 0;  // devices whose DeviceRecord is written; the sampler thread's
  int nvml_unlisted_ = 0;   // samples in which NVML did not list this process
};

}  // namespace gmt::interpose
