// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/live_set.h"

namespace gmt::interpose {
namespace {

using format::Api;
using format::MemoryKind;

// Addresses, VMM handles, arrays and reservations are separate name spaces (format/README.md):
// the top bits keep them apart (user-space addresses and driver handles stay below 2^56).
uint64_t key_of(MemoryKind kind, uint64_t address) {
  switch (kind) {
    case MemoryKind::kVmmPhysical:
      return address | (1ull << 62);
    case MemoryKind::kArray:
      return address | (2ull << 62);
    case MemoryKind::kVmmReservation:
      return address | (3ull << 62);
    default:
      return address;
  }
}

uint64_t key_freed_by(Api api, uint64_t address) {
  switch (api) {
    case Api::kCuMemRelease:
      return address | (1ull << 62);
    case Api::kCuArrayDestroy:
    case Api::kCuMipmappedArrayDestroy:
      return address | (2ull << 62);
    case Api::kCuMemAddressFree:
      return address | (3ull << 62);
    default:
      return address;
  }
}

}  // namespace

void LiveSet::apply(const format::AllocRecord& r) {
  format::AllocRecord replaced;
  table_.put(key_of(r.kind, r.address), r, &replaced);
}

void LiveSet::apply(const format::FreeRecord& r) {
  format::AllocRecord taken;
  table_.take(key_freed_by(r.api, r.address), &taken);
}

void LiveSet::apply(const format::ContextDestroyedRecord& r) {
  table_.remove_if([&](const format::AllocRecord& a) {
    return a.context == r.id && format::owned_by_context(a.kind);
  });
}

}  // namespace gmt::interpose
