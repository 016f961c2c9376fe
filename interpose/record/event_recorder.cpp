#include "interpose/record/event_recorder.h"

#include "interpose/record/thread_id.h"

namespace gmt::interpose {

void EventRecorder::allocation(uint32_t error, int device, format::MemoryKind kind, format::Api api,
                               uint64_t address, uint64_t size) {
  if (error != 0) {
    format::AllocFailedRecord rec;
    rec.thread = thread_id();
    rec.device = device;
    rec.kind = kind;
    rec.api = api;
    rec.size = size;
    rec.error = error;
    writer_.record(rec);
    return;
  }
  format::AllocRecord rec;
  rec.thread = thread_id();
  rec.device = device;
  rec.kind = kind;
  rec.api = api;
  rec.address = address;
  rec.size = size;
  writer_.record(rec);
}

void EventRecorder::freeing(format::Api api, uint64_t address) {
  format::FreeRecord rec;
  rec.thread = thread_id();
  rec.api = api;
  rec.address = address;
  writer_.record(rec);
}

}  // namespace gmt::interpose
