// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/remedies_report.h"

#include <cstdlib>
#include <exception>

#include "analyzer/model/allocator/whatif_prediction.h"
#include "analyzer/report/byte_size.h"

namespace gmt::analyzer {

std::future<std::optional<allocator::Remedies>> start_remedies(
    const std::string& path, std::optional<uint64_t> device_memory) {
  // GPUMEMTRACE_REMEDIES=0: none searched (to measure what they cost: scripts/bench-remedies.sh).
  if (const char* on = std::getenv("GPUMEMTRACE_REMEDIES"); on != nullptr && std::string(on) == "0")
    return std::async(std::launch::deferred, [] { return std::optional<allocator::Remedies>(); });
  return std::async(std::launch::async,
                    [path, device_memory]() -> std::optional<allocator::Remedies> {
                      try {
                        return allocator::find_remedies_file(path, device_memory);
                      } catch (const std::exception&) {
                        return std::nullopt;
                      }
                    });
}

void add_remedies_json(const allocator::Remedies& remedies, nlohmann::ordered_json& answer) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const allocator::Remedy& r : remedies.list) {
    list.push_back({{"change", r.change},
                    {"whatif", r.whatif},
                    {"device", remedies.device},
                    {"predicted_max_reserved_bytes", r.predicted_max_reserved_bytes},
                    {"predicted_max_allocated_bytes", r.predicted_max_allocated_bytes},
                    {"saves_bytes", r.saves_bytes},
                    {"fits", r.fits},
                    {"too_close", r.close},
                    {"note", r.note}});
  }
  if (!remedies.applicable) return;
  answer["remedies"] = std::move(list);
  answer["remedies_note"] = remedies.none_because.empty()
                                ? nlohmann::ordered_json(nullptr)
                                : nlohmann::ordered_json(remedies.none_because);
  answer["remedies_not_predicted"] = remedies.past_caught_failure;
}

void write_remedies_text(const allocator::Remedies& remedies, std::ostream& out) {
  if (!remedies.applicable) return;
  if (remedies.list.empty()) {
    if (!remedies.none_because.empty()) out << "remedies: none: " << remedies.none_because << "\n";
    return;
  }
  out << "remedies, as the allocator's model predicts them (the cheapest first; device "
      << remedies.device;
  if (remedies.total_bytes != 0) out << " of " << human_bytes(remedies.total_bytes);
  out << ", reserved at most " << human_bytes(remedies.recorded_max_reserved_bytes)
      << " as recorded):\n";
  for (const allocator::Remedy& r : remedies.list) {
    out << "  " << r.change << ": " << allocator::verdict_text(r.fits, r.close)
        << ", reserved at most " << human_bytes(r.predicted_max_reserved_bytes);
    if (r.saves_bytes != 0)
      out << " (" << (r.saves_bytes > 0 ? "-" : "+")
          << human_bytes(static_cast<uint64_t>(std::llabs(r.saves_bytes))) << ")";
    if (!r.note.empty()) out << "; " << r.note;
    out << "  [whatif " << r.whatif << "]\n";
  }
  if (remedies.past_caught_failure > 0)
    out << "  (" << remedies.past_caught_failure
        << " more change(s) get past the failure the program caught and went on from; what it "
           "asked for after it is not predicted, so they are not shown)\n";
}

}  // namespace gmt::analyzer
