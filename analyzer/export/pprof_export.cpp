// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace export --format pprof`: a gzipped profile.proto, as `pprof` and Go's tooling read
// it. Four values per sample, one sample per site and device: alloc_objects and alloc_space
// (every allocation made there over the run, of any kind), inuse_objects and inuse_space (the
// device-resident allocations live at its device's peak; they add up to the peak). Each stack
// ends in a root frame naming the device, and each sample carries a numeric label "device".
#include <map>
#include <tuple>

#include "analyzer/export/export_formats.h"
#include "analyzer/export/export_record_pass.h"
#include "analyzer/export/export_stacks.h"
#include "analyzer/export/gzip.h"
#include "analyzer/export/protobuf_writer.h"

namespace gmt::analyzer {
namespace {

// Field numbers of profile.proto (github.com/google/pprof/proto/profile.proto).
namespace profile {
constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5,
                   kStringTable = 6, kTimeNanos = 9, kDurationNanos = 10, kDefaultSampleType = 14;
}
namespace value_type {
constexpr uint32_t kType = 1, kUnit = 2;
}
namespace sample {
constexpr uint32_t kLocationId = 1, kValue = 2, kLabel = 3;
}
namespace label {
constexpr uint32_t kKey = 1, kNum = 3;
}
namespace mapping {
constexpr uint32_t kId = 1, kMemoryStart = 2, kMemoryLimit = 3, kFilename = 5, kBuildId = 6,
                   kHasFunctions = 7, kHasFilenames = 8, kHasLineNumbers = 9, kHasInlineFrames = 10;
}
namespace location {
constexpr uint32_t kId = 1, kMappingId = 2, kLine = 4;
}
namespace line {
constexpr uint32_t kFunctionId = 1, kLine = 2;
}
namespace function {
constexpr uint32_t kId = 1, kName = 2, kSystemName = 3, kFilename = 4;
}

// The string table, the functions, locations and mappings, each written once.
class ProfileTables {
 public:
  explicit ProfileTables(const TraceSummary& trace) : trace_(trace) { string_id(""); }

  uint64_t string_id(const std::string& s) {
    const auto [it, added] = strings_.try_emplace(s, strings_.size());
    if (added) out_.bytes(profile::kStringTable, s);
    return it->second;
  }

  // One location per distinct frame (function, file, line, module): the stacks were symbolized
  // with their inlined frames already expanded, so each frame stands alone.
  uint64_t location_id(const std::string& name, const std::optional<std::string>& file,
                       std::optional<int> line_number, const std::optional<std::string>& module) {
    const uint64_t function = function_id(name, file.value_or(""));
    const uint64_t mapping = module ? mapping_id(*module) : 0;
    const uint64_t line_no = line_number ? static_cast<uint64_t>(*line_number) : 0;
    const auto key = std::make_tuple(function, line_no, mapping);
    const auto [it, added] = locations_.try_emplace(key, locations_.size() + 1);
    if (added) {
      ProtoWriter l;
      l.varint(location::kId, it->second);
      if (mapping != 0) l.varint(location::kMappingId, mapping);
      ProtoWriter ln;
      ln.varint(line::kFunctionId, function);
      if (line_no != 0) ln.varint(line::kLine, line_no);
      l.message(location::kLine, ln);
      locations_out_.message(profile::kLocation, l);
    }
    return it->second;
  }

  // Strings first (they are appended as they come), then the other tables.
  std::string finish(const ProtoWriter& head) {
    return head.data() + out_.data() + mappings_out_.data() + locations_out_.data() +
           functions_out_.data();
  }

 private:
  uint64_t function_id(const std::string& name, const std::string& file) {
    const auto [it, added] = functions_.try_emplace({name, file}, functions_.size() + 1);
    if (added) {
      ProtoWriter f;
      f.varint(function::kId, it->second);
      f.varint(function::kName, string_id(name));
      f.varint(function::kSystemName, string_id(name));
      if (!file.empty()) f.varint(function::kFilename, string_id(file));
      functions_out_.message(profile::kFunction, f);
    }
    return it->second;
  }

