// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/history_text.h"

#include "analyzer/report/byte_size.h"

namespace gmt::analyzer {
namespace {

// 1234567 as "1,234,567".
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3)
    digits.insert(static_cast<std::size_t>(at), ",");
  return digits;
}

}  // namespace

std::string history_text(const TraceSummary& t) {
  const format::HistoryWindow& h = t.history;
  std::string text;
  if (h.dropped) {
    text = "history kept from " + human_duration(h.kept_from_ns) + " (dropped " +
           grouped(h.dropped_records) + " earlier events); " + grouped(h.carried_allocations) +
           " allocations (" + human_bytes(h.carried_bytes) + ") carried from before";
  }
  if (h.max_size != 0 && h.written_bytes > h.max_size) {
    text += std::string(text.empty() ? "" : "; ") + "the file grew to " +
            human_bytes(h.written_bytes) + ", past its bound of " + human_bytes(h.max_size) +
            " (each checkpoint carries the whole live set" +
            (h.dropped ? ", " + grouped(h.carried_allocations) + " allocations" +
                             (h.carried_blocks > 0 ? " and " + grouped(h.carried_blocks) + " blocks"
                                                   : std::string()) +
                             " here"
                       : std::string()) +
            ", and the bound could not hold two with the chunks being written: a larger "
            "--max-size would)";
  }
  return text;
}

nlohmann::ordered_json history_json(const TraceSummary& t) {
  const format::HistoryWindow& h = t.history;
  if (h.max_size == 0) return nullptr;
  nlohmann::ordered_json json = {{"max_size", h.max_size},
                                 {"written_bytes", h.written_bytes},
                                 {"dropped_events", h.dropped_records}};
  if (h.dropped) {
    json["kept_from_ns"] = h.kept_from_ns;
    json["carried_allocations"] = h.carried_allocations;
    json["carried_bytes"] = h.carried_bytes;
  }
  return json;
}

}  // namespace gmt::analyzer
