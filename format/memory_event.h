// SPDX-License-Identifier: Apache-2.0
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

// A free's fields, between a FreeRecord and a MemoryEvent's record (either way).
template <class From, class To>
void copy_free_fields(const From& from, To& to) {
  to.time_ns = from.time_ns;
  to.thread = from.thread;
  to.api = from.api;
  to.public_api = from.public_api;
  to.address = from.address;
}

// `record` as a MemoryEvent in `out`: false, leaving `out` alone, for anything but an
// allocation or a free.
inline bool as_memory_event(const Record& record, MemoryEvent& out) {
  if (const auto* a = std::get_if<AllocRecord>(&record)) {
    out.record = *a;
    out.type = RecordType::kAlloc;
    return true;
  }
  if (const auto* f = std::get_if<FreeRecord>(&record)) {
    copy_free_fields(*f, out.record);
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
  FreeRecord* free = std::get_if<FreeRecord>(&out);
  if (free == nullptr) free = &out.emplace<FreeRecord>();
  copy_free_fields(event.record, *free);
}

}  // namespace gmt::format
