// SPDX-License-Identifier: Apache-2.0
// trace_bytes TRACE: what a trace's bytes are spent on, as one JSON object on stdout.
//
// A trace's file size says little: chunks are 64 KiB, reserved ahead and handed to each thread,
// so a short-lived thread leaves most of its chunk empty. The honest figure is the payload each
// chunk published, split here by record type (a frame's type and length varints included, as
// they are part of the record's cost). The records are also read back through the format's own
// reader, the one `gpumemtrace dump` and `report` use, so a count that the walk and the reader
// disagree on shows up instead of passing silently. `gpumemtrace dump` would give the same
// counts, but printing tens of millions of records as JSON takes minutes.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <variant>

#include "format/chunk.h"
#include "format/file_header.h"
#include "format/records.h"
#include "format/trace_reader.h"
#include "format/varint.h"

namespace {

// Record type numbers as records.h defines them (they never change: the format is append-only).
std::string type_name(uint64_t type) {
  static const char* const kNames[] = {
      "",        "process",           "alloc", "free",  "alloc_failed",  "end",
      "context", "context_destroyed", "map",   "unmap", "retain_handle", "stack",
      "module",  "python_code"};
  if (type < sizeof kNames / sizeof kNames[0] && type != 0) return kNames[type];
  return "type_" + std::to_string(type);
}

struct Tally {
  uint64_t records = 0;
  uint64_t bytes = 0;
};

struct Walk {
  uint64_t chunks = 0;
  uint64_t payload_bytes = 0;
  uint64_t bad_chunks = 0;  // a published length that does not fit, or a frame that runs over
  std::map<std::string, Tally> types;
};

uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Every chunk at 4096 + k * chunk_size with a magic, its published payload frame by frame.
Walk walk_chunks(std::span<const uint8_t> file, uint32_t chunk_size) {
  using gmt::format::ChunkHeaderLayout;
  Walk walk;
  for (uint64_t at = gmt::format::kFirstChunkOffset; at + chunk_size <= file.size();
       at += chunk_size) {
    const uint8_t* chunk = file.data() + at;
    uint32_t magic;
    std::memcpy(&magic, chunk + ChunkHeaderLayout::kMagic, sizeof magic);
    if (magic != gmt::format::kChunkMagic) continue;  // reserved, never handed out
    ++walk.chunks;
    const uint32_t used =
        gmt::format::published_length(load_u64(chunk + ChunkHeaderLayout::kPublished));
    if (used > chunk_size - gmt::format::kChunkHeaderSize) {
      ++walk.bad_chunks;
      continue;
    }
    walk.payload_bytes += used;
    const uint8_t* pos = chunk + gmt::format::kChunkHeaderSize;
    const uint8_t* end = pos + used;
    while (pos < end) {
      const uint8_t* frame = pos;
      uint64_t type = 0, length = 0;
      if (!gmt::format::get_varint(&pos, end, &type) ||
          !gmt::format::get_varint(&pos, end, &length) ||
          length > static_cast<uint64_t>(end - pos)) {
        ++walk.bad_chunks;
        break;
      }
      pos += length;
      Tally& tally = walk.types[type_name(type)];
      ++tally.records;
      tally.bytes += static_cast<uint64_t>(pos - frame);
    }
  }
  return walk;
}

struct ReadBack {
  std::map<std::string, uint64_t> records;
  uint64_t stack_frames = 0;  // native frames over all StackRecords
  uint64_t stack_frames_max = 0;
  uint64_t problems = 0;
};

ReadBack read_records(std::span<const uint8_t> file, const gmt::format::FileHeader& header) {
  ReadBack back;
  gmt::format::TraceReader reader(file, header);
  while (auto record = reader.next()) {
    std::visit(
        [&](const auto& r) {
          using R = std::decay_t<decltype(r)>;
          ++back.records[type_name(static_cast<uint64_t>(R::kType))];
          if constexpr (std::is_same_v<R, gmt::format::StackRecord>) {
            back.stack_frames += r.frames.size();
            back.stack_frames_max = std::max<uint64_t>(back.stack_frames_max, r.frames.size());
          }
        },
        *record);
  }
  back.problems = reader.problems().size();
  return back;
}

void print_json(const char* path, uint64_t file_bytes, const Walk& walk, const ReadBack& back) {
  std::printf("{\"path\": \"%s\", \"file_bytes\": %llu, \"chunks\": %llu, \"bad_chunks\": %llu, ",
              path, static_cast<unsigned long long>(file_bytes),
              static_cast<unsigned long long>(walk.chunks),
              static_cast<unsigned long long>(walk.bad_chunks));
  std::printf("\"payload_bytes\": %llu, \"types\": {",
              static_cast<unsigned long long>(walk.payload_bytes));
  const char* sep = "";
  for (const auto& [name, tally] : walk.types) {
    std::printf("%s\"%s\": {\"records\": %llu, \"bytes\": %llu}", sep, name.c_str(),
                static_cast<unsigned long long>(tally.records),
                static_cast<unsigned long long>(tally.bytes));
    sep = ", ";
  }
  std::printf("}, \"read\": {");
  sep = "";
  for (const auto& [name, count] : back.records) {
    std::printf("%s\"%s\": %llu", sep, name.c_str(), static_cast<unsigned long long>(count));
    sep = ", ";
  }
  std::printf("}, \"stack_frames\": %llu, \"stack_frames_max\": %llu, \"read_problems\": %llu}\n",
              static_cast<unsigned long long>(back.stack_frames),
              static_cast<unsigned long long>(back.stack_frames_max),
              static_cast<unsigned long long>(back.problems));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: trace_bytes TRACE\n");
    return 2;
  }
  const int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
    std::fprintf(stderr, "trace_bytes: cannot read %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    std::fprintf(stderr, "trace_bytes: cannot map %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  const std::span<const uint8_t> file(static_cast<const uint8_t*>(map), size);
  const gmt::format::HeaderCheck header = gmt::format::check_header(file);
  if (!header.ok) {
    std::fprintf(stderr, "trace_bytes: %s: %s\n", argv[1], header.error.c_str());
    return 1;
  }
  print_json(argv[1], size, walk_chunks(file, header.header.chunk_size),
             read_records(file, header.header));
  munmap(map, size);
  return 0;
}
