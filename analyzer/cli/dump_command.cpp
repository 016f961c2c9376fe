// SPDX-License-Identifier: Apache-2.0
#include "analyzer/cli/dump_command.h"
#include "analyzer/cli/commands.h"

#include <nlohmann/json.hpp>
#include <variant>

#include "analyzer/model/input/mapped_file.h"
#include "analyzer/model/input/trace_error.h"
#include "format/file_header.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {
namespace {

using nlohmann::ordered_json;

// Walks a record's fields with the same visitor interface the codec uses, so that every field
// of every record appears under its name in records.h.
class JsonFields {
 public:
  explicit JsonFields(ordered_json& out) : out_(out) {}
  void u64(const char* name, uint64_t v) { out_[name] = v; }
  void u32(const char* name, uint32_t v) { out_[name] = v; }
  void i32(const char* name, int32_t v) { out_[name] = v; }
  void time(const char* name, uint64_t v) { out_[name] = v; }
  void address(const char* name, uint64_t v) { out_[name] = v; }
  void kind(const char* name, format::MemoryKind k) { out_[name] = format::memory_kind_name(k); }
  void api(const char* name, format::Api a) { out_[name] = format::api_name(a); }
  void public_api(const char* name, format::Api a) {
    if (a != format::Api::kUnknown) out_[name] = format::api_name(a);
  }
  void str(const char* name, const std::string& s) { out_[name] = s; }
  void address_list(const char* name, const std::vector<uint64_t>& l) { out_[name] = l; }
  void str_list(const char* name, const std::vector<std::string>& l) { out_[name] = l; }

 private:
  ordered_json& out_;
};

}  // namespace

const char* record_type_name(std::size_t index) {
  static const char* const kNames[] = {"process",
                                       "alloc",
                                       "free",
                                       "alloc_failed",
                                       "end",
                                       "context",
                                       "context_destroyed",
                                       "map",
                                       "unmap",
                                       "retain_handle",
                                       "stack",
                                       "module",
                                       "python_code",
                                       "thread",
                                       "device",
                                       "sample",
                                       "name",
                                       "phase",
                                       "note",
                                       "pool",
                                       "block",
                                       "checkpoint",
                                       "carried",
                                       "carried_block",
                                       "carried_vmm",
                                       "carried_phase",
                                       "allocator_settings",
                                       "block_freed_at_once",
                                       "scope",
                                       "tag",
                                       "signal"};
  static_assert(std::size(kNames) == std::variant_size_v<format::Record>);
  return index < std::size(kNames) ? kNames[index] : "unknown";
}

int dump_trace(const std::string& path, std::ostream& out, std::ostream& err) {
  try {
    MappedFile file(path);
    const format::HeaderCheck header = format::check_header(file.bytes());
    if (!header.ok) throw TraceError(path + ": " + header.error);
    format::TraceReader reader(file.bytes(), header.header, file.page_access());
    while (auto record = reader.next()) {
      ordered_json line = {{"record", record_type_name(record->index())}};
      JsonFields fields(line);
      std::visit(
          [&](const auto& r) {
            std::decay_t<decltype(r)>::fields(r, fields);
            if constexpr (requires { r.thread; }) line["thread"] = r.thread;
          },
          *record);
      out << line.dump() << '\n';
    }
    for (const format::ReadProblem& problem : reader.problems()) {
      out << ordered_json{{"record", "left_out"},
                          {"offset", problem.offset},
                          {"reason", problem.reason}}
                 .dump()
          << '\n';
    }
    return 0;
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
}

Command add_dump_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* dump =
      app.add_subcommand("dump", "Print every record of a trace as one JSON object per line");
  dump->add_option("trace", *path, "Trace file")->required();
  return {dump, [path] { return dump_trace(*path, std::cout, std::cerr); }};
}

}  // namespace gmt::analyzer
