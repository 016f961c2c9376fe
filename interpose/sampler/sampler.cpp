// SPDX-License-Identifier: Apache-2.0
#include "interpose/sampler/sampler.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <new>

#include "interpose/common/clock.h"
#include "interpose/common/depth_guard.h"

namespace gmt::interpose {

using format::SampleReason;

namespace {

uint32_t bit(SampleReason reason) {
  return 1u << static_cast<uint32_t>(reason);
}

void stop_at_exit(int, void* sampler) {
  static_cast<Sampler*>(sampler)->stop();
}

}  // namespace

// NVML is opened and the device looked up here, on the program's thread inside its CUDA call,
// not on the sampler's: loading a library and opening device files take descriptors, and one
// taken by another thread while the program closes and opens its own files would move the
// number the program's next open gets.
void Sampler::device_in_use(int device) {
  if (config_.sample_ms == 0 || device < 0 || device >= kMaxDevices) return;
  const uint64_t mask = 1ull << device;
  if (devices_.load(std::memory_order_acquire) & mask) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (devices_.load(std::memory_order_relaxed) & mask) return;
  if (!nvml_opened_) {
    nvml_opened_ = true;
    if (std::string why = nvml_.open(); !why.empty()) note("nvml view missing: " + why);
  }
  pci_bus_ids_[device] = driver_.pci_bus_id(device);
  if (nvml_.available()) nvml_devices_[device] = nvml_.find(pci_bus_ids_[device]);
  devices_.fetch_or(mask, std::memory_order_release);  // the sampler reads the lookup after this
  if (!started_) start_locked();
  pending_ |= bit(SampleReason::kFirst);
  wake_.notify_one();
}

void Sampler::uses_pools(int device) {
  if (device >= 0 && device < kMaxDevices) pool_devices_.fetch_or(1ull << device);
}

void Sampler::uses_graphs(int device) {
  if (device >= 0 && device < kMaxDevices) graph_devices_.fetch_or(1ull << device);
}

void Sampler::request(SampleReason reason) {
  if (config_.sample_ms == 0) return;
  writer_.keep_spare_chunk();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_ || stopping_) return;
  pending_ |= bit(reason);
  wake_.notify_one();
}

// The views must describe the moment of a new high, not whatever came after it, so the thread
// that reached it waits for the sample, briefly: a new high 1 % above the last is rare once a
// program has reached its working set, and the wait is bounded (NVML's start-up can be slow).
void Sampler::sample_now(SampleReason reason) {
  if (config_.sample_ms == 0) return;
  writer_.keep_spare_chunk();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!started_ || stopping_ || stopped_) return;
  // A sample already under way may have read before this moment: wait for the one after it.
  const uint64_t wanted = samples_done_ + (sampling_ ? 2 : 1);
  pending_ |= bit(reason);
  wake_.notify_one();
  done_.wait_for(lock, std::chrono::milliseconds(kWaitMs),
                 [&] { return samples_done_ >= wanted || stopping_ || stopped_; });
}

void Sampler::framework_view(int device, uint64_t allocated, uint64_t reserved) {
  format::SampleRecord sample;
  sample.device = device;
  sample.reason = static_cast<uint32_t>(SampleReason::kFramework);
  sample.framework_allocated = allocated;
  sample.framework_reserved = reserved;
  sample.present =
      format::SampleField::kFrameworkAllocated | format::SampleField::kFrameworkReserved;
  writer_.record(sample);
}

// The thread blocks every signal, so that the program's handlers never run on it and a signal
// meant for the program is never taken by it.
void Sampler::start_locked() {
  started_ = true;
  writer_.keep_spare_chunk();  // the sampler's first chunk, should the program close our file
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int failed = pthread_create(&thread_, nullptr, &Sampler::thread_main, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (failed != 0) {
    stopped_ = true;
    return;
  }
  // Registered now, after the driver was loaded and initialized: atexit handlers run in reverse,
  // so the last sample is taken while the driver still works.
  on_exit(stop_at_exit, this);
}

void* Sampler::thread_main(void* self) {
  pthread_setname_np(pthread_self(), "gpumemtrace");
  // Everything this thread calls in the driver is ours: never an event.
  DepthGuard forever;
  TraceWriter::this_thread_opens_nothing();
  static_cast<Sampler*>(self)->run();
  return nullptr;
}

void Sampler::run() {
  const auto period = std::chrono::milliseconds(config_.sample_ms);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait_for(lock, period, [this] { return pending_ != 0 || stopping_; });
    const bool last = stopping_;
    uint32_t reasons = pending_;
    pending_ = 0;
    sampling_ = true;
    lock.unlock();
    SampleReason reason = SampleReason::kPeriodic;
    if (last) {
      reason = SampleReason::kLast;
    } else if (reasons & bit(SampleReason::kFailedAlloc)) {
      reason = SampleReason::kFailedAlloc;
    } else if (reasons & bit(SampleReason::kHighWater)) {
      reason = SampleReason::kHighWater;
    } else if (reasons & bit(SampleReason::kFirst)) {
      reason = SampleReason::kFirst;
    }
    sample_all(reason);
    lock.lock();
    sampling_ = false;
    ++samples_done_;
    done_.notify_all();
    if (last) {
      stopped_ = true;
      return;
    }
  }
}

