// The interposer's one piece of process-wide state. Created on first use (which may come before
// our constructors run) and never destroyed: hooks run during exit and after destructors.
#pragma once

#include "interpose/config.h"
#include "interpose/hooks/driver_views.h"
#include "interpose/hooks/entry_points.h"
#include "interpose/record/event_recorder.h"
#include "interpose/record/phase_recorder.h"
#include "interpose/record/sampler.h"
#include "interpose/record/trace_writer.h"

namespace gmt::interpose {

class Runtime {
 public:
  static Runtime& get();

  const Config& config() const { return config_; }
  DriverEntryPoints& entry_points() { return entry_points_; }
  EventRecorder& events() { return events_; }
  TraceWriter& writer() { return writer_; }
  Sampler& sampler() { return sampler_; }
  PhaseRecorder& phases() { return phases_; }
  DriverViews& driver_views() { return driver_views_; }

 private:
  Runtime();

  Config config_;
  TraceWriter writer_;
  DriverEntryPoints entry_points_;
  DriverViewsOfDriver driver_views_;
  Sampler sampler_;
  PhaseRecorder phases_;
  EventRecorder events_;
};

}  // namespace gmt::interpose
