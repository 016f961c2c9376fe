// Turns what a hook saw into trace records. Knows nothing of CUDA's types: the hooks translate.
#pragma once

#include <cstdint>

#include "format/records.h"
#include "interpose/record/trace_writer.h"

namespace gmt::interpose {

class EventRecorder {
 public:
  explicit EventRecorder(TraceWriter& writer) : writer_(writer) {}

  // After the real allocation returned: a success with its address, or the failure with the
  // size that was asked for. `error` is the CUresult (0 = success).
  void allocation(uint32_t error, int device, format::MemoryKind kind, format::Api api,
                  uint64_t address, uint64_t size);

  // Before the real free runs.
  void freeing(format::Api api, uint64_t address);

 private:
  TraceWriter& writer_;
};

}  // namespace gmt::interpose