void Sampler::stop() {
  writer_.keep_spare_chunk();  // for the last sample
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started_ || stopping_ || stopped_) return;
    stopping_ = true;
    wake_.notify_one();
  }
  // A driver or NVML call that hangs (a GPU gone bad) must not hang the program's exit: after
  // two seconds the thread is left behind, and the last sample with it.
  timespec deadline{};
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 2;
  if (pthread_timedjoin_np(thread_, nullptr, &deadline) != 0) pthread_detach(thread_);
}

void Sampler::sample_all(SampleReason reason) {
  const uint64_t devices = devices_.load(std::memory_order_acquire);
  for (int d = 0; d < kMaxDevices; ++d) {
    if (devices & (1ull << d)) sample_device(d, reason);
  }
}

void Sampler::describe_device(int device) {
  format::DeviceRecord rec;
  rec.device = device;
  rec.pci_bus_id = pci_bus_ids_[device];
  rec.total_bytes = driver_.total_bytes(device);
  if (nvml_.available()) {
    rec.nvml_index = nvml_devices_[device].index;
    rec.name = nvml_devices_[device].name;
    if (nvml_devices_[device].handle == nullptr) {
      note("nvml view missing for device " + std::to_string(device) +
           ": no NVML device has PCI bus id '" + rec.pci_bus_id + "'");
    }
  }
  writer_.record(rec);
}

void Sampler::sample_device(int device, SampleReason reason) {
  const uint64_t mask = 1ull << device;
  if (!(described_ & mask)) {
    describe_device(device);
    described_ |= mask;
  }
  format::SampleRecord sample;
  sample.device = device;
  sample.reason = static_cast<uint32_t>(reason);
  const uint64_t started = monotonic_ns();
  bool listed = false;
  nvml_.read(nvml_devices_[device], static_cast<uint64_t>(getpid()), sample, listed);
  if (nvml_devices_[device].handle != nullptr && !listed &&
      (sample.present & format::SampleField::kNvmlDeviceUsed) && ++nvml_unlisted_ == 3) {
    // Once could be the moment before NVML lists a new context; three times is a pattern.
    note("nvml does not list this process (pid " + std::to_string(getpid()) + ") on device " +
         std::to_string(device) +
         ": per-process figures are missing while it does (another PID namespace, such as a "
         "container's, hides our pid)");
  }
  driver_.read(device, pool_devices_.load(std::memory_order_relaxed) & mask,
               graph_devices_.load(std::memory_order_relaxed) & mask, sample);
  sample.read_ns = monotonic_ns() - started;
  writer_.record(sample);
}

void Sampler::note(const std::string& text) {
  format::NoteRecord rec;
  rec.text = text.substr(0, 900);
  writer_.record(rec);
}

// A sample in progress finishes before the fork, so that the child finds no lock held.
void Sampler::before_fork() {
  mutex_.lock();
  driver_.lock_teardown();
}

void Sampler::after_fork_in_parent() {
  driver_.unlock_teardown();
  mutex_.unlock();
}

// The child has no sampler thread: it starts its own at its first CUDA use.
void Sampler::after_fork_in_child() {
  driver_.unlock_teardown();
  new (&wake_) std::condition_variable();
  new (&done_) std::condition_variable();
  samples_done_ = 0;
  sampling_ = false;
  started_ = stopping_ = stopped_ = false;
  pending_ = 0;
  devices_.store(0);
  pool_devices_.store(0);
  graph_devices_.store(0);
  described_ = 0;
  nvml_unlisted_ = 0;
  for (auto& d : nvml_devices_) d = NvmlView::Device{};
  for (auto& id : pci_bus_ids_) id.clear();
  nvml_opened_ = false;  // the child's NVML starts again (nvmlInit counts its callers)
  mutex_.unlock();
}

}  // namespace gmt::interpose
