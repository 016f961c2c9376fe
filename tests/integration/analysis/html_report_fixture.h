// SPDX-License-Identifier: Apache-2.0
// What the HTML report's tests share: the phases workload traced under `gpumemtrace run` (known
// sizes, phases, views, leaks: tests/workloads/phases_nvtx.cpp), `gpumemtrace html` on traces,
// and the JSON object the page embeds.
#pragma once

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/traced_run_fixture.h"

namespace gmt::test {

class HtmlReportRun : public TracedRun {
 protected:
  // The phases workload with 300 MiB per context and 1 GiB held by "other processes".
  ProcessResult run_phases() {
    std::map<std::string, std::string> env = base_env();
    env.erase("GPUMEMTRACE_OUTPUT");
    env["FAKECUDA_OTHER_PROCESS_MEMORY"] = std::to_string(1024 * kMiB);
    if (!sanitizer_runtime().empty()) env["LD_PRELOAD"] = sanitizer_runtime();
    return cli({"run", "-o", "trace.%p.gmt", "--", workload("workload_phases"), "500"}, env);
  }

  // `gpumemtrace html PATHS -o dir_/report.html`; the page's path.
  std::string html(const std::vector<std::string>& paths) {
    const std::string page = dir_ + "/report.html";
    std::vector<std::string> args = {"html"};
    args.insert(args.end(), paths.begin(), paths.end());
    args.insert(args.end(), {"-o", page});
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return page;
  }

  // The frames of a site, holder, failed call or leak of `trace`: [function, where], leaf first.
  static const nlohmann::json& frames(const nlohmann::json& trace, const nlohmann::json& item) {
    return trace["stacks"].at(item["stack"].get<std::size_t>())["frames"];
  }

  // The object in <script type="application/json" id="gmt-data">.
  static nlohmann::json embedded_data(const std::string& page) {
    const std::string open = "<script type=\"application/json\" id=\"gmt-data\">";
    const std::size_t begin = page.find(open);
    if (begin == std::string::npos) {
      ADD_FAILURE() << "no embedded data in the page";
      return nlohmann::json::object();
    }
    const std::size_t start = begin + open.size();
    const std::size_t end = page.find("</script>", start);
    return nlohmann::json::parse(page.substr(start, end - start));
  }
};

}  // namespace gmt::test
