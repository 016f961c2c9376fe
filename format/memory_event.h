// An allocation or a free in one fixed shape: the records nearly every trace is made of, as the
// trace reader decodes them ahead and hands them out in batches (TraceReader::next_batch()), so
// that decoding, merging and replaying each run as a tight loop of their own, without the Record
// variant's branch on its alternative.
#pragma once

#include <variant>

#include "format/records.h"

namespace gmt::format {

struct MemoryEvent {
  // An allocation's fields. A free's are a subset of them, by the same names (time_ns, thread,
  // api, public_api, address); for a free the others hold nothing of its.
  AllocRecord record;
  RecordType type = RecordType::kAlloc;  // kAlloc or kFree
};

// `record` as a MemoryEvent in `out`: false, leaving `out` alone, for anything but an
// allocation or a free.
inline bool as_memory_event(const Record& record, MemoryEvent& out) {
  if (const auto* a = std::get_if<AllocRecord>(&record)) {
    out.record = *a;
    out.type = RecordType::kAlloc;
    return true;
  }
  if (const auto* f = std::get_if<FreeRecord>(&record)) {
    out.record.time_ns = f->time_ns;
    out.record.thread = f->thread;
    out.record.api = f->api;
    out.record.public_api = f->public_api;
    out.record.address = f->address;
    out.type = RecordType::kFree;
    return true;
  }
  return false;
}

// The record `event` stands for, into `out` (reusing it when it holds one of that type).
inline void to_record(const MemoryEvent& event, Record& out) {
  if (event.type == RecordType::kAlloc) {
    out = event.record;
    return;
  }
  const AllocRecord& r = event.record;
  FreeRecord* free = std::get_if<FreeRecord>(&out);
  if (free == nullptr) free = &out.emplace<FreeRecord>();
  free->time_ns = r.time_ns;
  free->thread = r.thread;
  free->api = r.api;
  free->public_api = r.public_api;
  free->address = r.address;
}

}  // namespace gmt::format
