// SPDX-License-Identifier: Apache-2.0
#include "analyzer/html/html_page.h"

#include "analyzer/html/html_assets.h"

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

void write_page(const char* title, const nlohmann::ordered_json& data, std::string_view script,
                std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<title>"
      << title << "</title>\n<style>\n"
      << kHtmlStyle << "</style>\n</head>\n<body>\n<div id=\"report\"></div>\n"
      << "<script type=\"application/json\" id=\"gmt-data\">" << embeddable(data)
      << "</script>\n<script>\n"
      << script << "</script>\n</body>\n</html>\n";
}

}  // namespace

void write_html_page(const nlohmann::ordered_json& data, std::ostream& out) {
  write_page("gpumemtrace report", data, kHtmlScript, out);
}

void write_run_comparison_page(const nlohmann::ordered_json& data, std::ostream& out) {
  write_page("gpumemtrace diff", data, kRunComparisonScript, out);
}

}  // namespace gmt::analyzer
