// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/block_roles.h"

#include <algorithm>
#include <unordered_map>
#include <variant>

#include "analyzer/model/containers/flat_hash_map.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/roles/role_tracker.h"
#include "format/file_header.h"

namespace gmt::analyzer::allocator {
namespace {

using format::BlockAction;

// Where the stand-in block of a failed request is placed: no CUDA address is this high.
constexpr uint64_t kFailedRequestAddress = 3ull << 62;

class RequestRoles {
 public:
  explicit RequestRoles(bool modules) : modules_(modules) {}

  void apply(const format::Record& record) {
    if (const auto* b = std::get_if<format::BlockRecord>(&record)) {
      on(*b);
    } else if (const auto* n = std::get_if<format::NameRecord>(&record)) {
      tracker_.on(*n);
    } else if (const auto* s = std::get_if<format::ScopeRecord>(&record)) {
      tracker_.on(*s);
    } else if (const auto* t = std::get_if<format::TagRecord>(&record)) {
      tracker_.on(*t);
    }
  }

  BlockRoles finish() {
    tracker_.for_each_live([&](uint64_t address, RoleTracker::RoleClass c) {
      if (const auto* e = live_.find(address)) classes_[e->value] = c;
    });
    BlockRoles out;
    out.recorded = tracker_.recorded();
    out.roles.resize(classes_.size());
    for (std::size_t i = 0; i < classes_.size(); ++i)
      out.roles[i] = static_cast<uint8_t>(tracker_.role_of_class(classes_[i]));
    out.modules = std::move(modules_of_);
    out.forwards = std::move(forwards_of_);
    out.module_names.assign(1, std::string());
    for (uint32_t& m : out.modules) {  // Name ids -> dense ids of module_names
      if (m == 0) continue;
      auto [it, inserted] = dense_.try_emplace(m, static_cast<uint32_t>(out.module_names.size()));
      if (inserted) out.module_names.push_back(tracker_.name(m));
      m = it->second;
    }
    return out;
  }

 private:
  static bool is_pytorch(uint32_t allocator) {
    return allocator == static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  }

  void on(const format::BlockRecord& r) {
    const auto action = static_cast<BlockAction>(r.action);
    if (action == BlockAction::kOom && is_pytorch(r.allocator)) return failed_request(r);
    tracker_.on_block(r);
    if (!is_pytorch(r.allocator)) return;
    if (action == BlockAction::kAlloc) {
      // An allocation at a live block's address ends that block (its free was not recorded).
      if (auto* old = live_.find(r.address); old != nullptr) {
        if (const auto c = tracker_.last_ended()) classes_[old->value] = *c;
        old->value = classes_.size();
      } else {
        live_.insert(r.address, classes_.size());
      }
      classes_.push_back(0);
      made();
    } else if (action == BlockAction::kFreeRequested) {
      if (auto* e = live_.find(r.address); e != nullptr) {
        if (const auto c = tracker_.last_ended()) classes_[e->value] = *c;
        live_.erase(e);
      }
    }
  }

  // The recording failed it: no block was made. A stand-in block made and found at once has the
  // class a block made at that moment has (failures are few: one pass over the live blocks each).
  void failed_request(const format::BlockRecord& r) {
    format::BlockRecord made = r;
    made.action = static_cast<uint32_t>(BlockAction::kAlloc);
    made.address = kFailedRequestAddress + classes_.size();
    tracker_.on_block(made);
    RoleTracker::RoleClass found = 0;
    tracker_.for_each_live([&](uint64_t address, RoleTracker::RoleClass c) {
      if (address == made.address) found = c;
    });
    classes_.push_back(found);
    this->made();
    format::BlockRecord freed = made;
    freed.action = static_cast<uint32_t>(BlockAction::kFreeRequested);
    tracker_.on_block(freed);
    // Its free is the stand-in's, not the program's: the class stays the one at the failure.
  }

  void made() {
    if (!modules_) return;
    const RoleTracker::Made m = tracker_.last_made();
    modules_of_.push_back(m.module);
    forwards_of_.push_back(m.forward);
  }

  bool modules_;
  std::vector<uint32_t> modules_of_;
  std::vector<uint32_t> forwards_of_;
  std::unordered_map<uint32_t, uint32_t> dense_;
  RoleTracker tracker_;
  FlatHashMap<uint64_t, uint64_t, AddressHash> live_;  // address -> request ordinal
  std::vector<RoleTracker::RoleClass> classes_;        // by request ordinal
};

}  // namespace

bool BlockRoles::any(Role role) const {
  return std::find(roles.begin(), roles.end(), static_cast<uint8_t>(role)) != roles.end();
}

BlockRoles read_block_roles(std::span<const uint8_t> bytes, const std::string& name,
                            format::PageAccess pages, bool modules) {
  const format::HeaderCheck header = format::check_header(bytes);
  if (!header.ok) throw TraceError(name + ": " + header.error);
  format::TraceReader reader(bytes, header.header, std::move(pages));
  RequestRoles roles(modules);
  while (const format::Record* record = reader.next_record()) roles.apply(*record);
  return roles.finish();
}

}  // namespace gmt::analyzer::allocator
