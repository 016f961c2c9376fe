#include "analyzer/html_report.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "analyzer/html_assets.h"
#include "analyzer/html_report_data.h"
#include "analyzer/report.h"
#include "analyzer/trace_error.h"

namespace gmt::analyzer {
namespace {

// JSON inside a <script> element ends at the first "</script": every '<' is written as its
// escape, which JSON allows in strings (the only place '<' can be). Invalid UTF-8 in symbol
// names becomes U+FFFD rather than an exception.
std::string embeddable(const nlohmann::ordered_json& data) {
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void write_html_page(const nlohmann::ordered_json& data, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<title>gpumemtrace report</title>\n<style>\n"
      << kHtmlStyle << "</style>\n</head>\n<body>\n<div id=\"report\"></div>\n"
      << "<script type=\"application/json\" id=\"gmt-data\">" << embeddable(data)
      << "</script>\n<script>\n"
      << kHtmlScript << "</script>\n</body>\n</html>\n";
}

int html_command(const std::vector<std::string>& paths, const std::string& output,
                 std::ostream& err) {
  ReportInput input = load_traces(paths);
  for (const UnreadableTrace& u : input.unreadable) err << "gpumemtrace: " << u.error << "\n";
  for (const TraceSummary& t : input.traces) {
    for (const std::string& problem : t.problems)
      err << "gpumemtrace: " << t.path << ": left out at " << problem << "\n";
  }
  nlohmann::ordered_json data;
  try {
    data = html_report_data(input);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  std::ofstream file(output, std::ios::binary | std::ios::trunc);
  if (!file) {
    err << "gpumemtrace: cannot create " << output << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  write_html_page(data, file);
  file.close();
  if (!file) {
    err << "gpumemtrace: cannot write " << output << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  return input.unreadable.empty() ? 0 : 1;
}

}  // namespace gmt::analyzer