  uint64_t mapping_id(const std::string& path) {
    const auto [it, added] = mappings_.try_emplace(path, mappings_.size() + 1);
    if (added) {
      ProtoWriter m;
      m.varint(mapping::kId, it->second);
      // Where the module was first loaded: a module unloaded and loaded again is one mapping.
      for (const format::ModuleRecord& r : trace_.modules) {
        if (r.path != path) continue;
        if (r.start != 0) m.varint(mapping::kMemoryStart, r.start);
        if (r.end != 0) m.varint(mapping::kMemoryLimit, r.end);
        if (!r.build_id.empty()) m.varint(mapping::kBuildId, string_id(r.build_id));
        break;
      }
      m.varint(mapping::kFilename, string_id(path));
      for (uint32_t field : {mapping::kHasFunctions, mapping::kHasFilenames,
                             mapping::kHasLineNumbers, mapping::kHasInlineFrames})
        m.varint(field, 1);
      mappings_out_.message(profile::kMapping, m);
    }
    return it->second;
  }

  const TraceSummary& trace_;
  ProtoWriter out_;  // the string table
  ProtoWriter mappings_out_, locations_out_, functions_out_;
  std::map<std::string, uint64_t> strings_;
  std::map<std::pair<std::string, std::string>, uint64_t> functions_;
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, uint64_t> locations_;
  std::map<std::string, uint64_t> mappings_;
};

struct SiteValues {
  uint64_t alloc_objects = 0, alloc_space = 0, inuse_objects = 0, inuse_space = 0;
};

}  // namespace

void write_pprof(TraceSummary& trace, FrameMode mode, std::ostream& out) {
  const ExportPass pass = read_export_pass(trace, 0);
  // By (device, stack): every site that allocated, with what it held at its device's peak.
  std::map<std::pair<int, uint32_t>, SiteValues> sites;
  for (const auto& [key, site] : trace.sites) {
    SiteValues& v = sites[{site.device, site.stack}];
    v.alloc_objects = site.allocations;
    const auto bytes = pass.allocated_bytes.find(key);
    v.alloc_space = bytes != pass.allocated_bytes.end() ? bytes->second : 0;
  }
  std::vector<WeightedStack> at_peak = peak_stacks(trace);
  for (const WeightedStack& s : at_peak) {
    SiteValues& v = sites[{s.device, s.stack}];
    v.inuse_objects = s.count;
    v.inuse_space = s.bytes;
  }
  std::vector<WeightedStack> all;
  for (const auto& [key, v] : sites) all.push_back({{}, key.first, key.second, 0, 0});
  ResolvedStacks frames = resolve_weighted(trace, all, mode);

  ProfileTables tables(trace);
  ProtoWriter head;
  for (const auto& [type, unit] : {std::pair{"alloc_objects", "count"},
                                   {"alloc_space", "bytes"},
                                   {"inuse_objects", "count"},
                                   {"inuse_space", "bytes"}}) {
    ProtoWriter vt;
    vt.varint(value_type::kType, tables.string_id(type));
    vt.varint(value_type::kUnit, tables.string_id(unit));
    head.message(profile::kSampleType, vt);
  }
  const uint64_t device_key = tables.string_id("device");
  for (const auto& [key, v] : sites) {
    const auto& [device, stack] = key;
    std::vector<uint64_t> locations;  // leaf first, as pprof wants
    const std::vector<SiteFrame>& f = frames[stack];
    for (const SiteFrame& frame : f)
      locations.push_back(tables.location_id(frame.function, frame.file, frame.line, frame.module));
    if (f.empty()) locations.push_back(tables.location_id(kNoStackFrame, {}, {}, {}));
    locations.push_back(tables.location_id(device_root(device), {}, {}, {}));
    ProtoWriter s;
    s.packed(sample::kLocationId, locations);
    s.packed(sample::kValue, {v.alloc_objects, v.alloc_space, v.inuse_objects, v.inuse_space});
    ProtoWriter l;
    l.varint(label::kKey, device_key);
    l.varint(label::kNum, static_cast<uint64_t>(static_cast<int64_t>(device)));
    s.message(sample::kLabel, l);
    head.message(profile::kSample, s);
  }
  if (trace.wall_start_ns != 0) head.varint(profile::kTimeNanos, trace.wall_start_ns);
  if (trace.duration_ns != 0) head.varint(profile::kDurationNanos, trace.duration_ns);
  head.varint(profile::kDefaultSampleType, tables.string_id("inuse_space"));
  const std::string encoded = tables.finish(head);
  const std::string compressed = gzip(encoded);
  out.write(compressed.data(), static_cast<std::streamsize>(compressed.size()));
}

}  // namespace gmt::analyzer
