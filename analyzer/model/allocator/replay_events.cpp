// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/replay_events.h"

#include <set>
#include <stdexcept>
#include <variant>

#include "analyzer/model/input/trace_error.h"
#include "format/file_header.h"

namespace gmt::analyzer::allocator {
namespace {

bool is_pytorch(uint32_t allocator) {
  return allocator == static_cast<uint32_t>(format::BlockAllocator::kPytorch);
}

bool sample_has_total(const format::SampleRecord& s) {
  return ((s.present & format::SampleField::kDriverTotal) != 0 && s.driver_total != 0) ||
         ((s.present & format::SampleField::kNvmlDeviceTotal) != 0 && s.nvml_device_total != 0);
}

}  // namespace

ReplayEvents ReplayEvents::read(std::span<const uint8_t> bytes, const std::string& name,
                                format::PageAccess pages) {
  const format::HeaderCheck header = format::check_header(bytes);
  if (!header.ok) throw TraceError(name + ": " + header.error);
  format::TraceReader reader(bytes, header.header, std::move(pages));
  ReplayEvents out;
  // A device's size is read from its first sample that has one (TraceReplay::apply): later
  // samples change nothing.
  std::set<int32_t> sampled;
  while (const format::Record* record = reader.next_record()) {
    if (const auto* b = std::get_if<format::BlockRecord>(record)) {
      if (is_pytorch(b->allocator))
        out.blocks_.push_back({b->address, b->size, b->stream, b->device, b->action});
      continue;
    }
    bool keep = false;
    if (const auto* s = std::get_if<format::AllocatorSettingsRecord>(record)) {
      keep = is_pytorch(s->allocator);
    } else if (std::holds_alternative<format::AllocFailedRecord>(*record) ||
               std::holds_alternative<format::DeviceRecord>(*record)) {
      keep = true;
    } else if (const auto* s = std::get_if<format::SampleRecord>(record)) {
      keep = sample_has_total(*s) && sampled.insert(s->device).second;
    } else if (const auto* sc = std::get_if<format::ScopeRecord>(record)) {
      // CUDA graph captures counted; the ends of steps and backwards, where a what-if may
      // empty the cache.
      keep = (sc->kind == static_cast<uint32_t>(format::ScopeKind::kCudaGraph) &&
              sc->action == static_cast<uint32_t>(format::ScopeAction::kEnter)) ||
             ((sc->kind == static_cast<uint32_t>(format::ScopeKind::kOptimizer) ||
               sc->kind == static_cast<uint32_t>(format::ScopeKind::kBackward)) &&
              sc->action == static_cast<uint32_t>(format::ScopeAction::kExit));
    } else if (std::holds_alternative<format::NameRecord>(*record) ||
               std::holds_alternative<format::PhaseRecord>(*record)) {
      keep = true;  // the phases a what-if may empty the cache at
    }
    if (keep) out.others_.emplace_back(out.blocks_.size(), *record);
  }
  out.history_dropped_ = reader.window().dropped;
  for (const format::ReadProblem& p : reader.problems())
    out.problems_.push_back("byte " + std::to_string(p.offset) + ": " + p.reason);
  return out;
}

TraceReplayResult ReplayEvents::replay(const ReplayOptions& options) const {
  if (!options.what_if && !options.alloc_conf)
    throw std::logic_error("ReplayEvents::replay: the unchanged replay needs the whole records");
  TraceReplay replay(options);
  auto other = others_.begin();
  format::BlockRecord r;
  r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  for (uint64_t i = 0; i <= blocks_.size(); ++i) {
    for (; other != others_.end() && other->first == i; ++other) replay.apply(other->second);
    if (i == blocks_.size()) break;
    const Block& b = blocks_[i];
    r.address = b.address;
    r.size = b.size;
    r.stream = b.stream;
    r.device = b.device;
    r.action = b.action;
    replay.apply(format::Record(r));
    if (options.stop_at_failure && replay.failed()) break;
  }
  TraceReplayResult result = replay.finish();
  result.history_dropped = history_dropped_;
  for (DeviceReplayResult& d : result.devices) d.history_dropped = history_dropped_;
  result.problems = problems_;
  return result;
}

}  // namespace gmt::analyzer::allocator
