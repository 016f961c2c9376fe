// SPDX-License-Identifier: Apache-2.0
// A page in headless Chromium, driven by html_page_probe.py: a list of steps (evaluate, move or
// click the mouse, load again, save an element) and what each gave, with the page's JavaScript
// errors. Skipped where no Chromium or python3 can run.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/integration/analysis/html_report_fixture.h"

namespace gmt::test {

class HtmlPageProbe : public HtmlReportRun {
 protected:
  // What the steps gave on `page`: {"results", "errors", "load_ms"}; null when the test is to
  // be skipped (the reason in skip_).
  nlohmann::json probe(const std::string& page, const nlohmann::json& steps) {
    const char* given = std::getenv("GMT_CHROMIUM");
    const std::string chromium =
        given != nullptr && *given != '\0'
            ? std::string(given)
            : find_on_path({"chromium", "chromium-browser", "google-chrome"});
    const std::string python = find_on_path({"python3"});
    if (chromium.empty() || python.empty()) {
      skip_ = "no Chromium or no python3 (scripts/install-deps.sh installs Debian's chromium)";
      return nullptr;
    }
    const std::string steps_file = dir_ + "/steps.json";
    std::ofstream(steps_file) << steps.dump();
    ProcessSpec spec;
    spec.argv = {python, GMT_HTML_PROBE_SCRIPT, chromium, page, steps_file};
    spec.cwd = dir_;
    const ProcessResult r = run_process(spec);
    if (r.exit_code == 77) {
      skip_ = "Chromium cannot run here: " + r.err;
      return nullptr;
    }
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json(nullptr);
  }

  // The first of `names` on PATH; "" when there is none.
  static std::string find_on_path(std::initializer_list<const char*> names) {
    const char* path = std::getenv("PATH");
    for (const char* name : names) {
      std::istringstream dirs(path != nullptr ? path : "");
      for (std::string dir; std::getline(dirs, dir, ':');) {
        const std::filesystem::path candidate = std::filesystem::path(dir) / name;
        if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
      }
    }
    return "";
  }

  std::string skip_;
};

}  // namespace gmt::test
