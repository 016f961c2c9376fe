// SPDX-License-Identifier: Apache-2.0
// A trace read while its process still writes it (`gpumemtrace top`): each refresh() reads only
// what was published since the last one and feeds it to one Replay that lives as long as the
// watch. The file is opened read-only and read with pread(): no lock, no mapping, nothing the
// writer could wait on.
//
// How it resumes: per chunk it remembers the published length it has consumed and how many
// records of it were applied. A chunk that grew is read again up to its new published length
// (one chunk, 64 KiB by default) and its records decoded from the chunk's start (time and
// address deltas restart per chunk, so a chunk decodes only from its start), skipping those
// already applied. A chunk whose writer has gone on to its next chunk never grows again and is
// not looked at any more. Memory: the replay's (live allocations, sites), one chunk buffer per
// writer with new records, and a few words per chunk.
//
// Order: the new records of all writers are merged by time as the whole-file reader merges
// them; a record published after a refresh that applied later records of other writers is
// applied after them (the live figures come out the same; a peak's time may be off by that).
//
// Falling behind: a bounded trace reuses its oldest chunks, and a chunk reused before all of its
// records were read takes them with it. The header counts the records of every chunk reused
// (bytes 32-39); the watch counts those it had read of each chunk it saw reused. When the header
// counts more, records were lost before they were read: the figures would be wrong, so the
// replay is rebuilt from the file as the whole-file reader reads it (from its oldest whole
// checkpoint), and behind() says so.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/replay.h"
#include "analyzer/model/trace_summary.h"
#include "format/file_header.h"
#include "format/records.h"

namespace gmt::analyzer {

class LiveTrace {
 public:
  explicit LiveTrace(std::string path);
  ~LiveTrace();
  LiveTrace(const LiveTrace&) = delete;
  LiveTrace& operator=(const LiveTrace&) = delete;

  // Reads and applies what was published since the last call; false with error() set when the
  // file cannot be read as a trace (yet: a file just created may still lack its header).
  bool refresh();
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

  // The replay's summary after the last refresh (Replay::finish() was called on it).
  const TraceSummary& summary() const { return replay_->summary(); }
  TraceSummary& summary() { return replay_->summary(); }
  const Replay& replay() const { return *replay_; }

  // A bounded trace: its oldest chunks are reused once it reaches its limit.
  bool bounded() const { return header_ && header_->max_size != 0; }
  // How often the watch fell behind the writer (records were written over before it read
  // them) and rebuilt its replay, how many records it had missed then, in all, and the time
  // from which the rebuilt replay holds the history (its checkpoint's).
  struct Behind {
    uint64_t times = 0;
    uint64_t records_missed = 0;
    uint64_t history_from_ns = 0;
  };
  const Behind& behind() const { return behind_; }

  bool described() const { return described_; }
  bool saw_end() const { return saw_end_; }  // the End record: the process exited normally
  uint64_t mono_start_ns() const { return mono_start_ns_; }
  // The latest record time applied (ns since the trace started).
  uint64_t latest_time_ns() const { return latest_time_ns_; }
  // The header page's stop reason ("" while recording goes on).
  const std::string& stop_reason() const { return stop_reason_; }
  uint64_t records_applied() const { return records_applied_; }
  // Chunks whose published bytes did not match their checksum at the last look.
  uint64_t checksum_mismatches() const { return checksum_mismatches_; }

  // Device-resident bytes live on `device` at trace time `time_ns`, from per-second marks kept
  // for the last few minutes (0 before the trace's start; the oldest kept for an older time);
  // nothing before the history the replay holds begins (a bounded trace read from a
  // checkpoint).
  std::optional<uint64_t> live_bytes_at(int device, uint64_t time_ns) const;

  // A file its writer has created but not yet given its header: empty, or zeros so far (the
  // header page is written into a file already sized). Not yet a trace, but it may become one.
  bool may_become_trace() const;

  // The phases open now, outermost first per thread: "name" or "domain::name".
  std::vector<std::string> open_phases() const;

 private:
  struct ChunkState {
    uint32_t writer = 0;
    uint32_t sequence = 0;
    uint32_t thread = 0;
    uint32_t consumed_length = 0;  // published payload bytes applied
    uint64_t consumed_records = 0;
    // Its records count as history when the chunk is reused (the header counts them): a
    // thread's or the shared chunk's, not a checkpoint's (told by its first record).
    bool holds_events = true;
    bool final = false;  // its writer has a later chunk and all of it was consumed
  };
  struct Pending;

  bool read_header();
  // A bounded trace that dropped history before the watch began (or, `always`, one the watch
  // fell behind): its state is rebuilt from the whole file as the reader gives it (from its
  // checkpoint), and its chunks marked as read.
  void start_from_checkpoint(bool always);
  // The replay and everything derived from the records, as before the first.
  void reset();
  // Whether the chunk at index `i`, whose header is `h`, is no longer the one last read there
  // (reused: another writer's, or being made so); if so, counts what had been read of it as
  // seen dropped and forgets it.
  bool forget_if_reused(std::size_t i, const uint8_t* h);
  // Reads the chunk headers again for reuses the header counted before their chunks showed
  // them; true when records were dropped that were never read.
  bool missed_records();
  void apply(const format::Record& record);
  void mark_second(uint64_t time_ns);

  std::string path_;
  int fd_ = -1;
  std::optional<format::FileHeader> header_;
  std::string error_;
  std::string stop_reason_;
  std::vector<ChunkState> chunks_;  // by index in the file
  std::unique_ptr<Replay> replay_ = std::make_unique<Replay>();
  bool checkpoint_looked_ = false;  // start_from_checkpoint() has looked
  // Records of reused chunks: as the header counts them at the last look, and as counted from
  // what was read of each chunk before its reuse was seen (from the rebuild's copy on).
  uint64_t header_dropped_ = 0;
  uint64_t seen_dropped_ = 0;
  Behind behind_;
  uint64_t known_from_ns_ = 0;  // the history the replay holds begins here
  bool described_ = false;
  bool saw_end_ = false;
  uint64_t mono_start_ns_ = 0;
  uint64_t latest_time_ns_ = 0;
  uint64_t records_applied_ = 0;
  uint64_t checksum_mismatches_ = 0;
  // Per device, (second, device-resident bytes live at that second's end), oldest first.
  std::map<int, std::deque<std::pair<uint64_t, uint64_t>>> seconds_;
  uint64_t current_second_ = 0;
  // Phases: names by id, the ranges open per thread (a stack) and by range id.
  std::map<uint32_t, std::string> names_;
  std::map<uint64_t, std::vector<std::pair<uint32_t, std::string>>>
      pushed_;                               // tid -> (domain, name)
  std::map<uint64_t, std::string> started_;  // range -> name
};

}  // namespace gmt::analyzer
