// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/phase_recorder.h"

#include "interpose/common/thread_id.h"

namespace gmt::interpose {

using format::PhaseAction;

namespace {

// NVTX nesting is per thread (across domains, as NVTX counts it).
thread_local int push_depth __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

uint32_t PhaseRecorder::name_id(std::string_view text) {
  if (text.size() > format::NameRecord::kMaxLength)
    text = text.substr(0, format::NameRecord::kMaxLength);
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = ids_.try_emplace(std::string(text), 0);
  if (inserted) {
    names_.emplace_back(text);
    written_.push_back(false);
    it->second = static_cast<uint32_t>(names_.size());
  }
  if (!written_[it->second - 1] && writer_.started()) write_name_locked(it->second);
  return it->second;
}

void PhaseRecorder::ensure_written(uint32_t id) {
  if (id == 0 || !writer_.started()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (id <= names_.size() && !written_[id - 1]) write_name_locked(id);
}

void PhaseRecorder::write_name_locked(uint32_t id) {
  format::NameRecord rec;
  rec.id = id;
  rec.text = names_[id - 1];
  writer_.record(rec);
  written_[id - 1] = true;
}

int PhaseRecorder::push(uint32_t domain, uint32_t name) {
  emit(PhaseAction::kPush, domain, name, 0);
  return push_depth++;
}

int PhaseRecorder::pop(uint32_t domain) {
  if (push_depth == 0) return -1;
  emit(PhaseAction::kPop, domain, 0, 0);
  return --push_depth;
}

uint64_t PhaseRecorder::start(uint32_t domain, uint32_t name) {
  const uint64_t range = next_range_.fetch_add(1, std::memory_order_relaxed);
  emit(PhaseAction::kStart, domain, name, range);
  return range;
}

void PhaseRecorder::end(uint64_t range) {
  emit(PhaseAction::kEnd, 0, 0, range);
}

void PhaseRecorder::mark(uint32_t domain, uint32_t name) {
  emit(PhaseAction::kMark, domain, name, 0);
}

void PhaseRecorder::emit(PhaseAction action, uint32_t domain, uint32_t name, uint64_t range) {
  format::PhaseRecord rec;
  rec.tid = thread_id();
  rec.action = static_cast<uint32_t>(action);
  rec.domain = domain;
  rec.name = name;
  rec.range = range;
  if (writer_.started()) {
    flush_if_pending();
    std::lock_guard<std::mutex> lock(mutex_);
    // A name interned before the trace existed is written before its first use.
    for (uint32_t id : {domain, name}) {
      if (id != 0 && !written_[id - 1]) write_name_locked(id);
    }
    writer_.record(rec);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_.size() < kMaxPending) {
    pending_.push_back(rec);
    pending_count_.store(pending_.size(), std::memory_order_relaxed);
  }
}

void PhaseRecorder::flush_pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_.empty() || !writer_.started()) return;
  for (uint32_t id = 1; id <= names_.size(); ++id) {
    if (!written_[id - 1]) write_name_locked(id);
  }
  for (format::PhaseRecord& rec : pending_) writer_.record(rec);
  pending_.clear();
  pending_count_.store(0, std::memory_order_relaxed);
}

// The child's trace is a new file: every name must be written again, and the parent's pending
// phases are the parent's.
void PhaseRecorder::after_fork_in_child() {
  written_.assign(written_.size(), false);
  pending_.clear();
  pending_count_.store(0, std::memory_order_relaxed);
  mutex_.unlock();
}

}  // namespace gmt::interpose
