// SPDX-License-Identifier: Apache-2.0
// The interposer's one piece of process-wide state. Created on first use (which may come before
// our constructors run) and never destroyed: hooks run during exit and after destructors.
#pragma once

#include <atomic>
#include <cstdint>

#include "interpose/config.h"
#include "interpose/frameworks/torch_tracker.h"
#include "interpose/hooks/driver_views_of_driver.h"
#include "interpose/hooks/entry_points.h"
#include "interpose/record/event_recorder.h"
#include "interpose/record/phase_recorder.h"
#include "interpose/record/trace_writer.h"
#include "interpose/sampler/sampler.h"

namespace gmt::interpose {

class Runtime {
 public:
  // Inline, one load once made: every hook and block event starts here.
  static Runtime& get() {
    if (Runtime* made = made_.load(std::memory_order_acquire)) [[likely]]
      return *made;
    return make();
  }

  const Config& config() const { return config_; }
  DriverEntryPoints& entry_points() { return entry_points_; }
  EventRecorder& events() { return events_; }
  TraceWriter& writer() { return writer_; }
  Sampler& sampler() { return sampler_; }
  PhaseRecorder& phases() { return phases_; }
  DriverViews& driver_views() { return driver_views_; }
  TorchTracker& torch_tracker() { return torch_tracker_; }

  // Moves whenever a context may go (destroyed, reset, released), so that what a thread learnt
  // about a context handle (its device) is asked again: a new context may reuse the handle.
  uint64_t context_generation() const {
    return context_generation_.load(std::memory_order_acquire);
  }
  void contexts_changing() { context_generation_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  Runtime();
  static Runtime& make();

  // The runtime, once made (make()'s static holds it; this is where hooks find it).
  static inline std::atomic<Runtime*> made_{nullptr};

  Config config_;
  TraceWriter writer_;
  DriverEntryPoints entry_points_;
  DriverViewsOfDriver driver_views_;
  Sampler sampler_;
  PhaseRecorder phases_;
  EventRecorder events_;
  TorchTracker torch_tracker_;
  std::atomic<uint64_t> context_generation_{1};
};

}  // namespace gmt::interpose
